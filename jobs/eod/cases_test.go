package eod

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/scheduler"
	"github.com/zcgw/zcgw/jobs/workbook"
	"github.com/zcgw/zcgw/outbox"
)

// exceptionRows reads a workbook's Exceptions sheet as row key -> row
// number, and the Case id column of each row.
func exceptionRowsOf(t *testing.T, path string) (map[string]int, []string) {
	t.Helper()
	wb, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer wb.Close()
	rows, err := wb.GetRows(workbook.SheetExceptions)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]int{}
	var caseIDs []string
	for i, r := range rows[1:] {
		if len(r) > 10 {
			keys[r[0]] = i + 2
			caseIDs = append(caseIDs, r[10])
		}
	}
	return keys, caseIDs
}

// TestCaseClosedFromWorkbookDisappearsFromNext drives EOD for a day, has a
// reviewer write off the BLOCKED posting and mark the chain-tamper Case
// RESOLVED with a note, applies the workbook, runs EOD for the next day,
// and checks that the next workbook lists neither the posting nor the two
// Cases closed, and still lists the drift Case nobody decided.
func TestCaseClosedFromWorkbookDisappearsFromNext(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	r := f.runner(t, f.cfg)
	if _, err := r.Run(ctx, scheduler.Request{Job: JobName, BusinessDate: day}); err != nil {
		t.Fatal(err)
	}
	path := workbook.Path(f.dir, day)
	keys, _ := exceptionRowsOf(t, path)
	wb, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := wb.GetRows(workbook.SheetExceptions)
	var blockedRow, tamperRow int
	var postingCase, tamperCase, driftCase string
	for i, row := range rows {
		switch {
		case len(row) > 10 && row[1] == "POSTING" && row[8] == "BLOCKED":
			blockedRow, postingCase = i+1, row[10]
		case len(row) > 10 && row[1] == "CASE" && row[9] == ChainBreakReason:
			tamperRow, tamperCase = i+1, row[10]
		case len(row) > 10 && row[1] == "CASE" && row[9] == "RECON_DRIFT":
			driftCase = row[10]
		}
	}
	if blockedRow == 0 || tamperRow == 0 || postingCase == "" || driftCase == "" {
		t.Fatalf("rows not found in %v", rows)
	}
	if _, ok := keys["CASE:"+postingCase]; !ok {
		t.Fatalf("the BLOCKED posting's Case %s is not listed in %v", postingCase, keys)
	}
	_ = wb.SetCellValue(workbook.SheetExceptions, fmt.Sprintf("N%d", blockedRow), "WRITE_OFF")
	_ = wb.SetCellValue(workbook.SheetExceptions, fmt.Sprintf("O%d", blockedRow), "account closed at the core")
	_ = wb.SetCellValue(workbook.SheetExceptions, fmt.Sprintf("N%d", tamperRow), "RESOLVED")
	_ = wb.SetCellValue(workbook.SheetExceptions, fmt.Sprintf("O%d", tamperRow), "restored TX-B from the replica")
	reviewed := filepath.Join(f.dir, "reviewed.xlsx")
	if err := wb.SaveAs(reviewed); err != nil {
		t.Fatal(err)
	}
	wb.Close()
	cfg := ApplyConfig{DB: f.db, DataDir: f.dir, Outboxes: map[string]*outbox.Outbox{"001": f.banks[0].Outbox(), "002": f.banks[1].Outbox()},
		Cases: cases.New(f.clk, nil, 0), Operator: "ops-tanaka", Clock: f.clk}
	rep, err := ApplyWorkbook(ctx, cfg, reviewed, day)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Count(OutcomeApplied) != 2 {
		t.Fatalf("apply %+v", rep)
	}
	for _, c := range []struct{ id, decision, note string }{
		{postingCase, cases.DecisionWriteOff, "recon workbook 2026-12-01 row " + fmt.Sprint(blockedRow) + ": account closed at the core"},
		{tamperCase, cases.DecisionResolved, "restored TX-B from the replica"},
	} {
		if n := count(t, f.db, `SELECT COUNT(*) FROM Cases WHERE case_id = ? AND state = 'RESOLVED' AND resolved_at IS NOT NULL`, c.id); n != 1 {
			t.Errorf("case %s not RESOLVED", c.id)
		}
		if n := count(t, f.db, `SELECT COUNT(*) FROM EntityStateLog WHERE entity_id = ? AND event_type = 'CaseResolved' AND reason_code = ?
			AND json_extract(payload_json, '$.note') = ? AND json_extract(payload_json, '$.operator') = 'ops-tanaka'`, c.id, c.decision, c.note); n != 1 {
			t.Errorf("case %s: %d CaseResolved rows with decision %s and note %q", c.id, n, c.decision, c.note)
		}
	}

	// The next business day's EOD: only what is still open.
	next := "2026-12-02"
	f.clk.Set(eodTime.AddDate(0, 0, 1))
	if _, err := r.Run(ctx, scheduler.Request{Job: JobName, BusinessDate: next}); err != nil {
		t.Fatal(err)
	}
	keys2, caseIDs := exceptionRowsOf(t, workbook.Path(f.dir, next))
	for _, gone := range []string{"CASE:" + postingCase, "CASE:" + tamperCase} {
		if _, ok := keys2[gone]; ok {
			t.Errorf("%s is still in the next workbook", gone)
		}
	}
	for k := range keys2 {
		if strings.HasPrefix(k, "POSTING:") {
			t.Errorf("posting row %s is still in the next workbook", k)
		}
	}
	if slices.Contains(caseIDs, postingCase) || slices.Contains(caseIDs, tamperCase) {
		t.Errorf("a closed Case is still referenced: %v", caseIDs)
	}
	if _, ok := keys2["CASE:"+driftCase]; !ok {
		t.Errorf("the undecided drift Case %s is missing from the next workbook %v", driftCase, keys2)
	}
}

