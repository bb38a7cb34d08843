package eod

import (
	"context"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

// TestNightlyChainAuditStartsAtItsAnchor runs EOD three nights. Night 1
// audits the whole (clean) log and anchors its last entry. Night 2
// verifies only the entries appended since, finds one of them tampered
// (a CHAIN_TAMPERED Case naming it) and leaves the anchor where it was.
// Night 3 finds the anchored entry itself edited: the anchor break is
// reported and the whole log is verified again.
func TestNightlyChainAuditStartsAtItsAnchor(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	mustExec(t, f.db, `UPDATE FinalityLog SET payload_json = '{}' WHERE txid = 'TX-B'`) // undo the fixture's tampering
	r := f.runner(t, f.cfg)
	run := func(date string) ChainAudit {
		t.Helper()
		if _, err := r.Run(ctx, scheduler.Request{Job: JobName, BusinessDate: date}); err != nil {
			t.Fatal(err)
		}
		a, ok, err := ChainAuditOf(ctx, f.db, date)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		return a
	}
	if a := run("2026-12-01"); a.Breaks != 0 || a.Entries != 3 {
		t.Fatalf("night 1: %+v", a)
	}
	anchors := func() (n, seq int) {
		t.Helper()
		return count(t, f.db, `SELECT COUNT(*) FROM FinalityAuditAnchors`), count(t, f.db, `SELECT COALESCE(MAX(anchor_seq), 0) FROM FinalityAuditAnchors`)
	}
	if n, seq := anchors(); n != 1 || seq != 3 {
		t.Fatalf("anchors after night 1: %d, newest at %d", n, seq)
	}
	log := finality.New(f.clk)
	var appended []finality.Entry
	if err := f.db.Write(ctx, func(tx *store.Tx) error {
		for _, txid := range []string{"TX-A", "TX-D", "TX-D"} {
			e, err := log.Append(ctx, tx, finality.Event{TxID: txid, Type: finality.PaymentInitiated, StateTo: "NEXT"})
			if err != nil {
				return err
			}
			appended = append(appended, e)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mustExec(t, f.db, `UPDATE FinalityLog SET state_to = 'FORGED' WHERE log_id = ?`, appended[1].LogID)
	a := run("2026-12-02")
	if a.Breaks != 1 || a.Entries != 3 || len(a.CaseIDs) != 1 {
		t.Fatalf("night 2: %+v (want only the 3 entries since the anchor, one break)", a)
	}
	if n := count(t, f.db, `SELECT COUNT(*) FROM Cases WHERE case_id = ? AND reason_code = 'CHAIN_TAMPERED' AND evidence_refs LIKE ?`,
		a.CaseIDs[0], "%FinalityLog:"+appended[1].LogID+"%"); n != 1 {
		t.Fatalf("the Case of night 2 does not name the tampered entry %s", appended[1].LogID)
	}
	if n, seq := anchors(); n != 1 || seq != 3 {
		t.Fatalf("anchors after a broken night: %d, newest at %d (want it unmoved at 3)", n, seq)
	}
	mustExec(t, f.db, `UPDATE FinalityLog SET state_to = 'FORGED' WHERE event_seq = 3`)
	a = run("2026-12-03")
	var breaks string
	if err := f.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT breaks_json FROM EodChainAudits WHERE business_date = '2026-12-03'`).Scan(&breaks)
	}); err != nil {
		t.Fatal(err)
	}
	if a.Entries != 6 || !strings.Contains(breaks, string(finality.AnchorMismatch)) {
		t.Fatalf("night 3: %+v %s (want the anchor break and all 6 entries verified)", a, breaks)
	}
}
