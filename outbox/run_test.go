package outbox

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/store"
)

// waitFor polls cond until it holds or 10 s pass (a bound on a broken
// implementation, not a speed assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// runOutbox starts ob.Run and returns a stop function that cancels it and
// waits for it to return.
func runOutbox(t *testing.T, ob *Outbox, cfg RunConfig) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ob.Run(ctx, cfg) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func (r *rig) claimAs(t *testing.T, owner string, ref string) claim {
	t.Helper()
	c, ok, err := r.ob.claimPicked(context.Background(), Pending, owner,
		`SELECT o.id FROM AdapterOutbox o WHERE o.ref = ? AND `+claimable, ref)
	if err != nil || !ok {
		t.Fatalf("claim %s as %s: ok=%v err=%v", ref, owner, ok, err)
	}
	return c
}

func events(rows []eslRow) []string {
	var out []string
	for _, l := range rows {
		out = append(out, l.event)
	}
	return out
}

// A restart takes back the claims its node's earlier start held at once
// (settling each by inquiry, never resending what the core applied), while
// a claim of another live owner waits for its lease.
func TestRunTakesBackEarlierStartAtOnceAndOtherOwnersWaitForLease(t *testing.T) {
	r := newRig(t, nil)
	ids := r.enqueue(t, post("A1", "A", Credit, 10), post("A2", "A", Credit, 20),
		post("B1", "B", Credit, 30), post("C1", "C", Credit, 40))
	dead := procid.New("node-1", r.clk)
	other := procid.New("node-2", r.clk)
	// The dead start claimed A1 and sent it (the core applied it), and
	// claimed... nothing else; another node claims B1 and is still working.
	c := r.claimAs(t, dead.Owner("outbox"), "A1")
	if _, err := r.core.Apply(context.Background(), c.p); err != nil {
		t.Fatal(err)
	}
	r.claimAs(t, other.Owner("outbox"), "B1")

	restarted := procid.New("node-1", r.clk)
	stop := runOutbox(t, r.ob, RunConfig{Identity: restarted, Idle: time.Millisecond})
	waitFor(t, "A1, A2 and C1 applied", func() bool {
		return r.status(t, ids[0]).Status == Applied && r.status(t, ids[1]).Status == Applied && r.status(t, ids[3]).Status == Applied
	})
	if n := r.core.timesApplied("A1"); n != 1 {
		t.Fatalf("A1 applied %d times: a taken-back claim must be settled by inquiry, not resent", n)
	}
	if got, want := fmt.Sprint(events(r.stateLog(t, ids[0]))),
		fmt.Sprint([]string{"OutboxEnqueued", "OutboxClaimed", "OutboxClaimRecovered", "OutboxClaimed", "OutboxResolvedApplied"}); got != want {
		t.Fatalf("A1 events %s, want %s", got, want)
	}
	if e := r.status(t, ids[2]); e.Status != Claimed {
		t.Fatalf("B1 (claimed by another live node, lease not run out) must wait: %+v", e)
	}
	// Its lease runs out: the running loop recovers it, asks, and sends it.
	r.clk.Advance(r.ob.lease + time.Second)
	waitFor(t, "B1 applied after its lease", func() bool { return r.status(t, ids[2]).Status == Applied })
	stop()
	if n := r.core.timesApplied("B1"); n != 1 {
		t.Fatalf("B1 applied %d times", n)
	}
	if got := r.stateLog(t, ids[2])[2]; got.event != "OutboxClaimRecovered" || !strings.Contains(got.payload, `"lease_expired"`) ||
		!strings.Contains(got.payload, other.Owner("outbox")) {
		t.Fatalf("B1 recovery logged as %+v", got)
	}
}

// blockingCore takes every posting off the wire and never answers: Apply
// returns only when its context ends, as an in-doubt send (or, with
// notSent, as a request that never left).
type blockingCore struct {
	*countingCore
	notSent bool
	entered chan string
}

func (b *blockingCore) Apply(ctx context.Context, p Posting) (ApplyResult, error) {
	select {
	case b.entered <- p.Ref:
	default:
	}
	<-ctx.Done()
	if b.notSent {
		return ApplyResult{}, &NotSentError{Cause: ctx.Err()}
	}
	return ApplyResult{}, &InDoubtError{Cause: ctx.Err()}
}

func newBlockingRig(t *testing.T, notSent bool, cfg Config) (*rig, *blockingCore) {
	t.Helper()
	r := newRig(t, nil)
	core := &blockingCore{countingCore: r.core, notSent: notSent, entered: make(chan string, 16)}
	cfg.DB, cfg.Core, cfg.Clock, cfg.Actor = r.db, core, r.clk, "BANK_001"
	ob, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.ob = ob
	return r, core
}

