package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/formats/zengin"
)

// zcgw files submit: a good file is accepted (one BULK transfer per
// record), the same file again is a duplicate (exit 1, nothing applied),
// a corrupt file is rejected with its report (exit 1).
func TestFilesSubmit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.OpenCoordinator(ctx, filepath.Join(dir, "zc.db"))
	if err != nil {
		t.Fatal(err)
	}
	reg := participants.New(db, clock.System{})
	for _, id := range []string{"001", "002"} {
		if _, err := reg.Create(ctx, participants.Participant{BankID: id, BankName: "Bank " + id, HLimit: 1e12, IsActive: true}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	var buf bytes.Buffer
	w := zengin.NewWriter(&buf)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.WriteHeader(&zengin.Header{Kind: zengin.KindTransfer, ClientCode: "1", ClientName: "ｶ)ﾃｽﾄ", Date: zengin.Date{Month: 1, Day: 5},
		BankCode: "0001", BranchCode: "001", AccountType: 1, AccountNumber: "1111111"}))
	for i, acct := range []string{"2222222", "3333333", "4444444"} {
		must(w.WriteData(&zengin.TransferData{Account: zengin.Account{BankCode: "0002", BranchCode: "010", AccountType: 1,
			AccountNumber: acct, Name: "ﾀﾅｶ"}, Amount: int64(100 * (i + 1))}))
	}
	must(w.WriteTrailer())
	must(w.WriteEnd())
	must(w.Flush())
	good := filepath.Join(t.TempDir(), "PAY.txt")
	must(os.WriteFile(good, buf.Bytes(), 0o644))

	submit := func(file string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(ctx, []string{"--data", dir, "files", "submit", "001", file}, &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := submit(good)
	if code != 0 || !strings.Contains(out, "PAY.txt: accepted, 3 records (600 yen) submitted as BULK transfers, 0 refused") || errs != "" {
		t.Fatalf("first submit: %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = submit(good)
	if code != 1 || !strings.Contains(out, "duplicate of drop FD-") {
		t.Fatalf("second submit: %d\n%s", code, out)
	}
	bad := append([]byte(nil), buf.Bytes()...)
	copy(bad[122+80:], "000000010X")
	badPath := filepath.Join(t.TempDir(), "BAD.txt")
	must(os.WriteFile(badPath, bad, 0o644))
	code, out, errs = submit(badPath)
	if code != 1 || !strings.Contains(out, "BAD.txt: rejected, 1 errors, nothing applied") ||
		!strings.Contains(errs, `record 2 line 2 offset 211 col 90 [zengin.data.transfer Amount (振込金額)]: not numeric`) {
		t.Fatalf("bad submit: %d\n%s\n%s", code, out, errs)
	}

	db, err = store.OpenCoordinator(ctx, filepath.Join(dir, "zc.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	must(db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM Transactions WHERE lane = 'BULK' AND payer_bank_id = '001'`).Scan(&n)
	}))
	if n != 3 {
		t.Fatalf("transfers = %d, want 3", n)
	}

	var o, e bytes.Buffer
	if code := run(ctx, []string{"--data", dir, "files", "submit", "001"}, &o, &e); code != 2 || !strings.Contains(e.String(), "usage: zcgw files submit") {
		t.Fatalf("usage: %d %s", code, e.String())
	}
}
