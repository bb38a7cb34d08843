package filedrop

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/formats/zengin"
)

// A good file: every data record becomes one BULK transfer in RECEIVED
// with the derived txid, key, accounts, amount and purpose; the file
// moves to processed; no result file until every transfer is decided;
// then the result file carries one 振替結果コード per record.
func TestDropAppliesEveryRecordAndWritesTheResultFile(t *testing.T) {
	f := newFixture(t, nil)
	data := zenginFile(t, zengin.KindTransfer, "0001", recs(5))
	hash := sha(data)
	f.drop("PAY1.txt", data)

	if got, want := f.poll(), (Pass{Taken: 1, Accepted: 1}); got != want {
		t.Fatalf("pass = %+v, want %+v", got, want)
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions WHERE lane = 'BULK' AND state = 'RECEIVED' AND payer_bank_id = '001' AND payee_bank_id = '002' AND purpose = 'BILL'`); n != 5 {
		t.Fatalf("BULK RECEIVED transfers = %d, want 5", n)
	}
	for i := 1; i <= 5; i++ {
		n := i + 1 // file record number (the header is record 1)
		var amount int64
		var payer, payee, key string
		must(t, f.db.Read(f.ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(f.ctx, `SELECT amount_value, payer_account_hash, payee_account_hash, idempotency_key FROM Transactions WHERE txid = ?`,
				TxID(hash, n)).Scan(&amount, &payer, &payee, &key)
		}))
		wantPayee := AccountHash(DefaultAccountSalt, "0002", "002", 1, recs(5)[i-1].acct)
		if amount != int64(1000*i) || payer != AccountHash(DefaultAccountSalt, "0001", "001", 1, "1234567") || payee != wantPayee ||
			key != "PI:001:"+IdempotencyKey(hash, n) {
			t.Fatalf("record %d: amount %d payer %s payee %s key %s", n, amount, payer, payee, key)
		}
	}
	if got := f.files(f.folders().Processed); len(got) != 1 || !strings.HasSuffix(got[0], "_PAY1.txt") {
		t.Fatalf("processed = %v", got)
	}
	if got := f.files(f.folders().Inbound); len(got) != 0 {
		t.Fatalf("inbound still holds %v", got)
	}
	ds := f.drops()
	if len(ds) != 1 || ds[0].Status != StatusAccepted || ds[0].RecordCount != 5 || ds[0].TotalAmount != 15000 || ds[0].SHA256 != hash {
		t.Fatalf("drops = %+v", ds)
	}

	// Undecided: no result yet.
	f.decide(TxID(hash, 2), true, "")
	if got := f.poll(); got.Results != 0 || len(f.files(f.folders().Outbound)) != 0 {
		t.Fatalf("result written before every transfer was decided: %+v", got)
	}
	f.decide(TxID(hash, 3), false, "INSUFFICIENT_FUNDS")
	f.decide(TxID(hash, 4), false, "ACCOUNT_NOT_FOUND")
	f.decide(TxID(hash, 5), true, "")
	f.decide(TxID(hash, 6), false, "CANCEL_BY_PAYER")
	if got := f.poll(); got.Results != 1 {
		t.Fatalf("pass = %+v, want one result", got)
	}
	out := f.files(f.folders().Outbound)
	if len(out) != 1 || out[0] != ds[0].ProcessingName+ResultSuffix {
		t.Fatalf("outbound = %v", out)
	}
	res, err := os.ReadFile(filepath.Join(f.folders().Outbound, out[0]))
	must(t, err)

	// The exact bytes: a canonical 口座振替 result file (CR LF, 122 bytes a
	// record) with header, 5 data records, trailer, end.
	if len(res) != 8*122 {
		t.Fatalf("result file is %d bytes, want %d", len(res), 8*122)
	}
	sum, err := zengin.Validate(bytes.NewReader(res))
	if err != nil {
		t.Fatalf("result file does not validate: %v", err)
	}
	g := sum.Groups[0]
	if !g.Result || g.Header.Kind != zengin.KindDebit || g.DoneCount != 2 || g.DoneAmount != 1000+4000 || g.FailedCount != 3 || g.FailedAmount != 2000+3000+5000 {
		t.Fatalf("result group = %+v", g)
	}
	want := []struct {
		code   byte
		amount string
	}{{'0', "0000001000"}, {'1', "0000002000"}, {'2', "0000003000"}, {'0', "0000004000"}, {'8', "0000005000"}}
	for i, w := range want {
		r := res[(i+1)*122 : (i+1)*122+120]
		if r[0] != '2' || string(r[1:5]) != "0002" || string(r[80:90]) != w.amount ||
			string(r[91:111]) != fmt.Sprintf("%020d", i+2) || r[111] != w.code {
			t.Fatalf("data record %d = %q", i+1, r)
		}
	}
	if h := res[:120]; string(h[:4]) != "1910" || string(h[58:62]) != "0001" || string(h[54:58]) != "1203" {
		t.Fatalf("header = %q", h)
	}
	if tr := string(res[6*122 : 6*122+55]); tr != "8000005000000015000000002000000005000000003000000010000" {
		t.Fatalf("trailer = %q", tr)
	}
	if ds := f.drops(); ds[0].Status != StatusResulted || ds[0].ResultName != out[0] {
		t.Fatalf("drop after result = %+v", ds[0])
	}
	// Written once: another pass writes nothing.
	if got := f.poll(); got != (Pass{}) {
		t.Fatalf("idle pass = %+v", got)
	}
}

// The same content dropped twice (under another name) is recorded as a
// duplicate and not applied.
func TestSameFileDroppedTwiceIsADuplicate(t *testing.T) {
	f := newFixture(t, nil)
	data := zenginFile(t, zengin.KindSalary, "0001", recs(3))
	f.drop("SAL.txt", data)
	f.poll()
	f.clk.Advance(time.Second)
	f.drop("SAL-again.txt", data)
	if got, want := f.poll(), (Pass{Taken: 1, Duplicates: 1}); got != want {
		t.Fatalf("pass = %+v, want %+v", got, want)
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions WHERE purpose = 'SALARY'`); n != 3 {
		t.Fatalf("transfers = %d, want 3", n)
	}
	ds := f.drops()
	if len(ds) != 2 || ds[0].Status != StatusAccepted || ds[1].Status != StatusDuplicate || ds[1].DuplicateOf != ds[0].ID ||
		ds[1].FileName != "SAL-again.txt" || ds[1].SHA256 != ds[0].SHA256 {
		t.Fatalf("drops = %+v", ds)
	}
	if got := f.files(f.folders().Processed); len(got) != 2 {
		t.Fatalf("processed = %v", got)
	}
	// And a third time through the CLI path.
	src := filepath.Join(t.TempDir(), "SAL.txt")
	must(t, os.WriteFile(src, data, 0o644))
	d, err := f.p.SubmitFile(f.ctx, "001", src)
	if err != nil || d.Status != StatusDuplicate || d.DuplicateOf != ds[0].ID {
		t.Fatalf("SubmitFile = %+v, %v", d, err)
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions`); n != 3 {
		t.Fatalf("transfers = %d, want 3", n)
	}
}

// A file still being written is not taken: without a done-marker only
// once its size and mtime have stayed the same for StableFor (clock).
func TestHalfWrittenFileIsTakenOnlyWhenComplete(t *testing.T) {
	f := newFixture(t, nil)
	data := zenginFile(t, zengin.KindTransfer, "0001", recs(6))
	path := filepath.Join(f.folders().Inbound, "SLOW.txt")
	must(t, os.WriteFile(path, data[:300], 0o644))

	if got := f.poll(); got != (Pass{}) {
		t.Fatalf("half-written file taken: %+v", got)
	}
	f.clk.Advance(9 * time.Second)
	if got := f.poll(); got != (Pass{}) {
		t.Fatalf("file taken before StableFor: %+v", got)
	}
	// The writer goes on: the clock of stability restarts.
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = fh.Write(data[300:])
	must(t, err)
	must(t, fh.Close())
	f.clk.Advance(5 * time.Second)
	if got := f.poll(); got != (Pass{}) {
		t.Fatalf("file taken right after it grew: %+v", got)
	}
	f.clk.Advance(9 * time.Second)
	if got := f.poll(); got != (Pass{}) {
		t.Fatalf("file taken before StableFor after growing: %+v", got)
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions`); n != 0 {
		t.Fatalf("%d transfers from a file still being written", n)
	}
	f.clk.Advance(time.Second)
	if got, want := f.poll(), (Pass{Taken: 1, Accepted: 1}); got != want {
		t.Fatalf("pass = %+v, want %+v", got, want)
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions`); n != 6 {
		t.Fatalf("transfers = %d, want 6", n)
	}
}

// With a done-marker the file is taken at once, and the marker removed.
func TestDoneMarkerTakesTheFileAtOnce(t *testing.T) {
	f := newFixture(t, nil)
	data := zenginFile(t, zengin.KindTransfer, "0001", recs(2))
	in := f.folders().Inbound
	must(t, os.WriteFile(filepath.Join(in, "M.txt"), data[:200], 0o644))
	must(t, os.WriteFile(filepath.Join(in, ".M.txt.tmp"), data, 0o644)) // a writer's temp name is never taken
	if got := f.poll(); got != (Pass{}) {
		t.Fatalf("taken without marker: %+v", got)
	}
	must(t, os.WriteFile(filepath.Join(in, "M.txt"), data, 0o644))
	must(t, os.WriteFile(filepath.Join(in, "M.txt.done"), nil, 0o644))
	if got, want := f.poll(), (Pass{Taken: 1, Accepted: 1}); got != want {
		t.Fatalf("pass = %+v, want %+v", got, want)
	}
	if got := f.files(in); len(got) != 0 {
		t.Fatalf("inbound = %v (marker not removed?)", got)
	}
}

// A corrupt file goes to error/ with a report listing every error, and
// nothing from it is applied.
func TestCorruptFileIsRejectedWithAnExactReport(t *testing.T) {
	f := newFixture(t, nil)
	data := zenginFile(t, zengin.KindTransfer, "0001", recs(4))
	copy(data[2*122+80:], "00000X1000") // record 3: 振込金額 not numeric
	data[3*122+42] = 'A'                // record 4: 預金種目 not numeric
	f.drop("BAD.txt", data)
	if got, want := f.poll(), (Pass{Taken: 1, Rejected: 1}); got != want {
		t.Fatalf("pass = %+v, want %+v", got, want)
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions`); n != 0 {
		t.Fatalf("%d transfers applied from a corrupt file", n)
	}
	ds := f.drops()
	if len(ds) != 1 || ds[0].Status != StatusRejected || ds[0].ErrorCount != 3 {
		t.Fatalf("drops = %+v", ds)
	}
	errDir := f.folders().Error
	if got := f.files(errDir); len(got) != 2 || got[0] != ds[0].ProcessingName || got[1] != ds[0].ProcessingName+".errors.txt" {
		t.Fatalf("error folder = %v", got)
	}
	report, err := os.ReadFile(filepath.Join(errDir, ds[0].ReportName))
	must(t, err)
	want := "zcgw file drop: BAD.txt REJECTED, nothing from this file was applied\n" +
		"bank: 001\n" +
		"file: " + ds[0].ProcessingName + "\n" +
		"sha256: " + sha(data) + "\n" +
		"size: 854 bytes, 7 records\n" +
		"errors: 3\n" +
		"record 3 line 3 offset 329 col 86 [zengin.data.transfer Amount (振込金額)]: not numeric: bytes \"00000X1000\": 'X' (0x58) at column 86: 9(10) must be digits only\n" +
		"record 4 line 4 offset 408 col 43 [zengin.data.transfer AccountType (預金種目)]: not numeric: bytes \"A\": 'A' (0x41) at column 43: 9(1) must be digits only\n" +
		"record 4 line 4 offset 408 col 43 [zengin.data.transfer AccountType (預金種目)]: invalid value: bytes \"A\": 預金種目 must be 1, 2, 4 or 9\n"
	if string(report) != want {
		t.Fatalf("report:\n%s\nwant:\n%s", report, want)
	}
	// Dropped again (still corrupt): validated again and rejected again,
	// not taken for a duplicate of a refused file.
	f.clk.Advance(time.Second)
	f.drop("BAD.txt", data)
	if got, want := f.poll(), (Pass{Taken: 1, Rejected: 1}); got != want {
		t.Fatalf("second drop: pass = %+v, want %+v", got, want)
	}
	if n := f.count(`SELECT COUNT(*) FROM FileDrops WHERE status = 'REJECTED'`); n != 2 {
		t.Fatalf("rejected drops = %d", n)
	}
}