func claimedRows(t *testing.T, db *store.DB) int {
	t.Helper()
	var n int
	if err := db.Read(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM AdapterOutbox WHERE status = 'CLAIMED'`).Scan(&n)
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// A posting whose work outlives its deadline, or whose caller's context is
// cancelled mid-posting, releases its claim in a context of its own: IN_DOUBT
// when the request may have left, PENDING when it provably did not.
func TestDeadlineOrCancelMidPostingLeavesNoClaim(t *testing.T) {
	t.Run("posting deadline, sent", func(t *testing.T) {
		r, _ := newBlockingRig(t, false, Config{PostingTimeout: 50 * time.Millisecond, RecordTimeout: time.Second, Lease: 2 * time.Second})
		ids := r.enqueue(t, post("P1", "A", Credit, 1))
		res, err := r.ob.Drain(context.Background(), 10)
		if err != nil {
			t.Fatal(err)
		}
		if e := r.status(t, ids[0]); e.Status != InDoubt || res.InDoubt != 1 {
			t.Fatalf("after the posting deadline: %+v (result %+v), want IN_DOUBT", e, res)
		}
	})
	for _, notSent := range []bool{false, true} {
		want := InDoubt
		if notSent {
			want = Pending
		}
		t.Run(fmt.Sprintf("caller cancelled, not sent=%v", notSent), func(t *testing.T) {
			r, core := newBlockingRig(t, notSent, Config{})
			ids := r.enqueue(t, post("P1", "A", Credit, 1))
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-core.entered; cancel() }()
			_, err := r.ob.Drain(ctx, 10)
			if !errors.Is(err, context.Canceled) && err != nil {
				t.Fatal(err)
			}
			if e := r.status(t, ids[0]); e.Status != want {
				t.Fatalf("after cancel mid-posting: %s, want %s (a claim must never be left behind)", e.Status, want)
			}
			if n := claimedRows(t, r.db); n != 0 {
				t.Fatalf("%d rows left CLAIMED", n)
			}
		})
	}
}

// Stopping Run (SIGTERM → Node.Close) releases every claim it holds: the
// posting in flight, and any claim of its owner left over.
func TestRunReleasesClaimsWhenStopped(t *testing.T) {
	r, core := newBlockingRig(t, false, Config{})
	ids := r.enqueue(t, post("P1", "A", Credit, 1), post("Q1", "B", Credit, 1))
	id := procid.New("node-1", r.clk)
	cfg := RunConfig{Identity: id, Worker: "outbox", Idle: time.Millisecond}
	// A claim of this very loop whose commit outlived its caller's context.
	r.claimAs(t, id.Owner("outbox"), "Q1")
	stop := runOutbox(t, r.ob, cfg)
	// P1 is on the wire. (A Run whose passes fail never sends it: fail
	// then, rather than wait forever.)
	waitFor(t, "P1 on the wire", func() bool { return len(core.entered) > 0 })
	stop()
	if n := claimedRows(t, r.db); n != 0 {
		t.Fatalf("%d rows left CLAIMED after Run stopped", n)
	}
	for _, id := range ids {
		if e := r.status(t, id); e.Status != InDoubt {
			t.Fatalf("row %d: %s, want IN_DOUBT (it may have been sent)", id, e.Status)
		}
	}
	if ev := events(r.stateLog(t, ids[1])); ev[len(ev)-1] != "OutboxClaimReleased" {
		t.Fatalf("Q1 events %v", ev)
	}
}

// orderCore records the order in which postings reach it.
type orderCore struct {
	*countingCore
	mu   sync.Mutex
	seen []string
}

func (o *orderCore) Apply(ctx context.Context, p Posting) (ApplyResult, error) {
	o.mu.Lock()
	o.seen = append(o.seen, p.Bank+"/"+p.Ref)
	o.mu.Unlock()
	return o.countingCore.Apply(ctx, p)
}

// A bank (or account) with 2,000 postings waiting does not hold back
// another: every pass serves each account's next posting in turn.
func TestPassTakesTurnsAcrossBanksAndAccounts(t *testing.T) {
	r := newRig(t, nil)
	core := &orderCore{countingCore: r.core}
	ob, err := New(Config{DB: r.db, Core: core, Clock: r.clk})
	if err != nil {
		t.Fatal(err)
	}
	r.ob = ob
	var ps []Posting
	for i := range 2000 {
		p := post(fmt.Sprintf("A%04d", i), "A", Credit, 1)
		p.Bank = "001"
		ps = append(ps, p)
	}
	late := post("B0", "B", Credit, 1)
	late.Bank = "002"
	ps = append(ps, late)
	r.enqueue(t, ps...)
	ctx := context.Background()
	for range 2 {
		if _, err := ob.Pass(ctx, RunConfig{Accounts: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := fmt.Sprint(core.seen), "[001/A0000 002/B0]"; got != want {
		t.Fatalf("two passes of one account each sent %s, want %s: the bank with 2,000 waiting must take turns", got, want)
	}
	res, err := ob.Pass(ctx, RunConfig{})
	if err != nil || res.Applied != 1 {
		t.Fatalf("third pass: %+v %v", res, err)
	}
	if got := core.seen[len(core.seen)-1]; got != "001/A0001" {
		t.Fatalf("account order broken: %s after A0000", got)
	}
}

// Every lease is longer than what its holder may do under it, and the
// core's reply timeout fits in a posting's deadline; New refuses otherwise.
func TestLeaseRuleIsChecked(t *testing.T) {
	r := newRig(t, nil)
	for _, tc := range []struct {
		name string
		cfg  Config
		bad  string
	}{
		{"lease not longer than the work", Config{Lease: 5 * time.Second, PostingTimeout: 4 * time.Second, RecordTimeout: time.Second}, "claim lease 5s must be longer"},
		{"reply timeout longer than the posting deadline", Config{Core: replyCore{r.core, 8 * time.Second}, PostingTimeout: 6 * time.Second}, "reply timeout 8s must be shorter"},
		{"defaults", Config{Core: r.core}, ""},
		{"defaults follow a slow core", Config{Core: replyCore{r.core, 30 * time.Second}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.DB = r.db
			ob, err := New(tc.cfg)
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("New: %v, want an error containing %q", err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ob.postTO+ob.recTO >= ob.lease {
				t.Fatalf("defaults break the rule: posting %s + record %s >= lease %s", ob.postTO, ob.recTO, ob.lease)
			}
			if rt, ok := tc.cfg.Core.(replyTimeouter); ok && rt.Timeout() >= ob.postTO {
				t.Fatalf("default posting timeout %s does not cover the reply timeout %s", ob.postTO, rt.Timeout())
			}
		})
	}
}

type replyCore struct {
	Core
	d time.Duration
}

func (c replyCore) Timeout() time.Duration { return c.d }

// Passes of four loops with different owners over two database handles,
// racing each other and the expired-claim recovery, apply every posting
// exactly once and keep each account's order (run with -race).
func TestConcurrentPassesApplyEachPostingOnce(t *testing.T) {
	r := newRig(t, nil)
	db2, err := store.Open(context.Background(), r.path, Schema)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	ob2, err := New(Config{DB: db2, Core: r.core, Cases: r.cases, Clock: r.clk})
	if err != nil {
		t.Fatal(err)
	}
	const accounts, per = 6, 20
	var ps []Posting
	for i := range per {
		for a := range accounts {
			ps = append(ps, post(fmt.Sprintf("P-%d-%03d", a, i), fmt.Sprintf("ACC%d", a), Credit, 1))
		}
	}
	r.enqueue(t, ps...)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ob := r.ob
			if g%2 == 1 {
				ob = ob2
			}
			cfg := RunConfig{Identity: procid.New(fmt.Sprintf("node-%d", g), r.clk), Accounts: 2}
			for {
				res, err := ob.Pass(context.Background(), cfg)
				if err != nil {
					t.Error(err)
					return
				}
				if res.Claimed == 0 {
					c, _ := ob.Counts(context.Background())
					if c[Pending] == 0 && c[Claimed] == 0 && c[InDoubt] == 0 {
						return
					}
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	for _, p := range ps {
		if n := r.core.timesApplied(p.Ref); n != 1 {
			t.Fatalf("%s applied %d times", p.Ref, n)
		}
	}
	for a := range accounts {
		acct := fmt.Sprintf("ACC%d", a)
		for i, ref := range r.core.order[acct] {
			if want := fmt.Sprintf("P-%d-%03d", a, i); ref != want {
				t.Fatalf("%s posting %d is %s, want %s (order broken)", acct, i, ref, want)
			}
		}
	}
}

// An outbox file written before claims had owners and leases gains the
// columns when New opens it; a row claimed by the old code (no
// claim_until) is judged by claimed_at and the lease.
func TestOldOutboxFileGainsClaimColumns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	old := strings.Replace(strings.Replace(Schema, "  claim_owner   TEXT,             -- procid owner \"<node>/<epoch>/<worker>\" of the claim\n", "", 1),
		"  claim_until   TEXT,             -- claimed_at + the claimer's lease (sortable stamp)\n", "", 1)
	if old == Schema {
		t.Fatal("test cannot build the old schema")
	}
	db, err := store.Open(ctx, path, old)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO AdapterOutbox (ref, txid, bank, account, kind, amount, status, claim_token, claimed_at, created_at, updated_at)
			VALUES ('OLD-1', 'TX-OLD-1', '001', 'A', 'CREDIT', 5, 'CLAIMED', 'tok', ?, ?, ?)`,
			sortableStamp(t0), sortableStamp(t0), sortableStamp(t0))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(t0)
	ob, err := New(Config{DB: db, Core: newCountingCore(nil), Clock: clk})
	if err != nil {
		t.Fatalf("New on an old file: %v", err)
	}
	if n, err := ob.RecoverExpiredClaims(ctx); err != nil || n != 0 {
		t.Fatalf("fresh old claim recovered: %d %v", n, err)
	}
	clk.Advance(ob.lease + time.Second)
	if n, err := ob.RecoverExpiredClaims(ctx); err != nil || n != 1 {
		t.Fatalf("old claim past the lease: recovered %d, %v", n, err)
	}
}
