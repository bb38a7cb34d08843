package outbox

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

var t0 = time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)

type rig struct {
	db    *store.DB
	ob    *Outbox
	core  *countingCore
	cases *fakeCases
	clk   *clock.Manual
	path  string
}

func newRig(t testing.TB, balances map[string]int64) *rig {
	t.Helper()
	path := filepath.Join(t.TempDir(), "adapter.db")
	db, err := store.Open(context.Background(), path, Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r := &rig{db: db, core: newCountingCore(balances), cases: &fakeCases{}, clk: clock.NewManual(t0), path: path}
	r.ob, err = New(Config{DB: db, Core: r.core, Cases: r.cases, Clock: r.clk, Actor: "BANK_001"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) enqueue(t testing.TB, ps ...Posting) []int64 {
	t.Helper()
	var ids []int64
	err := r.db.Write(context.Background(), func(tx *store.Tx) error {
		for _, p := range ps {
			id, err := r.ob.Enqueue(context.Background(), tx, p)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func (r *rig) status(t *testing.T, id int64) Entry {
	t.Helper()
	e, err := r.ob.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

type eslRow struct {
	event, from, to, actor, payload, reason string
}

func (r *rig) stateLog(t *testing.T, id int64) []eslRow {
	t.Helper()
	var out []eslRow
	err := r.db.Read(context.Background(), func(tx *store.Tx) error {
		rows, err := tx.QueryContext(context.Background(), `SELECT event_type, COALESCE(state_from,''), state_to,
			COALESCE(actor,''), COALESCE(payload_json,''), COALESCE(reason_code,'') FROM EntityStateLog
			WHERE entity_type = 'OUTBOX' AND entity_id = ? ORDER BY rowid`, fmt.Sprint(id))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e eslRow
			if err := rows.Scan(&e.event, &e.from, &e.to, &e.actor, &e.payload, &e.reason); err != nil {
				return err
			}
			out = append(out, e)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func post(ref, acct string, kind Kind, amt int64) Posting {
	return Posting{Ref: ref, TxID: "TX-" + ref, Bank: "001", Account: acct, Kind: kind, Amount: amt}
}

func TestEnqueueValidates(t *testing.T) {
	r := newRig(t, nil)
	ok := post("R1", "A", Credit, 100)
	cases := []struct {
		name string
		mut  func(p *Posting)
		code string
	}{
		{"no ref", func(p *Posting) { p.Ref = "" }, "MISSING_FIELD"},
		{"no txid", func(p *Posting) { p.TxID = " " }, "MISSING_FIELD"},
		{"no account", func(p *Posting) { p.Account = "" }, "MISSING_FIELD"},
		{"bad kind", func(p *Posting) { p.Kind = "MOVE" }, "INVALID_REQUEST"},
		{"zero amount", func(p *Posting) { p.Amount = 0 }, "INVALID_AMOUNT"},
		{"over ceiling", func(p *Posting) { p.Amount = MaxAmount + 1 }, "INVALID_AMOUNT"},
		{"reversal without original", func(p *Posting) { p.Kind = Reversal }, "MISSING_FIELD"},
		{"credit with original", func(p *Posting) { p.ReversalOf = "X" }, "INVALID_REQUEST"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ok
			c.mut(&p)
			err := r.db.Write(context.Background(), func(tx *store.Tx) error {
				_, err := r.ob.Enqueue(context.Background(), tx, p)
				return err
			})
			if domainerr.Code(err) != c.code {
				t.Fatalf("got %v, want code %s", err, c.code)
			}
		})
	}
	r.enqueue(t, ok)
	err := r.db.Write(context.Background(), func(tx *store.Tx) error {
		_, err := r.ob.Enqueue(context.Background(), tx, ok)
		return err
	})
	if domainerr.Code(err) != "IDEMPOTENCY_KEY_CONFLICT" {
		t.Fatalf("duplicate ref: got %v", err)
	}
	// A rolled-back adapter transaction leaves no posting behind.
	boom := errors.New("adapter failed later in the same transaction")
	err = r.db.Write(context.Background(), func(tx *store.Tx) error {
		if _, err := r.ob.Enqueue(context.Background(), tx, post("R2", "A", Credit, 5)); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	all, _ := r.ob.List(context.Background(), Filter{})
	if len(all) != 1 || all[0].Posting.Ref != "R1" || all[0].Status != Pending || all[0].Posting.TxID != "TX-R1" {
		t.Fatalf("rows after rollback: %+v", all)
	}
}

func TestDrainAppliesOnceAndSecondDrainIsNoop(t *testing.T) {
	r := newRig(t, map[string]int64{"A": 1000})
	ids := r.enqueue(t, post("D1", "A", Debit, 300), post("C1", "B", Credit, 50))
	res, err := r.ob.Drain(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	if res.Applied != 2 || res.Claimed != 2 {
		t.Fatalf("drain: %+v", res)
	}
	res, err = r.ob.Drain(context.Background(), 100)
	if err != nil || res.Claimed != 0 {
		t.Fatalf("second drain: %+v %v", res, err)
	}
	if r.core.bal("A") != 700 || r.core.bal("B") != 50 {
		t.Fatalf("core balances A=%d B=%d", r.core.bal("A"), r.core.bal("B"))
	}
	for _, id := range ids {
		e := r.status(t, id)
		if e.Status != Applied || e.Sends != 1 || e.CoreRef == "" || e.AppliedAt.IsZero() {
			t.Fatalf("row %d: %+v", id, e)
		}
	}
	log := r.stateLog(t, ids[0])
	want := []string{"OutboxEnqueued", "OutboxClaimed", "OutboxApplied"}
	if len(log) != 3 {
		t.Fatalf("state log: %+v", log)
	}
	for i, w := range want {
		if log[i].event != w {
			t.Fatalf("state log %d: %+v want %s", i, log[i], w)
		}
	}
	if log[2].from != "CLAIMED" || log[2].to != "APPLIED" || log[2].actor != "BANK_001" {
		t.Fatalf("applied log row: %+v", log[2])
	}
}

func TestOverdraftBlocksAndOpensExactlyOneCase(t *testing.T) {
	r := newRig(t, map[string]int64{"A": 100})
	ids := r.enqueue(t, post("D1", "A", Debit, 500), post("C1", "A", Credit, 10))
	res, err := r.ob.Drain(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if res.Blocked != 1 || res.Applied != 1 {
		t.Fatalf("drain: %+v", res)
	}
	e := r.status(t, ids[0])
	if e.Status != Blocked || e.ReasonCode != "INSUFFICIENT_FUNDS" || e.CaseID == "" {
		t.Fatalf("blocked row: %+v", e)
	}
	// The credit behind the blocked debit was not held back; the core never went negative.
	if r.core.bal("A") != 110 || r.core.timesApplied("D1") != 0 {
		t.Fatalf("core: A=%d D1 applied %d", r.core.bal("A"), r.core.timesApplied("D1"))
	}
	// No retry loop: further drains and sweeps neither resend nor reopen.
	for i := 0; i < 3; i++ {
		if _, err := r.ob.Drain(context.Background(), 10); err != nil {
			t.Fatal(err)
		}
		r.clk.Advance(time.Hour)
		if _, err := r.ob.OpenMissingCases(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if r.cases.calls != 1 || r.cases.opened[DedupKey("D1")] != 1 {
		t.Fatalf("cases: calls=%d opened=%v", r.cases.calls, r.cases.opened)
	}
	if r.core.applies != 2 {
		t.Fatalf("core saw %d applies, want 2 (no retry of a refusal)", r.core.applies)
	}
}

func TestCaseOpenFailureIsSweptLater(t *testing.T) {
	r := newRig(t, map[string]int64{"A": 0})
	r.cases.fail = 1
	ids := r.enqueue(t, post("D1", "A", Debit, 5))
	if _, err := r.ob.Drain(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	if e := r.status(t, ids[0]); e.Status != Blocked || e.CaseID != "" {
		t.Fatalf("after failed open: %+v", e)
	}
	// Concurrent sweepers still open one Case.
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.ob.OpenMissingCases(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if e := r.status(t, ids[0]); e.CaseID == "" {
		t.Fatalf("case still missing: %+v", e)
	}
	if r.cases.opened[DedupKey("D1")] != 1 || r.cases.calls != 2 {
		t.Fatalf("cases: calls=%d opened=%v", r.cases.calls, r.cases.opened)
	}
}

func TestInDoubtResolution(t *testing.T) {
	t.Run("core has it: applied without resend", func(t *testing.T) {
		r := newRig(t, nil)
		r.core.lostNext = 1
		ids := r.enqueue(t, post("C1", "A", Credit, 70), post("C2", "A", Credit, 5))
		res, err := r.ob.Drain(context.Background(), 10)
		if err != nil || res.InDoubt != 1 || !res.Stopped {
			t.Fatalf("drain: %+v %v", res, err)
		}
		if e := r.status(t, ids[0]); e.Status != InDoubt || e.Sends != 1 {
			t.Fatalf("row: %+v", e)
		}
		// The later posting of the same account waits behind the in-doubt one.
		if res, _ := r.ob.Drain(context.Background(), 10); res.Claimed != 0 {
			t.Fatalf("later posting drained past an in-doubt one: %+v", res)
		}
		res, err = r.ob.ResolveInDoubt(context.Background())
		if err != nil || res.Applied != 1 || res.Resent != 0 {
			t.Fatalf("resolve: %+v %v", res, err)
		}
		if _, err := r.ob.Drain(context.Background(), 10); err != nil {
			t.Fatal(err)
		}
		if r.core.timesApplied("C1") != 1 || r.core.bal("A") != 75 {
			t.Fatalf("C1 applied %d, A=%d", r.core.timesApplied("C1"), r.core.bal("A"))
		}
		if e := r.status(t, ids[0]); e.Status != Applied || e.Sends != 1 || e.Lookups != 1 {
			t.Fatalf("row: %+v", e)
		}
	})
	t.Run("core has no trace: resent once", func(t *testing.T) {
		r := newRig(t, nil)
		r.core.dropNext = 1
		ids := r.enqueue(t, post("C1", "A", Credit, 70))
		if res, _ := r.ob.Drain(context.Background(), 10); res.InDoubt != 1 {
			t.Fatalf("drain: %+v", res)
		}
		res, err := r.ob.ResolveInDoubt(context.Background())
		if err != nil || res.Applied != 1 || res.Resent != 1 {
			t.Fatalf("resolve: %+v %v", res, err)
		}
		if e := r.status(t, ids[0]); e.Status != Applied || e.Sends != 2 || e.Lookups != 1 {
			t.Fatalf("row: %+v", e)
		}
		if r.core.timesApplied("C1") != 1 || r.core.bal("A") != 70 {
			t.Fatalf("C1 applied %d", r.core.timesApplied("C1"))
		}
	})
	t.Run("core refused it: blocked with a case", func(t *testing.T) {
		r := newRig(t, nil)
		r.core.refused["D1"] = "INSUFFICIENT_FUNDS"
		ids := r.enqueue(t, post("D1", "A", Debit, 70))
		r.core.dropNext = 1
		r.ob.Drain(context.Background(), 10)
		res, err := r.ob.ResolveInDoubt(context.Background())
		if err != nil || res.Blocked != 1 {
			t.Fatalf("resolve: %+v %v", res, err)
		}
		if e := r.status(t, ids[0]); e.Status != Blocked || e.CaseID == "" || e.ReasonCode != "INSUFFICIENT_FUNDS" {
			t.Fatalf("row: %+v", e)
		}
	})
	t.Run("inquiry unanswered: stays in doubt, nothing resent", func(t *testing.T) {
		r := newRig(t, nil)
		r.core.dropNext = 1
		ids := r.enqueue(t, post("C1", "A", Credit, 70))
		r.ob.Drain(context.Background(), 10)
		r.core.lookupErr = &InDoubtError{Cause: errors.New("no reply")}
		res, err := r.ob.ResolveInDoubt(context.Background())
		if err != nil || res.InDoubt != 1 || !res.Stopped {
			t.Fatalf("resolve: %+v %v", res, err)
		}
		if e := r.status(t, ids[0]); e.Status != InDoubt || e.Sends != 1 {
			t.Fatalf("row: %+v", e)
		}
		if r.core.applies != 1 {
			t.Fatalf("core saw %d applies; an unanswered inquiry must not trigger a resend", r.core.applies)
		}
		r.core.lookupErr = nil
		if res, _ := r.ob.ResolveInDoubt(context.Background()); res.Applied != 1 || r.core.timesApplied("C1") != 1 {
			t.Fatalf("second resolve: %+v", res)
		}
	})
}

func TestNotSentStaysPendingThenAppliesOnce(t *testing.T) {
	r := newRig(t, nil)
	r.core.offline = true
	ids := r.enqueue(t, post("C1", "A", Credit, 9), post("C2", "B", Credit, 9))
	res, err := r.ob.Drain(context.Background(), 10)
	if err != nil || res.NotSent != 1 || !res.Stopped {
		t.Fatalf("offline drain: %+v %v", res, err)
	}
	if e := r.status(t, ids[0]); e.Status != Pending || e.Sends != 0 {
		t.Fatalf("row: %+v", e)
	}
	r.core.offline = false
	if res, _ := r.ob.Drain(context.Background(), 10); res.Applied != 2 {
		t.Fatalf("online drain: %+v", res)
	}
	if r.core.timesApplied("C1") != 1 || r.core.timesApplied("C2") != 1 {
		t.Fatal("not applied exactly once")
	}
}

func TestRecoverStaleClaims(t *testing.T) {
	r := newRig(t, nil)
	ids := r.enqueue(t, post("C1", "A", Credit, 40))
	// A drainer claims and sends, then dies before recording the outcome.
	c, ok, err := r.ob.claimOne(context.Background(), Pending)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := r.core.Apply(context.Background(), c.p); err != nil {
		t.Fatal(err)
	}
	if n, err := r.ob.RecoverStaleClaims(context.Background(), time.Minute); err != nil || n != 0 {
		t.Fatalf("fresh claim recovered: %d %v", n, err)
	}
	r.clk.Advance(2 * time.Minute)
	if n, err := r.ob.RecoverStaleClaims(context.Background(), time.Minute); err != nil || n != 1 {
		t.Fatalf("recover: %d %v", n, err)
	}
	if e := r.status(t, ids[0]); e.Status != InDoubt {
		t.Fatalf("recovered row must be IN_DOUBT, not resent blindly: %+v", e)
	}
	// The dead claimer's late outcome is fenced off.
	if fenced, err := r.ob.finish(context.Background(), c, Applied, "OutboxApplied", "", "", "", true, false); err != nil || !fenced {
		t.Fatalf("late finish not fenced: %v %v", fenced, err)
	}
	res, err := r.ob.ResolveInDoubt(context.Background())
	if err != nil || res.Applied != 1 || res.Resent != 0 {
		t.Fatalf("resolve: %+v %v", res, err)
	}
	if r.core.timesApplied("C1") != 1 {
		t.Fatalf("applied %d times", r.core.timesApplied("C1"))
	}
	log := r.stateLog(t, ids[0])
	var events []string
	for _, l := range log {
		events = append(events, l.event)
	}
	want := fmt.Sprint([]string{"OutboxEnqueued", "OutboxClaimed", "OutboxClaimRecovered", "OutboxClaimed", "OutboxResolvedApplied"})
	if fmt.Sprint(events) != want {
		t.Fatalf("events %v want %v", events, want)
	}
	// A claim that died before sending is resent after the inquiry.
	r2 := newRig(t, nil)
	r2.enqueue(t, post("C9", "A", Credit, 1))
	if _, ok, _ := r2.ob.claimOne(context.Background(), Pending); !ok {
		t.Fatal("no claim")
	}
	r2.clk.Advance(time.Hour)
	r2.ob.RecoverStaleClaims(context.Background(), time.Minute)
	if res, _ := r2.ob.ResolveInDoubt(context.Background()); res.Resent != 1 || r2.core.timesApplied("C9") != 1 {
		t.Fatalf("resolve: %+v", res)
	}
}

func TestOperatorPaths(t *testing.T) {
	r := newRig(t, map[string]int64{"A": 0})
	ids := r.enqueue(t, post("D1", "A", Debit, 50), post("D2", "A", Debit, 60))
	r.ob.Drain(context.Background(), 10)
	for _, id := range ids {
		if e := r.status(t, id); e.Status != Blocked {
			t.Fatalf("row %d: %+v", id, e)
		}
	}
	ctx := context.Background()
	if err := r.ob.Requeue(ctx, ids[0], "", "x"); domainerr.Code(err) != "MISSING_FIELD" {
		t.Fatalf("no operator: %v", err)
	}
	// The customer deposits; the operator requeues D1 and writes D2 off.
	r.core.balance["A"] = 55
	if err := r.ob.Requeue(ctx, ids[0], "ops-tanaka", "customer deposited; case CASE-1"); err != nil {
		t.Fatal(err)
	}
	if err := r.ob.WriteOff(ctx, ids[1], "ops-tanaka", "duplicate instruction"); err != nil {
		t.Fatal(err)
	}
	if err := r.ob.WriteOff(ctx, ids[1], "ops-tanaka", "again"); domainerr.Code(err) != "STATE_GUARD" {
		t.Fatalf("second write-off: %v", err)
	}
	if err := r.ob.Requeue(ctx, 999, "ops", "x"); domainerr.Code(err) != "TX_NOT_FOUND" {
		t.Fatalf("missing id: %v", err)
	}
	if res, _ := r.ob.Drain(ctx, 10); res.Applied != 1 {
		t.Fatalf("drain after requeue: %+v", res)
	}
	if r.core.bal("A") != 5 || r.core.timesApplied("D1") != 1 || r.core.timesApplied("D2") != 0 {
		t.Fatalf("core A=%d", r.core.bal("A"))
	}
	if e := r.status(t, ids[1]); e.Status != WrittenOff {
		t.Fatalf("D2: %+v", e)
	}
	find := func(id int64, event string) eslRow {
		for _, l := range r.stateLog(t, id) {
			if l.event == event {
				return l
			}
		}
		t.Fatalf("no %s for %d", event, id)
		return eslRow{}
	}
	rq := find(ids[0], "OutboxRequeued")
	if rq.from != "BLOCKED" || rq.to != "PENDING" || rq.actor != "OPS" ||
		rq.payload != `{"operator":"ops-tanaka","reason":"customer deposited; case CASE-1"}` {
		t.Fatalf("requeue log: %+v", rq)
	}
	wo := find(ids[1], "OutboxWrittenOff")
	if wo.from != "BLOCKED" || wo.to != "WRITTEN_OFF" || wo.actor != "OPS" ||
		wo.payload != `{"operator":"ops-tanaka","reason":"duplicate instruction"}` {
		t.Fatalf("write-off log: %+v", wo)
	}
}

func TestReversalWaitsForItsOriginal(t *testing.T) {
	r := newRig(t, map[string]int64{"A": 0})
	ids := r.enqueue(t, post("D1", "A", Debit, 50),
		Posting{Ref: "V1", TxID: "TX-D1", Bank: "001", Account: "A", Kind: Reversal, Amount: 50, ReversalOf: "D1"})
	res, _ := r.ob.Drain(context.Background(), 10)
	if res.Blocked != 1 || res.Claimed != 1 {
		t.Fatalf("drain: %+v (the reversal of a BLOCKED posting must wait)", res)
	}
	if e := r.status(t, ids[1]); e.Status != Pending {
		t.Fatalf("reversal: %+v", e)
	}
	r.core.balance["A"] = 50
	r.ob.Requeue(context.Background(), ids[0], "ops", "funds arrived")
	if res, _ := r.ob.Drain(context.Background(), 10); res.Applied != 2 {
		t.Fatalf("drain: %+v", res)
	}
	if r.core.bal("A") != 50 {
		t.Fatalf("debit + reversal must net to zero, A=%d", r.core.bal("A"))
	}
}

// A claim half a second after a whole second is younger than a cutoff on
// that whole second, even though "…:00.5Z" < "…:00Z" as RFC3339Nano text.
func TestRecoverStaleClaimsComparesInstantsNotText(t *testing.T) {
	r := newRig(t, nil)
	r.enqueue(t, post("C1", "A", Credit, 1))
	r.clk.Set(t0.Add(500 * time.Millisecond))
	if _, ok, err := r.ob.claimOne(context.Background(), Pending); err != nil || !ok {
		t.Fatal(ok, err)
	}
	r.clk.Set(t0.Add(time.Second))
	if n, err := r.ob.RecoverStaleClaims(context.Background(), time.Second); err != nil || n != 0 {
		t.Fatalf("a claim younger than olderThan was recovered: %d %v", n, err)
	}
	r.clk.Set(t0.Add(1501 * time.Millisecond))
	if n, err := r.ob.RecoverStaleClaims(context.Background(), time.Second); err != nil || n != 1 {
		t.Fatalf("stale claim not recovered: %d %v", n, err)
	}
}
