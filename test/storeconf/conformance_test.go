package storeconf

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
	"github.com/zcgw/zcgw/coordinator/sysmode"
	"github.com/zcgw/zcgw/jobs/ledger"
	"github.com/zcgw/zcgw/outbox"
)

// The conformance scenarios: the store's guarantees as the packages above
// it rely on them, each run on every backend (storetest.Each) through the
// packages' public APIs, by racing goroutines on two handles of one
// database (as two processes, or two nodes, would hold), asserting rows,
// balances and chains. The store's own dialect and group-commit suites
// (coordinator/store) and the orchestrator's work-queue claim race
// (coordinator/orchestrator TestClaimRace, which drives unexported
// claims) run on both backends in their packages.

var conf0 = time.Date(2026, 4, 1, 1, 0, 0, 0, time.UTC)

// openTwo opens two handles of one fresh database on b with schema.
func openTwo(t *testing.T, b storetest.Backend, schema string) (*store.DB, *store.DB) {
	t.Helper()
	loc := b.Location(t, "conf")
	var dbs [2]*store.DB
	for i := range dbs {
		db, err := store.Open(context.Background(), loc, schema)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	return dbs[0], dbs[1]
}

func write(t *testing.T, db *store.DB, q string, args ...any) {
	t.Helper()
	if err := db.Write(context.Background(), func(tx *store.Tx) error {
		_, err := tx.ExecContext(context.Background(), q, args...)
		return err
	}); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func count(t *testing.T, db *store.DB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Read(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), q, args...).Scan(&n)
	}); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// race runs f(i) for i in [0, n) at once and waits for all.
func race(n int, f func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			f(i)
		}()
	}
	close(start)
	wg.Wait()
}

func seedParticipants(t *testing.T, db *store.DB) {
	write(t, db, `INSERT INTO Participants (bank_id, bank_name, ingress_base_url, h_limit, h_used, registered_at) VALUES
		('001', 'Bank One', '/bank/001', 1000, 0, '2026-01-01T00:00:00.000000000Z'),
		('002', 'Bank Two', '/bank/002', 1000, 0, '2026-01-01T00:00:00.000000000Z')`)
}

func newTx(id string) lane.NewTx {
	return lane.NewTx{TxID: id, Lane: "EXPRESS", AmountValue: 500, PayerBankID: "001", PayerAccountHash: "acc-a",
		PayeeBankID: "002", PayeeAccountHash: "acc-b", IdempotencyKey: "TX:" + id + ":PaymentInitiated:001",
		Payload: map[string]any{"amount": 500}}
}

