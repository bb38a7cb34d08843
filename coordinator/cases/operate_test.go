package cases

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

func listIDs(t *testing.T, db *store.DB, f Filter) ([]string, int64) {
	t.Helper()
	p := read(t, db, func(tx *store.Tx) (Page, error) { return List(context.Background(), tx, f) })
	var ids []string
	for _, k := range p.Cases {
		ids = append(ids, k.CaseID)
	}
	return ids, p.More
}

func TestListFiltersAndPages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, bk storetest.Backend) {
		testListFiltersAndPages(t, storetest.Open(t, bk, "zc", store.Schema))
	})
}

func testListFiltersAndPages(t *testing.T, db *store.DB) {
	clk := clock.NewManual(t0)
	c := New(clk, nil, 0)
	ctx := context.Background()
	open := func(bank, reason string, sla time.Duration) string {
		o, err := c.OpenCaseDB(ctx, db, OpenRequest{ReasonCode: reason, OpenedBy: "BANK", CausePartyID: bank,
			RelatedTxID: "TX-" + bank + reason + sla.String(), SLADeadline: t0.Add(sla)})
		if err != nil {
			t.Fatal(err)
		}
		return o.CaseID
	}
	a := open("001", "BANK_ERROR", 1*time.Hour)
	b := open("001", "RECON_DRIFT", 2*time.Hour)
	d := open("002", "BANK_ERROR", 3*time.Hour)
	e := open("002", "RECON_DRIFT", 4*time.Hour)
	// A drift names its cause: its own Case, found by its bank's key too.
	o, err := c.OpenCaseDB(ctx, db, OpenRequest{ReasonCode: "RECON_DRIFT", OpenedBy: "BANK", CausePartyID: "002",
		Cause: "h9:+500", SLADeadline: t0.Add(5 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	g := o.CaseID
	if g == e {
		t.Fatal("a named cause joined the Case of its bank and reason")
	}
	if _, err := c.Decide(ctx, db, Decide{CaseID: d, Decision: DecisionResolved, Note: "fixed", Operator: "alice"}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		f    Filter
		want []string
		more int64
	}{
		{"open by default, SLA order", Filter{}, []string{a, b, e, g}, 0},
		{"all states", Filter{State: StateAll}, []string{a, b, d, e, g}, 0},
		{"resolved", Filter{State: StateResolved}, []string{d}, 0},
		{"bank", Filter{Bank: "001"}, []string{a, b}, 0},
		{"cause by reason", Filter{Cause: "RECON_DRIFT"}, []string{b, e, g}, 0},
		{"cause by key", Filter{Cause: "CAUSE:002:RECON_DRIFT"}, []string{e, g}, 0},
		{"cause by a whole named key", Filter{Cause: "CAUSE:002:RECON_DRIFT:h9:+500"}, []string{g}, 0},
		{"cause by a key's start only up to a colon", Filter{Cause: "CAUSE:002:RECON"}, nil, 0},
		{"sla before", Filter{SLABefore: t0.Add(150 * time.Minute)}, []string{a, b}, 0},
		{"first page", Filter{State: StateAll, Limit: 2}, []string{a, b}, 3},
		{"second page", Filter{State: StateAll, Limit: 2, After: b}, []string{d, e}, 1},
		{"page with filter", Filter{Limit: 1, After: a}, []string{b}, 2},
	}
	for _, tc := range cases {
		got, more := listIDs(t, db, tc.f)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") || more != tc.more {
			t.Errorf("%s: got %v (+%d), want %v (+%d)", tc.name, got, more, tc.want, tc.more)
		}
	}
	err = db.Read(ctx, func(tx *store.Tx) error { _, err := List(ctx, tx, Filter{State: "CLOSED"}); return err })
	if domainerr.Code(err) != "INVALID_REQUEST" {
		t.Fatalf("bad state: %v", err)
	}
	err = db.Read(ctx, func(tx *store.Tx) error { _, err := List(ctx, tx, Filter{After: "CASE-nope"}); return err })
	if domainerr.Code(err) != "NOT_FOUND" {
		t.Fatalf("bad after: %v", err)
	}
}

func TestDecideRecordsNoteAndOperator(t *testing.T) {
	db := openDB(t)
	clk := clock.NewManual(t0)
	c := New(clk, nil, 0)
	ctx := context.Background()
	o, err := c.OpenCaseDB(ctx, db, OpenRequest{ReasonCode: "BANK_ERROR", OpenedBy: "BANK", CausePartyID: "001", RelatedTxID: "TX-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decide(ctx, db, Decide{CaseID: o.CaseID, Decision: DecisionResolved, Operator: "alice"}); domainerr.Code(err) != "MISSING_FIELD" {
		t.Fatalf("no note: %v", err)
	}
	clk.Advance(time.Minute)
	got, err := c.Decide(ctx, db, Decide{CaseID: o.CaseID, Decision: DecisionRetry, Operator: "alice", Source: "cli"})
	if err != nil || got.From != StateOpen || got.To != StateInProgress {
		t.Fatalf("retry %+v %v", got, err)
	}
	clk.Advance(time.Minute)
	if _, err := c.Decide(ctx, db, Decide{CaseID: o.CaseID, Decision: DecisionClosed, Note: "duplicate of CASE-x", Operator: "bob"}); err != nil {
		t.Fatal(err)
	}
	k := getCase(t, db, o.CaseID)
	if k.State != StateResolved || k.ResolvedAt != "2026-04-01T02:02:00.000000000Z" {
		t.Fatalf("case %+v", k)
	}
	lines := logLines(t, db, o.CaseID)
	want := []string{
		`CaseInProgress|OPEN|IN_PROGRESS|RETRY|OPS|{"decision":"RETRY","note":"","operator":"alice","source":"cli"}|2026-04-01T02:01:00.000000000Z`,
		`CaseResolved|IN_PROGRESS|RESOLVED|CLOSED|OPS|{"decision":"CLOSED","note":"duplicate of CASE-x","operator":"bob"}|2026-04-01T02:02:00.000000000Z`,
	}
	if len(lines) != 3 || lines[1] != want[0] || lines[2] != want[1] {
		t.Fatalf("log\n%s", strings.Join(lines, "\n"))
	}
	// A resolved case is final.
	_, err = c.Decide(ctx, db, Decide{CaseID: o.CaseID, Decision: DecisionEscalate, Operator: "carol"})
	if domainerr.Code(err) != "STATE_GUARD" || !strings.Contains(err.Error(), "is RESOLVED") {
		t.Fatalf("after resolve: %v", err)
	}
	if _, err := c.Decide(ctx, db, Decide{CaseID: "CASE-missing", Decision: DecisionEscalate, Operator: "carol"}); domainerr.Code(err) != "NOT_FOUND" {
		t.Fatalf("missing: %v", err)
	}
}

// N operators resolve the same case at once: exactly one moves it, every
// other gets STATE_GUARD, and the log has one CaseResolved row.
func TestDecideRaceOneWins(t *testing.T) {
	db := openDB(t)
	c := New(clock.NewManual(t0), nil, 0)
	ctx := context.Background()
	o, err := c.OpenCaseDB(ctx, db, OpenRequest{ReasonCode: "BANK_ERROR", OpenedBy: "BANK", CausePartyID: "001", RelatedTxID: "TX-1"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = c.Decide(ctx, db, Decide{CaseID: o.CaseID, Decision: DecisionResolved, Note: "fixed", Operator: "op"})
		}()
	}
	close(start)
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case domainerr.Code(err) != "STATE_GUARD":
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d decisions won, want 1", wins)
	}
	if got := count(t, db, "SELECT COUNT(*) FROM EntityStateLog WHERE entity_id = ? AND event_type = ?", o.CaseID, EventResolved); got != 1 {
		t.Fatalf("%d CaseResolved rows", got)
	}
}
