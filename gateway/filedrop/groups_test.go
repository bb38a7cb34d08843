package filedrop

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/zcgw/zcgw/formats/zengin"
)

// A multi-group file (総合振込 then 給与) in EBCDIC: each record gets its
// group's purpose, and the result file keeps the groups, the order and
// the encoding.
func TestMultiGroupEBCDICFile(t *testing.T) {
	f := newFixture(t, nil)
	var buf bytes.Buffer
	w := zengin.NewWriter(&buf)
	for gi, kind := range []zengin.Kind{zengin.KindTransfer, zengin.KindSalary} {
		must(t, w.WriteHeader(&zengin.Header{Kind: kind, Encoding: zengin.EBCDIC, ClientCode: "1234567890", ClientName: "ｶ)ｻﾝﾌﾟﾙ",
			Date: zengin.Date{Month: 12, Day: 25}, BankCode: "0001", BranchCode: "001", AccountType: 1, AccountNumber: "1234567"}))
		for i := 0; i < 2; i++ {
			acc := zengin.Account{BankCode: "0002", BranchCode: "003", AccountType: 1, AccountNumber: "000000" + string(rune('1'+gi*2+i)), Name: "ｽｽﾞｷ"}
			if kind == zengin.KindTransfer {
				must(t, w.WriteData(&zengin.TransferData{Account: acc, Amount: int64(100 + gi*10 + i)}))
			} else {
				must(t, w.WriteData(&zengin.PayrollData{Account: acc, Amount: int64(100 + gi*10 + i)}))
			}
		}
		must(t, w.WriteTrailer())
		must(t, w.WriteEnd())
	}
	must(t, w.Flush())
	data := buf.Bytes()
	if data[0] != 0xF1 {
		t.Fatalf("not EBCDIC: % X", data[:4])
	}
	hash := sha(data)
	f.drop("MULTI.dat", data)
	if got := f.poll(); got.Accepted != 1 {
		t.Fatalf("pass = %+v", got)
	}
	// Records: 1 header, 2-3 data, 4 trailer, 5 end, 6 header, 7-8 data.
	for n, purpose := range map[int]string{2: "BILL", 3: "BILL", 7: "SALARY", 8: "SALARY"} {
		if c := f.count(`SELECT COUNT(*) FROM Transactions WHERE txid = ? AND purpose = ?`, TxID(hash, n), purpose); c != 1 {
			t.Fatalf("record %d: no %s transfer", n, purpose)
		}
		f.decide(TxID(hash, n), n != 7, "INSUFFICIENT_FUNDS")
	}
	if got := f.poll(); got.Results != 1 {
		t.Fatalf("pass = %+v", got)
	}
	res, err := os.ReadFile(filepath.Join(f.folders().Outbound, f.files(f.folders().Outbound)[0]))
	must(t, err)
	sum, err := zengin.Validate(bytes.NewReader(res))
	if err != nil {
		t.Fatalf("result does not validate: %v", err)
	}
	if res[0] != 0xF1 || sum.GroupCount != 2 || sum.DataCount != 4 {
		t.Fatalf("result summary %+v", sum)
	}
	var got []string
	for rec, err := range zengin.NewReader(bytes.NewReader(res)).Records() {
		must(t, err)
		if d, ok := rec.(*zengin.DebitData); ok {
			got = append(got, d.CustomerNumber[16:]+":"+d.Result.String())
		}
	}
	want := []string{"0002:" + zengin.ResultDone.String(), "0003:" + zengin.ResultDone.String(),
		"0007:" + zengin.ResultNoFunds.String(), "0008:" + zengin.ResultDone.String()}
	if len(got) != 4 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Fatalf("result records %v, want %v", got, want)
	}
	if g := sum.Groups[1]; g.DoneCount != 1 || g.FailedCount != 1 || g.FailedAmount != 110 {
		t.Fatalf("second group %+v", g)
	}
}

// Two different files under the same name at the same clock instant get
// their own processing names and drops: neither replaces the other.
func TestSameNameSameInstantGetsItsOwnDrop(t *testing.T) {
	f := newFixture(t, nil)
	dir := t.TempDir()
	var ids []string
	for i, n := range []int{2, 3} {
		src := filepath.Join(dir, "SAME.txt")
		must(t, os.WriteFile(src, zenginFile(t, zengin.KindTransfer, "0001", recs(n)), 0o644))
		d, err := f.p.SubmitFile(f.ctx, "001", src)
		if err != nil || d.Status != StatusAccepted || d.RecordCount != int64(n) {
			t.Fatalf("submit %d: %+v, %v", i, d, err)
		}
		ids = append(ids, d.ProcessingName)
	}
	if ids[0] != "20261202T010000.000000000Z_SAME.txt" || ids[1] != "20261202T010000.000000000Z-1_SAME.txt" {
		t.Fatalf("processing names %v", ids)
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions`); n != 5 {
		t.Fatalf("transfers = %d, want 5", n)
	}
	if got := f.files(f.folders().Processed); len(got) != 2 {
		t.Fatalf("processed = %v", got)
	}
}