// Lane primitives: of 16 racers (two handles) moving one transfer
// RECEIVED -> PRECHECKED exactly one applies, with exactly one log entry;
// a transition by an issuer that does not own the row writes nothing; and
// 80 transfers inserted and moved concurrently leave every chain intact
// with strictly increasing, never reused event_seq.
func TestConformLanePrimitives(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		d1, d2 := openTwo(t, b, store.Schema)
		seedParticipants(t, d1)
		clk := clock.NewManual(conf0)
		l1 := lane.New(d1, finality.New(clk), sysmode.Gate{}, clk, nil)
		l2 := lane.New(d2, finality.New(clk), sysmode.Gate{}, clk, nil)
		if _, err := l1.InsertTxWithLog(ctx, newTx("TX-R")); err != nil {
			t.Fatal(err)
		}
		var applied atomic.Int32
		race(16, func(i int) {
			l := l1
			if i%2 == 1 {
				l = l2
			}
			res, err := l.TransitionWithLog(ctx, lane.Transition{TxID: "TX-R", From: lane.Received, To: lane.Prechecked,
				EventType: finality.PreCheckPassed})
			if err != nil {
				t.Error(err)
				return
			}
			if res.Applied {
				applied.Add(1)
			} else if res.PreviousState != lane.Prechecked {
				t.Errorf("a loser saw state %s", res.PreviousState)
			}
		})
		if applied.Load() != 1 {
			t.Fatalf("applied %d times, want 1", applied.Load())
		}
		if n := count(t, d1, `SELECT COUNT(*) FROM Transactions WHERE txid = 'TX-R' AND state = 'PRECHECKED' AND version = 1`); n != 1 {
			t.Fatalf("TX-R is not PRECHECKED at version 1")
		}
		if n := count(t, d1, `SELECT COUNT(*) FROM FinalityLog WHERE txid = 'TX-R'`); n != 2 {
			t.Fatalf("TX-R has %d log entries, want 2 (insert, one transition)", n)
		}

		// The owner matrix: only the owner (here the coordinator) moves a
		// row; another owner's issuer gets OWNERSHIP_VIOLATION.
		res, err := l2.TransitionWithLog(ctx, lane.Transition{TxID: "TX-R", From: lane.Prechecked, To: lane.HReserved,
			EventType: finality.HReserved, Issuer: lane.OwnerVenueBOJ})
		if res.Applied || domainerr.Code(err) != "OWNERSHIP_VIOLATION" {
			t.Fatalf("a transition by an issuer that is not the owner: %+v %v", res, err)
		}
		if n := count(t, d1, `SELECT COUNT(*) FROM FinalityLog WHERE txid = 'TX-R'`); n != 2 {
			t.Fatalf("a refused transition wrote a log entry (%d entries)", n)
		}

		const txs = 80
		race(txs, func(i int) {
			l := l1
			if i%2 == 1 {
				l = l2
			}
			id := fmt.Sprintf("TX-%03d", i)
			if _, err := l.InsertTxWithLog(ctx, newTx(id)); err != nil {
				t.Error(err)
				return
			}
			if res, err := l.TransitionWithLog(ctx, lane.Transition{TxID: id, From: lane.Received, To: lane.Prechecked,
				EventType: finality.PreCheckPassed}); err != nil || !res.Applied {
				t.Errorf("%s: %+v %v", id, res, err)
			}
		})
		rep, err := finality.VerifyAll(ctx, d2)
		if err != nil || !rep.OK() {
			t.Fatalf("chains: %+v %v", rep, err)
		}
		entries := int64(2 + 2*txs)
		if n := count(t, d1, `SELECT COUNT(DISTINCT event_seq) FROM FinalityLog`); n != entries {
			t.Fatalf("%d distinct event_seq, want %d", n, entries)
		}
		if n := count(t, d1, `SELECT COUNT(*) FROM FinalityLog`); n != entries {
			t.Fatalf("%d entries, want %d", n, entries)
		}
	})
}

// The chain: 16 writers on two handles append to one hot transfer chain
// and to the GLOBAL chain; neither forks, every entry is on it, and
// event_seq is strictly increasing without reuse.
func TestConformConcurrentAppendsNeverForkAChain(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		d1, d2 := openTwo(t, b, store.Schema)
		l := finality.New(clock.System{})
		const workers, each = 16, 5
		race(workers, func(w int) {
			db := d1
			if w%2 == 1 {
				db = d2
			}
			for i := range each {
				for _, ev := range []finality.Event{
					{TxID: "TX-HOT", Type: finality.MisrecordCorrected, StateTo: "SETTLED", Payload: map[string]int{"w": w, "i": i}},
					{Type: finality.DnsIntradayCutoff, StateTo: "CUTOFF", Payload: map[string]int{"w": w, "i": i}},
				} {
					if err := db.Write(ctx, func(tx *store.Tx) error { _, err := l.Append(ctx, tx, ev); return err }); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
		for _, chain := range []string{"TX-HOT", finality.GlobalChain} {
			r, err := finality.VerifyChain(ctx, d1, chain)
			if err != nil || !r.OK() || r.Entries != workers*each {
				t.Fatalf("chain %s: %+v %v; want %d intact entries", chain, r, err, workers*each)
			}
		}
		n := int64(2 * workers * each)
		if got := count(t, d1, `SELECT COUNT(DISTINCT prev_hash) FROM FinalityLog`); got != n-1 { // both chains start at GENESIS
			t.Fatalf("%d distinct prev_hash, want %d", got, n-1)
		}
		if got := count(t, d1, `SELECT COUNT(DISTINCT event_seq) FROM FinalityLog`); got != n {
			t.Fatalf("%d distinct event_seq, want %d", got, n)
		}
	})
}

// Idempotency: 32 acquires of one key on two handles: exactly one FRESH,
// every other IN_FLIGHT, one row.
func TestConformIdempotencyRace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		d1, d2 := openTwo(t, b, store.Schema)
		k := idem.New(clock.NewManual(conf0), nil)
		key, _ := idem.TxKey("TX-RACE", "PaymentInitiated", "001")
		const n = 32
		outcomes := make([]idem.Outcome, n)
		race(n, func(i int) {
			db := d1
			if i%2 == 1 {
				db = d2
			}
			r, err := k.AcquireDB(ctx, db, key, []byte(`{"amount":1000}`))
			if err != nil {
				t.Errorf("acquire %d: %v", i, err)
			}
			outcomes[i] = r.Outcome
		})
		got := map[idem.Outcome]int{}
		for _, o := range outcomes {
			got[o]++
		}
		if got[idem.Fresh] != 1 || got[idem.InFlight] != n-1 {
			t.Fatalf("outcomes %v, want 1 FRESH and %d IN_FLIGHT", got, n-1)
		}
		if c := count(t, d1, `SELECT COUNT(*) FROM IdempotencyKeys WHERE key = ? AND status = 'PROCESSING'`, key); c != 1 {
			t.Fatalf("%d rows for the key", c)
		}
	})
}