// TestDriftSettledByAdjustingPosting ends bank 001's drift (the core holds
// ¥1,500 more than the shadow after an out-of-band change) with an
// adjusting posting: the core balance comes back once, even when the
// operator runs the resolution twice, and the drift row and its Case are
// both resolved with the note.
func TestDriftSettledByAdjustingPosting(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	if _, err := f.runner(t, f.cfg).Run(ctx, scheduler.Request{Job: JobName, BusinessDate: day}); err != nil {
		t.Fatal(err)
	}
	a := f.banks[0]
	core := directCore{f.cores["001"]}
	ds, err := a.Drifts(ctx, "OPEN")
	if err != nil || len(ds) != 1 || ds[0].Drift != 1500 || ds[0].CaseID == "" {
		t.Fatalf("drifts %+v %v", ds, err)
	}
	caseID, acct := ds[0].CaseID, ds[0].CoreAccount
	before, _ := core.Balance(ctx, acct)
	cs := cases.New(f.clk, nil, 0)

	// Closing the drift Case without its drift is refused.
	if _, err := cs.Decide(ctx, f.db, cases.Decide{CaseID: caseID, Decision: cases.DecisionResolved, Note: "n", Operator: "o"}); domainerr.Code(err) != "INVALID_REQUEST" {
		t.Fatalf("plain resolve of a drift Case: %v", err)
	}
	for i := range 2 {
		got, err := SettleDriftCase(ctx, f.db, cs, a, caseID, adapter.DriftAdjust, "ops-sato", "teller keyed the fee twice", "test")
		if err != nil {
			t.Fatalf("settle %d: %v", i, err)
		}
		if (i == 1) != got.Already {
			t.Fatalf("settle %d: already=%v", i, got.Already)
		}
	}
	if r, err := a.Outbox().Drain(ctx, 10); err != nil || r.Applied != 1 {
		t.Fatalf("drain %+v %v", r, err)
	}
	if r, err := a.Outbox().Drain(ctx, 10); err != nil || r.Applied != 0 {
		t.Fatalf("second drain %+v %v", r, err)
	}
	after, _ := core.Balance(ctx, acct)
	if before.Ledger-after.Ledger != 1500 {
		t.Fatalf("core balance %d -> %d, want it down by 1500 once", before.Ledger, after.Ledger)
	}
	adj, _ := a.Outbox().List(ctx, outbox.Filter{TxID: adapter.DriftTxID(ds[0].DriftID)})
	if len(adj) != 1 || adj[0].Posting.Kind != outbox.Debit || adj[0].Posting.Amount != 1500 || adj[0].Status != outbox.Applied {
		t.Fatalf("adjusting postings %+v", adj)
	}
	// The core message's txid field (formats/coremsg Header.TxID) is 32 bytes.
	if len(adj[0].Posting.TxID) > 32 {
		t.Fatalf("adjusting posting's txid %q does not fit the core message", adj[0].Posting.TxID)
	}
	// Reconciled again: the account matches, no new drift.
	if r, err := a.ReconcileAccount(ctx, ds[0].AccountHash); err != nil || r.Status != adapter.ReconMatched {
		t.Fatalf("reconcile after: %+v %v", r, err)
	}
	if open, _ := a.Drifts(ctx, "OPEN"); len(open) != 0 {
		t.Fatalf("open drifts %+v", open)
	}
	res, _ := a.Drifts(ctx, "RESOLVED")
	if len(res) != 1 || res[0].Resolution != "ADJUST: teller keyed the fee twice (by ops-sato)" {
		t.Fatalf("resolved drift %+v", res)
	}
	if n := count(t, f.db, `SELECT COUNT(*) FROM Cases WHERE case_id = ? AND state = 'RESOLVED'`, caseID); n != 1 {
		t.Fatalf("case not resolved")
	}
	if n := count(t, f.db, `SELECT COUNT(*) FROM EntityStateLog WHERE entity_id = ? AND reason_code = 'DRIFT_ADJUSTED'
		AND json_extract(payload_json, '$.note') LIKE 'teller keyed the fee twice (drift DRIFT-% of +1500 on 100-1-0000001, adjusting posting %)'`, caseID); n != 1 {
		t.Fatalf("%d DRIFT_ADJUSTED log rows", n)
	}
	var audits int
	_ = a.DB().Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM AdapterAuditLog WHERE event = 'DRIFT_RESOLVED'`).Scan(&audits)
	})
	if audits != 1 {
		t.Fatalf("%d DRIFT_RESOLVED audit rows", audits)
	}
}

// A WRITE_OFF decision on a posting someone requeued meanwhile is STALE
// and leaves its Case open: the Case follows what happened to the posting.
func TestStaleWriteOffLeavesTheCaseOpen(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	if _, err := f.runner(t, f.cfg).Run(ctx, scheduler.Request{Job: JobName, BusinessDate: day}); err != nil {
		t.Fatal(err)
	}
	path := workbook.Path(f.dir, day)
	wb, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := wb.GetRows(workbook.SheetExceptions)
	var row int
	var caseID, outboxID string
	for i, r := range rows {
		if len(r) > 10 && r[1] == "POSTING" && r[8] == "BLOCKED" {
			row, outboxID, caseID = i+1, r[3], r[10]
		}
	}
	if row == 0 || caseID == "" {
		t.Fatalf("no BLOCKED posting row in %v", rows)
	}
	_ = wb.SetCellValue(workbook.SheetExceptions, fmt.Sprintf("N%d", row), "WRITE_OFF")
	reviewed := filepath.Join(f.dir, "reviewed.xlsx")
	if err := wb.SaveAs(reviewed); err != nil {
		t.Fatal(err)
	}
	wb.Close()
	var id int64
	fmt.Sscan(outboxID, &id)
	if err := f.banks[0].Outbox().Requeue(ctx, id, "ops-kato", "customer funded the account"); err != nil {
		t.Fatal(err)
	}
	cfg := ApplyConfig{DB: f.db, DataDir: f.dir, Outboxes: map[string]*outbox.Outbox{"001": f.banks[0].Outbox(), "002": f.banks[1].Outbox()},
		Cases: cases.New(f.clk, nil, 0), Operator: "ops-tanaka", Clock: f.clk}
	rep, err := ApplyWorkbook(ctx, cfg, reviewed, day)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Count(OutcomeStale) != 1 || !strings.Contains(rep.Results[0].Detail, "case "+caseID+" unchanged: the posting is PENDING") {
		t.Fatalf("apply %+v", rep)
	}
	if n := count(t, f.db, `SELECT COUNT(*) FROM Cases WHERE case_id = ? AND state = 'OPEN'`, caseID); n != 1 {
		t.Fatalf("case %s is no longer OPEN", caseID)
	}
}
