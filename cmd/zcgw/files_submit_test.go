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
	// An invalid Zengin file is refused where it is: nothing copied.
	code, out, errs = submit(badPath)
	if code != 1 || !strings.Contains(out, "BAD.txt: refused, not a valid Zengin file: nothing copied, nothing applied") ||
		!strings.Contains(errs, `record 2 line 2 offset 211 col 90 [zengin.data.transfer Amount (振込金額)]: not numeric`) {
		t.Fatalf("bad submit: %d\n%s\n%s", code, out, errs)
	}
	// A valid file the file-drop rules reject (仕向銀行番号 of another
	// bank) is copied, rejected, and gets its report.
	other := bytes.Clone(buf.Bytes())
	copy(other[58:], "0009")
	otherPath := filepath.Join(t.TempDir(), "OTHER.txt")
	must(os.WriteFile(otherPath, other, 0o644))
	code, out, errs = submit(otherPath)
	if code != 1 || !strings.Contains(out, "OTHER.txt: rejected, 1 errors, nothing applied") ||
		!strings.Contains(errs, `record 1 line 1 offset 58 col 59 [zengin.header BankCode (仕向銀行番号)]: invalid value: bytes "0009"`) {
		t.Fatalf("rule-rejected submit: %d\n%s\n%s", code, out, errs)
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

// `zcgw files submit` refuses what is not a bank id, a file name the drop
// cannot process, and a file that is not a Zengin file, before anything
// is created or copied: no folder outside the data folder, nothing in
// the bank's folders, no report quoting the file's bytes.
func TestFilesSubmitRefusesBeforeCopying(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	data := filepath.Join(base, "a", "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(base, "PAY.txt")
	fixture, err := os.ReadFile("../../fixtures/zengin/transfer.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, fixture, 0o644); err != nil {
		t.Fatal(err)
	}
	submit := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(ctx, append([]string{"--data", data, "files", "submit"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	for _, bank := range []string{"../../x", "/tmp/x", "1", "00a", "0001"} {
		code, _, errs := submit(bank, good)
		if code != 2 || !strings.Contains(errs, "is not 3 digits") {
			t.Fatalf("bank %q: exit %d\n%s", bank, code, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(base, "a", "x")); !os.IsNotExist(err) {
		t.Fatalf("../../x created a folder outside the data folder (%v)", err)
	}
	long := filepath.Join(base, strings.Repeat("n", 200)+".txt")
	if err := os.WriteFile(long, fixture, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := submit("001", long); code != 2 || !strings.Contains(errs, "it is 204 bytes, the limit is 160") {
		t.Fatalf("long name: exit %d\n%s", code, errs)
	}
	passwd := filepath.Join(base, "passwd")
	if err := os.WriteFile(passwd, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := submit("001", passwd)
	if code != 1 || !strings.Contains(out, "passwd: refused, not a Zengin file: nothing copied, nothing applied") ||
		!strings.Contains(errs, "record 1 line 1 offset 0 col 1 [zengin]: invalid value: not a Zengin file") || strings.Contains(errs, "root") {
		t.Fatalf("passwd: exit %d\n%s\n%s", code, out, errs)
	}
	bom := filepath.Join(base, "BOM.txt")
	if err := os.WriteFile(bom, append([]byte("\xEF\xBB\xBF"), fixture...), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := submit("001", bom); code != 1 || !strings.Contains(errs, "offset 0 col 1 [zengin]: invalid value: not a Zengin file: it starts with a UTF-8 byte order mark") {
		t.Fatalf("BOM: exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(data, "banks")); !os.IsNotExist(err) {
		t.Fatalf("bank folders were created for refused submits (%v)", err)
	}
}