// H reservations: 32 racers reserve 70 against limits of 1,000 JPY and
// 500 USD: exactly 14 and 7 fit; then two releasers per reservation race
// 16 new reservations: each reservation is released once, h_used always
// equals the sum of unreleased reservations and never exceeds the limit.
func TestConformHReservations(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		d1, d2 := openTwo(t, b, store.Schema)
		seedParticipants(t, d1)
		write(t, d1, `INSERT INTO ParticipantCurrencyLimits (bank_id, currency, h_limit, h_used) VALUES ('001', 'USD', 500, 0)`)
		h := hlimit.New(clock.NewManual(conf0), nil)
		pick := func(i int) *store.DB {
			if i%2 == 1 {
				return d2
			}
			return d1
		}
		check := func(stage string) {
			t.Helper()
			for _, cur := range []string{"JPY", "USD"} {
				var u hlimit.Usage
				if err := d1.Read(ctx, func(tx *store.Tx) error {
					var err error
					u, err = hlimit.UsageOf(ctx, tx, "001", cur)
					return err
				}); err != nil {
					t.Fatal(err)
				}
				sum := count(t, d1, `SELECT COALESCE(SUM(amount), 0) FROM HReservations WHERE bank_id = '001' AND currency = ? AND released_at IS NULL`, cur)
				if u.Used != sum || u.Used > u.Limit {
					t.Fatalf("%s %s: used %d, unreleased sum %d, limit %d", stage, cur, u.Used, sum, u.Limit)
				}
			}
			if m, err := hlimit.ReconcileDB(ctx, d2); err != nil || len(m) != 0 {
				t.Fatalf("%s: mismatches %+v %v", stage, m, err)
			}
		}
		var mu sync.Mutex
		won := map[string]int{}
		var held []hlimit.Reservation
		race(32, func(i int) {
			cur := "JPY"
			if i%2 == 1 {
				cur = "USD"
			}
			r, err := h.ReserveDB(ctx, pick(i/2), hlimit.ReserveRequest{TxID: fmt.Sprintf("TX-%02d", i), BankID: "001", Currency: cur, Amount: 70})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won[cur]++
				held = append(held, r)
			case !domainerr.Has(err, "H_LIMIT_EXCEEDED"):
				t.Errorf("reserve: %v", err)
			}
		})
		if won["JPY"] != 14 || won["USD"] != 7 {
			t.Fatalf("won %v, want JPY 14 USD 7", won)
		}
		check("after reserving")
		var freed atomic.Int32
		race(2*len(held)+16, func(i int) {
			if i < 2*len(held) {
				ok, err := h.ReleaseDB(ctx, pick(i), held[i/2].ID)
				if err != nil {
					t.Errorf("release: %v", err)
				}
				if ok {
					freed.Add(1)
				}
				return
			}
			_, err := h.ReserveDB(ctx, pick(i), hlimit.ReserveRequest{TxID: fmt.Sprintf("TX-B%02d", i), BankID: "001", Amount: 90})
			if err != nil && !domainerr.Has(err, "H_LIMIT_EXCEEDED") {
				t.Errorf("reserve: %v", err)
			}
		})
		if int(freed.Load()) != len(held) {
			t.Fatalf("%d releases applied, want %d (one per reservation)", freed.Load(), len(held))
		}
		check("after releasing")
	})
}

