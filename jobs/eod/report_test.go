package eod

import (
	"cmp"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/workbook"
)

// The workbook's drift and exception rows are read a page at a time
// (reportPage) while the workbook streams them. With several pages of
// each kind, interleaved BLOCKED and IN_DOUBT postings, drifts sharing a
// detection instant and Cases without an SLA, every row comes out exactly
// once, in the sheet's order.
func TestReportStreamsEveryRowOnceInOrder(t *testing.T) {
	ctx := context.Background()
	f, cfg := scaleFixture(t, 200, 6000) // 3,000 postings per bank
	for _, a := range f.banks {
		mustExec(t, a.DB(), `UPDATE AdapterOutbox SET status = CASE id % 3 WHEN 0 THEN 'BLOCKED' WHEN 1 THEN 'IN_DOUBT' ELSE 'APPLIED' END`)
	}
	const drifts, openCases = 2100, 1500
	if err := f.banks[0].DB().Write(ctx, func(tx *store.Tx) error {
		for i := 0; i < drifts; i++ {
			at := clock.Stamp(eodTime.Add(time.Duration(i/7) * time.Second)) // seven drifts per instant
			if _, err := tx.ExecContext(ctx, `INSERT INTO AdapterReconDrift (drift_id, bank_id, account_hash, core_account,
				shadow_balance, core_balance, drift, source, status, detected_at) VALUES (?, '001', ?, ?, 100, 90, 10, 'INQUIRY', 'OPEN', ?)`,
				fmt.Sprintf("D-%05d", (i*7919)%drifts), fmt.Sprintf("001:%d", i), fmt.Sprintf("100-1-%07d", i), at); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.db.Write(ctx, func(tx *store.Tx) error {
		for i := 0; i < openCases; i++ {
			var sla any
			if i%5 != 0 {
				sla = clock.Stamp(eodTime.Add(time.Duration(i%97) * time.Hour))
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO Cases (case_id, state, reason_code, opened_by, sla_deadline, created_at, updated_at)
				VALUES (?, 'OPEN', 'CORE_REFUSED', 'ZC', ?, ?, ?)`, fmt.Sprintf("CASE-%05d", i), sla, clock.Stamp(eodTime), clock.Stamp(eodTime)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := e.BuildReport(ctx, "2026-12-01")
	if err != nil {
		t.Fatal(err)
	}

	seen := map[string]bool{}
	var prev workbook.Drift
	n := 0
	for d, err := range rep.Drifts {
		if err != nil {
			t.Fatal(err)
		}
		if seen[d.DriftID] {
			t.Fatalf("drift %s twice", d.DriftID)
		}
		seen[d.DriftID] = true
		if n > 0 && (d.DetectedAt.Before(prev.DetectedAt) || d.DetectedAt.Equal(prev.DetectedAt) && d.DriftID < prev.DriftID) {
			t.Fatalf("drift %s after %s: out of order", d.DriftID, prev.DriftID)
		}
		prev, n = d, n+1
	}
	if n != drifts {
		t.Fatalf("%d drifts, want %d", n, drifts)
	}

	var postings, caseRows int
	var last workbook.Exception
	for x, err := range rep.Exceptions {
		if err != nil {
			t.Fatal(err)
		}
		switch x.Kind {
		case workbook.KindPosting:
			if caseRows > 0 {
				t.Fatal("a posting after the Cases")
			}
			if postings > 0 && cmp.Or(cmp.Compare(x.BankID, last.BankID), cmp.Compare(x.OutboxID, last.OutboxID)) <= 0 {
				t.Fatalf("posting %s/%d after %s/%d", x.BankID, x.OutboxID, last.BankID, last.OutboxID)
			}
			if want := map[int64]string{0: "BLOCKED", 1: "IN_DOUBT"}[x.OutboxID%3]; x.Status != want {
				t.Fatalf("posting %d is %s, want %s", x.OutboxID, x.Status, want)
			}
			postings++
		case workbook.KindCase:
			if caseRows > 0 && last.Kind == workbook.KindCase &&
				cmp.Or(x.SLA.Compare(last.SLA), cmp.Compare(x.CaseID, last.CaseID)) <= 0 {
				t.Fatalf("case %s after %s: out of order", x.CaseID, last.CaseID)
			}
			caseRows++
		}
		last = x
	}
	if postings != 4000 || caseRows != openCases {
		t.Fatalf("%d postings and %d Cases, want 4000 (2 of 3 of 3,000 per bank) and %d", postings, caseRows, openCases)
	}
}
