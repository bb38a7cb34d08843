package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// A reason code of each category, so the policy is checked for all nine.
var codeOf = map[domainerr.Category]string{
	domainerr.Validation: "INVALID_REQUEST",
	domainerr.Auth:       "UNAUTHORIZED",
	domainerr.NotFound:   "ACCOUNT_NOT_FOUND",
	domainerr.Conflict:   "STATE_GUARD",
	domainerr.RateLimit:  "RATE_LIMITED",
	domainerr.Invariant:  "INVARIANT_VIOLATION",
	domainerr.Internal:   "ZC_SIGNING_NOT_CONFIGURED",
	domainerr.Downstream: "BANK_ERROR",
	domainerr.Timeout:    "BANK_TIMEOUT",
}

// TestQueueRetryPolicyEveryCategory runs a transfer whose first bank call
// fails with an error of each category (and one that is not a
// DomainError) through the real queue, and checks the work item and the
// Cases table: DOWNSTREAM, TIMEOUT, RATE_LIMIT and non-DomainErrors are
// retried after the backoff; every other category is acknowledged and
// escalated to exactly one Case.
func TestQueueRetryPolicyEveryCategory(t *testing.T) {
	if len(codeOf) != len(domainerr.Categories) {
		t.Fatalf("table covers %d categories, catalog has %d", len(codeOf), len(domainerr.Categories))
	}
	type tc struct {
		name  string
		err   error
		retry bool
	}
	var cases []tc
	for _, c := range domainerr.Categories {
		code := codeOf[c]
		if domainerr.CategoryOf(code) != c {
			t.Fatalf("%s is %s, not %s", code, domainerr.CategoryOf(code), c)
		}
		cases = append(cases, tc{string(c), domainerr.New(code, "injected", nil),
			c == domainerr.Downstream || c == domainerr.Timeout || c == domainerr.RateLimit})
	}
	cases = append(cases, tc{"not_a_domain_error", errors.New("connection reset by peer"), true})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.b.failWith(bankapi.ReserveFunds, c.err, true)
			r := f.submit(pi(LaneExpress, 1000), "k-"+c.name)
			if n, err := f.o.RunOnce(f.ctx); err != nil || n != 1 {
				t.Fatalf("RunOnce = %d, %v", n, err)
			}
			items, err := f.o.QueueItems(f.ctx, r.TxID)
			if err != nil || len(items) != 1 {
				t.Fatalf("items %v %v", items, err)
			}
			it := items[0]
			cases := f.count(`SELECT COUNT(*) FROM Cases WHERE related_txid = ?`, r.TxID)
			if c.retry {
				if it.Status != StatusReady || it.Attempts != 1 || it.NextAttemptAt != "2026-12-02T01:00:01.000000000Z" || cases != 0 {
					t.Fatalf("retry expected: %+v, cases %d", it, cases)
				}
				// Not due before the backoff; due after it, and then it settles.
				if n, _ := f.o.RunOnce(f.ctx); n != 0 {
					t.Fatal("item ran before its backoff elapsed")
				}
				f.clk.Advance(time.Second)
				f.run()
				if v := f.view(r.TxID); v.State != "SETTLED" {
					t.Fatalf("after retry: %s", v.State)
				}
				return
			}
			if it.Status != StatusAcked || it.CaseID == "" || cases != 1 || it.LastErrorCategory != c.name {
				t.Fatalf("ack expected: %+v, cases %d", it, cases)
			}
			f.clk.Advance(time.Hour)
			if n, _ := f.o.RunOnce(f.ctx); n != 0 {
				t.Fatal("an acked item ran again")
			}
			if got := f.count(`SELECT COUNT(*) FROM Cases WHERE case_id = ? AND reason_code = ?`, it.CaseID, codeOf[domainerr.Category(c.name)]); got != 1 {
				t.Fatalf("case row with the error's reason code: %d", got)
			}
			if v := f.view(r.TxID); v.Case.CaseID != it.CaseID || v.NextActionHint != HintOpenCase {
				t.Fatalf("view: %+v", v)
			}
		})
	}
}