// conformCore is a core that counts every application per reference and
// records each account's order.
type conformCore struct {
	mu      sync.Mutex
	applied map[string]int
	order   map[string][]string
	balance map[string]int64
}

func (c *conformCore) Apply(_ context.Context, p outbox.Posting) (outbox.ApplyResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.applied[p.Ref]++
	c.order[p.Account] = append(c.order[p.Account], p.Ref)
	c.balance[p.Account] += p.Amount
	return outbox.ApplyResult{CoreRef: "J-" + p.Ref, BalanceAfter: c.balance[p.Account]}, nil
}

func (c *conformCore) Lookup(_ context.Context, ref string) (outbox.LookupResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.applied[ref] > 0 {
		return outbox.LookupResult{State: outbox.LookupApplied, CoreRef: "J-" + ref}, nil
	}
	return outbox.LookupResult{State: outbox.LookupUnknown}, nil
}

// The outbox claim: 8 drainers on two handles over 200 postings of 8
// accounts: the core sees every posting exactly once and each account's
// postings in order; every row ends APPLIED.
func TestConformOutboxClaim(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		d1, d2 := openTwo(t, b, outbox.Schema)
		core := &conformCore{applied: map[string]int{}, order: map[string][]string{}, balance: map[string]int64{}}
		clk := clock.NewManual(conf0)
		var obs [2]*outbox.Outbox
		for i, db := range []*store.DB{d1, d2} {
			ob, err := outbox.New(outbox.Config{DB: db, Core: core, Clock: clk, Actor: "BANK_001"})
			if err != nil {
				t.Fatal(err)
			}
			obs[i] = ob
		}
		const accounts, per = 8, 25
		var ps []outbox.Posting
		for i := range per {
			for a := range accounts {
				ref := fmt.Sprintf("P-%d-%03d", a, i)
				ps = append(ps, outbox.Posting{Ref: ref, TxID: "TX-" + ref, Bank: "001", Account: fmt.Sprintf("ACC%d", a),
					Kind: outbox.Credit, Amount: int64(i + 1)})
			}
		}
		if err := d1.Write(ctx, func(tx *store.Tx) error {
			for _, p := range ps {
				if _, err := obs[0].Enqueue(ctx, tx, p); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		race(8, func(g int) {
			ob := obs[g%2]
			for {
				res, err := ob.Drain(ctx, 7)
				if err != nil {
					t.Error(err)
					return
				}
				if res.Claimed == 0 {
					c, err := ob.Counts(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					if c[outbox.Pending] == 0 && c[outbox.Claimed] == 0 {
						return
					}
					time.Sleep(time.Millisecond) // another drainer holds the account's head
				}
			}
		})
		core.mu.Lock()
		defer core.mu.Unlock()
		for _, p := range ps {
			if n := core.applied[p.Ref]; n != 1 {
				t.Fatalf("%s applied %d times", p.Ref, n)
			}
		}
		for a := range accounts {
			acct := fmt.Sprintf("ACC%d", a)
			for i, ref := range core.order[acct] {
				if want := fmt.Sprintf("P-%d-%03d", a, i); ref != want {
					t.Fatalf("%s posting %d is %s, want %s (order broken)", acct, i, ref, want)
				}
			}
			if want := int64(per * (per + 1) / 2); core.balance[acct] != want {
				t.Fatalf("%s balance %d, want %d", acct, core.balance[acct], want)
			}
		}
		if c, err := obs[1].Counts(ctx); err != nil || c[outbox.Applied] != len(ps) {
			t.Fatalf("counts %v %v", c, err)
		}
	})
}

// openLedgers opens two handles of one fresh job ledger on b.
func openLedgers(t *testing.T, b storetest.Backend, clk clock.Clock) (*ledger.Ledger, *ledger.Ledger) {
	t.Helper()
	loc := b.Location(t, "ledger")
	var ls [2]*ledger.Ledger
	for i := range ls {
		l, err := ledger.Open(context.Background(), loc, clk)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		ls[i] = l
	}
	return ls[0], ls[1]
}

// The job ledger's lease: 16 racers on two handles; exactly one wins, with
// token 1; every other gets ErrLeaseHeld.
func TestConformLedgerLeaseRace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		t0 := time.Date(2026, 12, 1, 23, 30, 0, 0, clock.JST)
		a, c := openLedgers(t, b, clock.NewManual(t0))
		const n = 16
		var mu sync.Mutex
		var won []ledger.Lease
		held := 0
		race(n, func(i int) {
			l := a
			if i%2 == 1 {
				l = c
			}
			lease, err := l.AcquireLease(context.Background(), "eod", fmt.Sprintf("r%02d", i), time.Minute)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won = append(won, lease)
			case errors.Is(err, ledger.ErrLeaseHeld) && domainerr.Code(err) == "CONCURRENCY_CONFLICT":
				held++
			default:
				t.Errorf("acquire: %v", err)
			}
		})
		if len(won) != 1 || held != n-1 || won[0].Token != 1 {
			t.Fatalf("winners %v, held %d; want exactly one winner with token 1", won, held)
		}
		cur, ok, err := c.CurrentLease(context.Background(), "eod")
		if err != nil || !ok || cur.Holder != won[0].Holder || cur.Token != 1 || !cur.ExpiresAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("lease row = %+v %v %v", cur, ok, err)
		}
	})
}

