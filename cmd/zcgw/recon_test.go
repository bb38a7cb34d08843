package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/eod"
	"github.com/zcgw/zcgw/jobs/ledger"
	"github.com/zcgw/zcgw/jobs/workbook"
	"github.com/zcgw/zcgw/outbox"
)

// reconRefusingCore refuses every posting (an account closed at the core).
type reconRefusingCore struct{}

func (reconRefusingCore) Apply(context.Context, outbox.Posting) (outbox.ApplyResult, error) {
	return outbox.ApplyResult{}, &outbox.RefusedError{ReasonCode: "ACCOUNT_NOT_FOUND", Message: "NOACCT"}
}
func (reconRefusingCore) Lookup(context.Context, string) (outbox.LookupResult, error) {
	return outbox.LookupResult{State: outbox.LookupRefused, ReasonCode: "ACCOUNT_NOT_FOUND"}, nil
}

// TestReconApplyCommand writes a workbook with one BLOCKED posting, marks
// it RETRY as a reviewer would, and runs `zcgw recon apply` twice.
func TestReconApplyCommand(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	zc, err := store.OpenCoordinator(ctx, ledger.Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := eod.EnsureSchema(ctx, zc); err != nil {
		t.Fatal(err)
	}
	if err := zc.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO EodBusinessDates (business_date, closed_at, run_id, transactions, amount_total, states_json)
			VALUES ('2026-12-01', '2026-12-01T14:30:00Z', 1, 0, 0, '{}')`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	adb, err := store.Open(ctx, filepath.Join(dir, "adapter-001.db"), adapter.Schema)
	if err != nil {
		t.Fatal(err)
	}
	ob, _ := outbox.New(outbox.Config{DB: adb, Core: reconRefusingCore{}})
	var id int64
	if err := adb.Write(ctx, func(tx *store.Tx) error {
		id, err = ob.Enqueue(ctx, tx, outbox.Posting{Ref: "REF-1", TxID: "TX-1", Bank: "001", Account: "100-1-0000001", Kind: outbox.Credit, Amount: 900})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if r, err := ob.Drain(ctx, 1); err != nil || r.Blocked != 1 {
		t.Fatalf("drain %+v %v", r, err)
	}
	e, _ := ob.Get(ctx, id)
	wbPath := workbook.Path(dir, "2026-12-01")
	if _, err := eod.IssueWorkbook(ctx, zc, dir, wbPath, workbook.Report{BusinessDate: "2026-12-01", GeneratedAt: time.Now(),
		Exceptions: func(yield func(workbook.Exception, error) bool) {
			yield(workbook.Exception{Kind: workbook.KindPosting, BankID: "001", OutboxID: id, Ref: "REF-1", TxID: "TX-1",
				Account: "100-1-0000001", Amount: 900, Status: string(e.Status), ReasonCode: e.ReasonCode}, nil)
		}}, clock.System{}, nil); err != nil {
		t.Fatal(err)
	}
	zc.Close()
	f, _ := excelize.OpenFile(wbPath)
	_ = f.SetCellValue(workbook.SheetExceptions, "N2", "RETRY")
	reviewed := filepath.Join(dir, "reviewed.xlsx")
	if err := f.SaveAs(reviewed); err != nil {
		t.Fatal(err)
	}
	f.Close()

	runIt := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(ctx, append([]string{"--data", dir, "recon"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, stderr := runIt("apply", reviewed, "--date", "2026-12-02", "--by", "ops"); code != 1 || !strings.Contains(stderr, "issued no workbook for business date 2026-12-02") {
		t.Fatalf("wrong date: %d %s", code, stderr)
	}
	code, out, stderr := runIt("apply", reviewed, "--by", "ops")
	if code != 0 || !strings.Contains(out, "1 applied") || !strings.Contains(out, "requeued") {
		t.Fatalf("apply: %d %q %q", code, out, stderr)
	}
	if got, _ := ob.Get(ctx, id); got.Status != outbox.Pending {
		t.Fatalf("posting is %s after RETRY", got.Status)
	}
	code, out, _ = runIt("apply", reviewed, "--by", "ops")
	if code != 0 || !strings.Contains(out, "nothing to do") {
		t.Fatalf("second apply: %d %q", code, out)
	}
	adb.Close()
}