// Rule errors (the file is well-formed Zengin, but not acceptable here)
// are reported the same way: a foreign 仕向銀行番号, an unknown payee bank,
// a zero amount.
func TestFileDropRulesAreReportedWithPositions(t *testing.T) {
	f := newFixture(t, nil)
	r := recs(3)
	r[1].bank = "0099"
	r[2].amount = 0
	data := zenginFile(t, zengin.KindTransfer, "0005", r)
	f.drop("RULES.txt", data)
	if got, want := f.poll(), (Pass{Taken: 1, Rejected: 1}); got != want {
		t.Fatalf("pass = %+v, want %+v", got, want)
	}
	ds := f.drops()
	report, err := os.ReadFile(filepath.Join(f.folders().Error, ds[0].ReportName))
	must(t, err)
	lines := strings.Split(strings.TrimSuffix(string(report), "\n"), "\n")[6:]
	want := []string{
		"record 1 line 1 offset 58 col 59 [zengin.header BankCode (仕向銀行番号)]: invalid value: bytes \"0005\": 仕向銀行番号 0005 is not this folder's bank 0001 (001)",
		"record 3 line 3 offset 245 col 2 [zengin.data.transfer BankCode (被仕向銀行番号)]: invalid value: bytes \"0099\": 被仕向銀行番号 0099 is not an active participant",
		"record 4 line 4 offset 446 col 81 [zengin.data.transfer Amount (振込金額)]: invalid value: bytes \"0000000000\": 振込金額 must be at least 1 yen",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("report lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions`); n != 0 {
		t.Fatalf("%d transfers applied", n)
	}
}

// 口座振替 (91) files are refused with a clear report.
func TestDirectDebitFilesAreRefused(t *testing.T) {
	f := newFixture(t, nil)
	data, err := os.ReadFile("../../fixtures/zengin/debit_request.txt")
	must(t, err)
	f.cfg.Banks[0].ZenginCode = string(data[58:62])
	f.p = f.newProcessor()
	f.drop("DEBIT.txt", data)
	if got := f.poll(); got.Rejected != 1 {
		t.Fatalf("pass = %+v", got)
	}
	report, err := os.ReadFile(filepath.Join(f.folders().Error, f.drops()[0].ReportName))
	must(t, err)
	if !strings.Contains(string(report), "record 1 line 1 offset 1 col 2 [zengin.header Kind (種別コード)]: invalid value: bytes \"91\": 口座振替 (91) files are not accepted") {
		t.Fatalf("report:\n%s", report)
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions`); n != 0 {
		t.Fatalf("%d transfers applied", n)
	}
}

// Crash during apply, then resume: the first process dies after 3 chunks
// of 4 records (the 3rd committed but unacknowledged); a restarted
// processor finishes the file from the checkpoint committed with that
// chunk. Every record has exactly one Transactions row.
func TestCrashDuringApplyThenResume(t *testing.T) {
	const n = 25
	f := newFixture(t, nil)
	crash := &crashingCoordinator{Coordinator: f.orch, after: 3}
	f.cfg.Coordinator = crash
	f.p = f.newProcessor()
	data := zenginFile(t, zengin.KindTransfer, "0001", recs(n))
	hash := sha(data)
	f.drop("BIG.txt", data)
	if _, err := f.p.PollOnce(f.ctx); !errors.Is(err, errCrash) {
		t.Fatalf("PollOnce = %v, want the crash", err)
	}
	ds := f.drops()
	if len(ds) != 1 || ds[0].Status != StatusApplying || ds[0].AppliedThrough != 1+12 {
		t.Fatalf("after crash: %+v (want applied_through 13: the header and 3 chunks of 4)", ds)
	}
	if got := f.files(f.folders().Processing); len(got) != 1 {
		t.Fatalf("processing = %v", got)
	}
	before := f.count(`SELECT COUNT(*) FROM Transactions`)
	if before != 12 {
		t.Fatalf("after crash %d transfers, want 12 (3 whole chunks)", before)
	}

	// Restart: a new processor, the real coordinator.
	f.cfg.Coordinator = f.orch
	f.p = f.newProcessor()
	if got, want := f.poll(), (Pass{Accepted: 1}); got != want {
		t.Fatalf("resume pass = %+v, want %+v", got, want)
	}
	if got := f.count(`SELECT COUNT(*) FROM Transactions`); got != n {
		t.Fatalf("transfers = %d, want %d", got, n)
	}
	for i := 2; i <= n+1; i++ {
		if c := f.count(`SELECT COUNT(*) FROM Transactions WHERE idempotency_key = ? AND txid = ?`, "PI:001:"+IdempotencyKey(hash, i), TxID(hash, i)); c != 1 {
			t.Fatalf("record %d has %d Transactions rows", i, c)
		}
	}
	if c := f.count(`SELECT COUNT(*) FROM (SELECT idempotency_key FROM Transactions GROUP BY idempotency_key HAVING COUNT(*) > 1)`); c != 0 {
		t.Fatalf("%d keys with several rows", c)
	}
	if ds := f.drops(); ds[0].Status != StatusAccepted || ds[0].AppliedThrough != n+3 {
		t.Fatalf("after resume: %+v", ds[0])
	}
}

// A record the coordinator refuses at submit (here: above the payer's
// per-transfer limit) is recorded, the rest applied, and the result file
// gives it 9 (その他).
func TestRefusedRecordGetsResultCodeNine(t *testing.T) {
	f := newFixture(t, nil)
	p, err := f.orch.Participants().Get(f.ctx, "001")
	must(t, err)
	limit := int64(2500)
	p.TxAmountLimit = &limit
	_, err = f.orch.Participants().Update(f.ctx, p)
	must(t, err)
	data := zenginFile(t, zengin.KindTransfer, "0001", recs(3)) // 1000, 2000, 3000
	hash := sha(data)
	f.drop("LIM.txt", data)
	if got := f.poll(); got.Accepted != 1 {
		t.Fatalf("pass = %+v", got)
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions`); n != 2 {
		t.Fatalf("transfers = %d, want 2", n)
	}
	if c := f.count(`SELECT COUNT(*) FROM FileDropRefusals WHERE record_no = 4 AND reason_code = 'AMOUNT_EXCEEDS_TX_LIMIT'`); c != 1 {
		t.Fatalf("refusal rows = %d", c)
	}
	f.decide(TxID(hash, 2), true, "")
	f.decide(TxID(hash, 3), true, "")
	if got := f.poll(); got.Results != 1 {
		t.Fatalf("pass = %+v", got)
	}
	res, err := os.ReadFile(filepath.Join(f.folders().Outbound, f.files(f.folders().Outbound)[0]))
	must(t, err)
	if codes := string([]byte{res[122+111], res[244+111], res[366+111]}); codes != "009" {
		t.Fatalf("result codes = %q, want 009", codes)
	}
}

func sha(b []byte) string {
	h, _, err := hashFile(mustTemp(b))
	if err != nil {
		panic(err)
	}
	return h
}

func mustTemp(b []byte) *os.File {
	fh, err := os.CreateTemp("", "fd-*")
	if err != nil {
		panic(err)
	}
	os.Remove(fh.Name())
	if _, err := fh.Write(b); err != nil {
		panic(err)
	}
	_, _ = fh.Seek(0, io.SeekStart)
	return fh
}