// The job ledger's fencing: a holder whose lease expired and was taken
// over (on the other handle) is fenced out of every write; the token only
// grows.
func TestConformLedgerFencing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		t0 := time.Date(2026, 12, 1, 23, 30, 0, 0, clock.JST)
		clk := clock.NewManual(t0)
		l, other := openLedgers(t, b, clk)
		old, err := l.AcquireLease(ctx, "eod", "old", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		run, _, err := l.BeginRun(ctx, old, ledger.Begin{Job: "eod", BusinessDate: "2026-12-01", Slot: ledger.DailySlot, Trigger: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.AcquireLease(ctx, "eod", "new", time.Minute); !errors.Is(err, ledger.ErrLeaseHeld) {
			t.Fatalf("acquire over a live lease: %v", err)
		}
		clk.Advance(61 * time.Second)
		cur, err := other.AcquireLease(ctx, "eod", "new", time.Minute)
		if err != nil || cur.Token != 2 {
			t.Fatalf("takeover = %+v, %v; want token 2", cur, err)
		}
		checks := map[string]error{
			"renew":      func() error { _, err := l.RenewLease(ctx, old, time.Minute); return err }(),
			"start step": l.StartStep(ctx, old, run.RunID, 1, "close-date", time.Minute),
			"write": l.WriteFenced(ctx, old, func(tx *store.Tx) error {
				_, err := tx.ExecContext(ctx, `UPDATE JobRuns SET summary = 'stale' WHERE run_id = ?`, run.RunID)
				return err
			}),
			"fail run":   l.FailRun(ctx, old, run.RunID, 1, "close-date", "boom", "step close-date: boom"),
			"finish run": l.FinishRun(ctx, old, run.RunID, "done"),
			"release":    l.ReleaseLease(ctx, old),
		}
		for name, err := range checks {
			if !errors.Is(err, ledger.ErrFenced) || domainerr.Code(err) != "CONCURRENCY_CONFLICT" {
				t.Errorf("%s with stale token: err = %v, want ErrFenced", name, err)
			}
		}
		got, err := other.RunByID(ctx, run.RunID)
		if err != nil || got.Status != ledger.Started || got.Summary != "" || got.Token != 1 {
			t.Fatalf("run after stale writes = %+v, %v; want untouched", got, err)
		}
		if steps, err := other.Steps(ctx, run.RunID); err != nil || len(steps) != 0 {
			t.Fatalf("stale holder wrote steps: %+v %v", steps, err)
		}
		if err := other.ReleaseLease(ctx, cur); err != nil {
			t.Fatal(err)
		}
		next, err := l.AcquireLease(ctx, "eod", "third", time.Minute)
		if err != nil || next.Token != 3 {
			t.Fatalf("after release = %+v, %v; want token 3", next, err)
		}
	})
}
