package cases

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/entitystate"
	"github.com/zcgw/zcgw/coordinator/store"
)

var t0 = time.Date(2026, 4, 1, 2, 0, 0, 0, time.UTC)

func openDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.OpenCoordinator(context.Background(), filepath.Join(t.TempDir(), "zc.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func read[T any](t *testing.T, db *store.DB, f func(tx *store.Tx) (T, error)) T {
	t.Helper()
	var out T
	if err := db.Read(context.Background(), func(tx *store.Tx) error {
		var err error
		out, err = f(tx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func getCase(t *testing.T, db *store.DB, id string) Case {
	return read(t, db, func(tx *store.Tx) (Case, error) { return Get(context.Background(), tx, id) })
}

func links(t *testing.T, db *store.DB, id string) []string {
	return read(t, db, func(tx *store.Tx) ([]string, error) { return LinkedKeys(context.Background(), tx, id) })
}

// logLines renders a case's EntityStateLog as event|from|to|reason|actor|payload|at.
func logLines(t *testing.T, db *store.DB, id string) []string {
	h := read(t, db, func(tx *store.Tx) ([]entitystate.Entry, error) {
		return entitystate.History(context.Background(), tx, EntityType, id)
	})
	var out []string
	for _, e := range h {
		out = append(out, strings.Join([]string{e.EventType, e.From, e.To, e.ReasonCode, e.Actor, e.Payload, e.OccurredAt}, "|"))
	}
	return out
}

func count(t *testing.T, db *store.DB, q string, args ...any) int {
	return read(t, db, func(tx *store.Tx) (int, error) {
		var n int
		err := tx.QueryRowContext(context.Background(), q, args...).Scan(&n)
		return n, err
	})
}

func TestOpenCaseAggregatesByCauseKey(t *testing.T) {
	db := openDB(t)
	clk := clock.NewManual(t0)
	c := New(clk, nil, 0)
	ctx := context.Background()
	req := OpenRequest{ReasonCode: "BANK_TIMEOUT", OpenedBy: "ZC", CausePartyID: "002", RelatedTxID: "TX-1",
		Description: "payee bank did not answer", EvidenceRefs: []string{"FL-1"}}

	first, err := c.OpenCaseDB(ctx, db, req)
	if err != nil || !first.Created || !first.Linked || first.OccurrenceCount != 1 || first.State != StateOpen {
		t.Fatalf("first %+v %v", first, err)
	}
	got := getCase(t, db, first.CaseID)
	want := Case{CaseID: first.CaseID, RelatedTxID: "TX-1", State: "OPEN", ReasonCode: "BANK_TIMEOUT",
		Description: "payee bank did not answer", OpenedBy: "ZC", SLADeadline: "2026-04-01T06:00:00.000000000Z",
		EvidenceRefs: `["FL-1"]`, CauseKey: "CAUSE:002:BANK_TIMEOUT", CausePartyID: "002", OccurrenceCount: 1,
		LastOccurredAt: "2026-04-01T02:00:00.000000000Z", CreatedAt: "2026-04-01T02:00:00.000000000Z", UpdatedAt: "2026-04-01T02:00:00.000000000Z"}
	if got != want {
		t.Fatalf("row\n got %+v\nwant %+v", got, want)
	}

	// The same transaction detected again: same case, count unchanged, no log.
	clk.Advance(time.Minute)
	again, err := c.OpenCaseDB(ctx, db, req)
	if err != nil || again.CaseID != first.CaseID || again.Created || again.Linked || again.OccurrenceCount != 1 {
		t.Fatalf("re-detection %+v %v", again, err)
	}
	// Another transaction with the same cause joins the case.
	clk.Advance(time.Minute)
	req2 := req
	req2.RelatedTxID = "TX-2"
	second, err := c.OpenCaseDB(ctx, db, req2)
	if err != nil || second.CaseID != first.CaseID || !second.Linked || second.OccurrenceCount != 2 {
		t.Fatalf("second tx %+v %v", second, err)
	}
	// A gtid links by gtid.
	req3 := OpenRequest{ReasonCode: "BANK_TIMEOUT", OpenedBy: "ZC", CausePartyID: "002", RelatedGtID: "GT-9"}
	if o, err := c.OpenCaseDB(ctx, db, req3); err != nil || o.CaseID != first.CaseID || o.OccurrenceCount != 3 {
		t.Fatalf("gtid %+v %v", o, err)
	}
	got = getCase(t, db, first.CaseID)
	if got.OccurrenceCount != 3 || got.LastOccurredAt != "2026-04-01T02:02:00.000000000Z" || got.UpdatedAt != "2026-04-01T02:02:00.000000000Z" {
		t.Fatalf("after aggregation %+v", got)
	}
	if l := links(t, db, first.CaseID); strings.Join(l, ",") != "TX-1,TX-2,GT-9" {
		t.Fatalf("links %v", l)
	}
	wantLog := []string{
		`CaseOpened||OPEN|BANK_TIMEOUT|ZC|{"cause_key":"CAUSE:002:BANK_TIMEOUT","link_key":"TX-1","sla_deadline":"2026-04-01T06:00:00.000000000Z"}|2026-04-01T02:00:00.000000000Z`,
		`CaseAggregated|OPEN|OPEN|BANK_TIMEOUT|ZC|{"link_key":"TX-2","occurrence_count":2}|2026-04-01T02:02:00.000000000Z`,
		`CaseAggregated|OPEN|OPEN|BANK_TIMEOUT|ZC|{"link_key":"GT-9","occurrence_count":3}|2026-04-01T02:02:00.000000000Z`,
	}
	if l := logLines(t, db, first.CaseID); strings.Join(l, "\n") != strings.Join(wantLog, "\n") {
		t.Fatalf("log\n%s\nwant\n%s", strings.Join(l, "\n"), strings.Join(wantLog, "\n"))
	}

	// A different cause, a detection-path cause, and no cause: separate cases.
	other, _ := c.OpenCaseDB(ctx, db, OpenRequest{ReasonCode: "BANK_TIMEOUT", OpenedBy: "ZC", CausePartyID: "003", RelatedTxID: "TX-1"})
	path, _ := c.OpenCaseDB(ctx, db, OpenRequest{ReasonCode: "BANK_TIMEOUT", OpenedBy: "ZC", DetectionPath: "sweep.t2", RelatedTxID: "TX-5"})
	lone1, _ := c.OpenCaseDB(ctx, db, OpenRequest{ReasonCode: "BANK_TIMEOUT", OpenedBy: "OPS", RelatedTxID: "TX-6"})
	lone2, _ := c.OpenCaseDB(ctx, db, OpenRequest{ReasonCode: "BANK_TIMEOUT", OpenedBy: "OPS", RelatedTxID: "TX-7"})
	ids := map[string]bool{first.CaseID: true, other.CaseID: true, path.CaseID: true, lone1.CaseID: true, lone2.CaseID: true}
	if len(ids) != 5 || !lone1.Created || !lone2.Created {
		t.Fatalf("want 5 distinct cases: %v", ids)
	}
	if k := getCase(t, db, path.CaseID); k.CauseKey != "CAUSE:sweep.t2:BANK_TIMEOUT" {
		t.Fatalf("path cause key %q", k.CauseKey)
	}
	if n := count(t, db, "SELECT COUNT(*) FROM Cases WHERE cause_key IS NULL"); n != 2 {
		t.Fatalf("%d cases without cause key", n)
	}

	// A resolved case no longer absorbs: the next detection opens a new one.
	if err := db.Write(ctx, func(tx *store.Tx) error {
		_, err := c.SetState(ctx, tx, first.CaseID, StateResolved, "OPS", "FIXED")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	req4 := req
	req4.RelatedTxID = "TX-8"
	if o, err := c.OpenCaseDB(ctx, db, req4); err != nil || !o.Created || o.CaseID == first.CaseID {
		t.Fatalf("after resolve %+v %v", o, err)
	}
}

func TestOpenCaseRefusals(t *testing.T) {
	db := openDB(t)
	c := New(clock.NewManual(t0), nil, time.Hour)
	ctx := context.Background()
	if _, err := c.OpenCaseDB(ctx, db, OpenRequest{OpenedBy: "ZC"}); domainerr.Code(err) != "MISSING_FIELD" {
		t.Fatalf("no reason: %v", err)
	}
	if _, err := c.OpenCaseDB(ctx, db, OpenRequest{ReasonCode: "X", OpenedBy: "SOMEONE"}); domainerr.Code(err) != "INVALID_REQUEST" {
		t.Fatalf("bad opener: %v", err)
	}
	if n := count(t, db, "SELECT COUNT(*) FROM Cases"); n != 0 {
		t.Fatalf("%d cases written", n)
	}
}

// N goroutines detect the same cause at once: one case; its count is the
// number of distinct transactions, not of detections.
func TestConcurrentOpenCaseOneCase(t *testing.T) {
	db := openDB(t)
	c := New(clock.NewManual(t0), nil, 0)
	ctx := context.Background()
	const n = 24
	const distinct = 8 // each transaction detected 3 times
	var wg sync.WaitGroup
	start := make(chan struct{})
	results := make([]Opened, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = c.OpenCaseDB(ctx, db, OpenRequest{ReasonCode: "IGS_ERROR", OpenedBy: "ZC",
				CausePartyID: "IGS", RelatedTxID: fmt.Sprintf("TX-%d", i%distinct)})
		}()
	}
	close(start)
	wg.Wait()
	created, linked := 0, 0
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if results[i].Created {
			created++
		}
		if results[i].Linked {
			linked++
		}
	}
	if created != 1 || linked != distinct {
		t.Fatalf("created %d (want 1), linked %d (want %d)", created, linked, distinct)
	}
	if k := count(t, db, "SELECT COUNT(*) FROM Cases"); k != 1 {
		t.Fatalf("%d cases", k)
	}
	var id string
	db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, "SELECT case_id FROM Cases").Scan(&id)
	})
	if k := getCase(t, db, id); k.OccurrenceCount != distinct {
		t.Fatalf("occurrence_count %d, want %d", k.OccurrenceCount, distinct)
	}
	if k := count(t, db, "SELECT COUNT(*) FROM CaseRelatedTransactions WHERE case_id = ?", id); k != distinct {
		t.Fatalf("%d links", k)
	}
	// One CaseOpened plus one CaseAggregated per additional transaction.
	if k := count(t, db, "SELECT COUNT(*) FROM EntityStateLog WHERE entity_id = ?", id); k != distinct {
		t.Fatalf("%d log rows, want %d", k, distinct)
	}
}

func TestSetStateMachine(t *testing.T) {
	db := openDB(t)
	clk := clock.NewManual(t0)
	c := New(clk, nil, 0)
	ctx := context.Background()
	o, err := c.OpenCaseDB(ctx, db, OpenRequest{ReasonCode: "NAME_MISMATCH", OpenedBy: "BANK", RelatedTxID: "TX-1"})
	if err != nil {
		t.Fatal(err)
	}
	set := func(state string) (bool, error) {
		clk.Advance(time.Minute)
		var ok bool
		err := db.Write(ctx, func(tx *store.Tx) error {
			var err error
			ok, err = c.SetState(ctx, tx, o.CaseID, state, "OPS", "")
			return err
		})
		return ok, err
	}
	steps := []struct {
		state string
		ok    bool
		code  string
	}{
		{StateInProgress, true, ""},
		{StateInProgress, false, ""}, // no-op
		{StateEscalated, true, ""},
		{StateInProgress, true, ""},
		{StateResolved, true, ""},
		{StateEscalated, false, "STATE_GUARD"}, // resolved is terminal
		{StateOpen, false, "INVALID_STATE"},
	}
	for i, s := range steps {
		ok, err := set(s.state)
		if ok != s.ok || domainerr.Code(err) != s.code {
			t.Fatalf("step %d -> %s: %v %v", i, s.state, ok, err)
		}
	}
	k := getCase(t, db, o.CaseID)
	if k.State != StateResolved || k.EscalatedAt != "2026-04-01T02:03:00.000000000Z" || k.ResolvedAt != "2026-04-01T02:05:00.000000000Z" || k.UpdatedAt != "2026-04-01T02:05:00.000000000Z" {
		t.Fatalf("row %+v", k)
	}
	var events []string
	for _, l := range logLines(t, db, o.CaseID) {
		f := strings.Split(l, "|")
		events = append(events, f[0]+":"+f[1]+">"+f[2])
	}
	if strings.Join(events, " ") != "CaseOpened:>OPEN CaseInProgress:OPEN>IN_PROGRESS CaseEscalated:IN_PROGRESS>ESCALATED CaseInProgress:ESCALATED>IN_PROGRESS CaseResolved:IN_PROGRESS>RESOLVED" {
		t.Fatalf("events %v", events)
	}
}

func TestSweepSLAEscalatesOverdue(t *testing.T) {
	db := openDB(t)
	clk := clock.NewManual(t0)
	c := New(clk, nil, time.Hour)
	ctx := context.Background()
	open := func(tx string, deadline time.Time) string {
		o, err := c.OpenCaseDB(ctx, db, OpenRequest{ReasonCode: "BANK_ERROR", OpenedBy: "ZC", RelatedTxID: tx, SLADeadline: deadline})
		if err != nil {
			t.Fatal(err)
		}
		return o.CaseID
	}
	now := t0.Add(2 * time.Hour).Add(500 * time.Millisecond)
	overdue := open("TX-A", time.Time{})                 // default: t0 + 1h
	edge := open("TX-B", now.Add(-time.Millisecond))     // same second, just passed
	exact := open("TX-C", now)                           // deadline == now: not yet exceeded
	later := open("TX-D", now.Add(300*time.Millisecond)) // same second, future
	inProgress := open("TX-E", now.Add(-time.Minute))    // overdue while IN_PROGRESS
	resolved := open("TX-F", now.Add(-time.Minute))      // overdue but resolved
	if err := db.Write(ctx, func(tx *store.Tx) error {
		if _, err := c.SetState(ctx, tx, inProgress, StateInProgress, "OPS", ""); err != nil {
			return err
		}
		_, err := c.SetState(ctx, tx, resolved, StateResolved, "OPS", "")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	clk.Set(now)
	ids, err := c.SweepSLADB(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, ",") != strings.Join([]string{overdue, inProgress, edge}, ",") {
		t.Fatalf("escalated %v, want overdue, in-progress, edge", ids)
	}
	for id, want := range map[string]string{overdue: StateEscalated, edge: StateEscalated, inProgress: StateEscalated,
		exact: StateOpen, later: StateOpen, resolved: StateResolved} {
		if k := getCase(t, db, id); k.State != want {
			t.Errorf("%s: %s, want %s", id, k.State, want)
		} else if want == StateEscalated && k.EscalatedAt != clock.Stamp(now) {
			t.Errorf("%s escalated_at %s", id, k.EscalatedAt)
		}
	}
	l := logLines(t, db, overdue)
	if last := l[len(l)-1]; last != `CaseEscalated|OPEN|ESCALATED|SLA_EXCEEDED|SYSTEM|{"sla_deadline":"2026-04-01T03:00:00.000000000Z"}|2026-04-01T04:00:00.500000000Z` {
		t.Fatalf("log %s", last)
	}
	// Rerunning escalates nothing twice.
	if ids, err := c.SweepSLADB(ctx, db); err != nil || len(ids) != 0 {
		t.Fatalf("second sweep %v %v", ids, err)
	}
	if n := count(t, db, "SELECT COUNT(*) FROM EntityStateLog WHERE event_type = 'CaseEscalated'"); n != 3 {
		t.Fatalf("%d escalation rows", n)
	}
	// Every case has a deadline.
	if n := count(t, db, "SELECT COUNT(*) FROM Cases WHERE sla_deadline IS NULL"); n != 0 {
		t.Fatalf("%d cases without sla_deadline", n)
	}
}

func ExampleCases_OpenCase() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "cases-example")
	defer os.RemoveAll(dir)
	db, _ := store.OpenCoordinator(ctx, filepath.Join(dir, "zc.db"))
	defer db.Close()
	c := New(clock.NewManual(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)), nil, 0)
	for _, txid := range []string{"TX-1", "TX-2", "TX-1"} {
		o, _ := c.OpenCaseDB(ctx, db, OpenRequest{ReasonCode: "BANK_TIMEOUT", OpenedBy: "ZC", CausePartyID: "002", RelatedTxID: txid})
		fmt.Println(o.Created, o.Linked, o.OccurrenceCount)
	}
	// Output:
	// true true 1
	// false true 2
	// false false 2
}
