package eod

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/zcgw/zcgw/coordinator/cases"
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