func TestPolicy(t *testing.T) {
	for _, c := range domainerr.Categories {
		want := Ack
		if domainerr.Retryable(c) {
			want = Retry
		}
		if got := Policy(domainerr.New(codeOf[c], "", nil)); got != want {
			t.Errorf("%s: %s, want %s", c, got, want)
		}
	}
	if Policy(fmt.Errorf("wrapped: %w", errors.New("io"))) != Retry {
		t.Error("a non-DomainError must be retried")
	}
	if Policy(fmt.Errorf("wrapped: %w", domainerr.New("STATE_GUARD", "", nil))) != Ack {
		t.Error("a wrapped CONFLICT must be acked")
	}
}

func TestBackoffDoublesUpToMax(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Backoff = Backoff{Base: time.Second, Max: 10 * time.Second} })
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 9: 10 * time.Second} {
		if got := f.o.backoff(n); got != want {
			t.Errorf("attempt %d: %v, want %v", n, got, want)
		}
	}
}

// TestClaimRace races N workers (each its own Orchestrator on the shared
// database, as separate processes would be) over M transfers: every work
// item is claimed and processed exactly once, and every transfer settles
// once. On each backend (storetest): it is the work-queue claim scenario
// of the store conformance suite (test/storeconf).
func TestClaimRace(t *testing.T) {
	storetest.Each(t, testClaimRace)
}

func testClaimRace(t *testing.T, b storetest.Backend) {
	f := newFixtureOn(t, b, nil)
	const m, workers = 40, 8
	var ids []string
	for i := 0; i < m; i++ {
		ids = append(ids, f.submit(pi(LaneExpress, int64(1000+i)), fmt.Sprintf("race-%d", i)).TxID)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	claimed := map[string]int{}
	for w := 0; w < workers; w++ {
		o, err := New(Config{DB: f.db, Banks: f.b, Clock: f.clk, WorkerID: fmt.Sprintf("w%d", w), BatchSize: 3})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				items, _, err := o.claim(f.ctx, o.cfg.WorkerID, o.cfg.BatchSize)
				if err != nil {
					t.Error(err)
					return
				}
				if len(items) == 0 {
					return
				}
				for _, it := range items {
					mu.Lock()
					claimed[it.ID]++
					mu.Unlock()
					if err := o.process(f.ctx, it, o.cfg.WorkerID, o.work); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	f.run() // nothing left: every item above ran to completion
	for _, id := range ids {
		if claimed[itemID(KindDrive, id)] != 1 {
			t.Errorf("%s claimed %d times", id, claimed[itemID(KindDrive, id)])
		}
		if v := f.view(id); v.State != "SETTLED" {
			q, _ := f.o.QueueItems(f.ctx, id)
			t.Errorf("%s: %s %+v", id, v.State, q)
		}
	}
	if n := f.b.count(bankapi.ExecuteDebit); n != m {
		t.Errorf("execute-debit called %d times for %d transfers", n, m)
	}
	if n := f.count(`SELECT COUNT(*) FROM FinalityLog WHERE event_type = 'Settled'`); n != m {
		t.Errorf("%d Settled entries, want %d", n, m)
	}
}

// TestExpiredLeaseIsTakenOver: a worker that claimed an item and died
// leaves it CLAIMED; after the lease another worker takes it, and the dead
// worker's late outcome is not recorded.
func TestExpiredLeaseIsTakenOver(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Lease = 30 * time.Second })
	r := f.submit(pi(LaneExpress, 1000), "lease")
	items, _, err := f.o.claim(f.ctx, "dead", 10)
	if err != nil || len(items) != 1 {
		t.Fatal(items, err)
	}
	if n, _ := f.o.RunOnce(f.ctx); n != 0 {
		t.Fatal("a claimed item was taken before its lease expired")
	}
	f.clk.Advance(time.Minute + time.Second)
	f.run()
	if v := f.view(r.TxID); v.State != "SETTLED" {
		t.Fatalf("state %s", v.State)
	}
	// The dead worker wakes up and reports a failure: nothing changes.
	if err := f.o.process(f.ctx, items[0], "dead", func(ctx context.Context, it Item) error { return errors.New("late") }); err != nil {
		t.Fatal(err)
	}
	q, _ := f.o.QueueItems(f.ctx, r.TxID)
	for _, it := range q {
		if it.Kind == KindDrive && it.Status != StatusDone {
			t.Fatalf("late outcome recorded: %+v", it)
		}
	}
}
