package cases

import (
	"context"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/params"
)

// With no fixed SLA (what a node passes), each new case takes PR-CASE-SLA
// as the parameter ledger holds it when the case opens: a change applies
// to the next case of the same Cases, without a new one; a fixed SLA
// ignores the ledger.
func TestOpenCaseTakesPRCaseSLAAtUseTime(t *testing.T) {
	db := openDB(t)
	clk := clock.NewManual(t0)
	c := New(clk, nil, 0)
	ctx := context.Background()
	first, err := c.OpenCaseDB(ctx, db, OpenRequest{ReasonCode: "BANK_TIMEOUT", OpenedBy: "ZC", RelatedTxID: "TX-1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := getCase(t, db, first.CaseID).SLADeadline; got != clock.Stamp(t0.Add(4*time.Hour)) {
		t.Fatalf("default SLA deadline %s", got)
	}
	l := params.NewLedger(db, finality.New(clk), clk, nil, 0)
	if _, err := l.Set(ctx, params.Change{Name: params.CaseSLA, Old: 4 * 3600, New: 30 * 60, EvidenceRef: "CAB-3", Reason: "tighter", By: "ops"}); err != nil {
		t.Fatal(err)
	}
	second, err := c.OpenCaseDB(ctx, db, OpenRequest{ReasonCode: "BANK_TIMEOUT", OpenedBy: "ZC", RelatedTxID: "TX-2"})
	if err != nil {
		t.Fatal(err)
	}
	if got := getCase(t, db, second.CaseID).SLADeadline; got != clock.Stamp(t0.Add(30*time.Minute)) {
		t.Fatalf("SLA deadline after the change %s", got)
	}
	fixed, err := New(clk, nil, time.Hour).OpenCaseDB(ctx, db, OpenRequest{ReasonCode: "BANK_TIMEOUT", OpenedBy: "ZC", RelatedTxID: "TX-3"})
	if err != nil {
		t.Fatal(err)
	}
	if got := getCase(t, db, fixed.CaseID).SLADeadline; got != clock.Stamp(t0.Add(time.Hour)) {
		t.Fatalf("fixed SLA deadline %s", got)
	}
}
