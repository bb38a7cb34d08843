package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// Run works many transfers at once and is woken by Submit, not by a poll:
// its backstop here is an hour, so a transfer settles only because the
// enqueue poked the loop. Once everything is done it makes no commit at
// all while idle, and it returns ctx's error when stopped.
func TestRunWakesOnSubmitAndIsIdleWithoutWork(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Concurrency, c.BatchSize = 16, 4 })
	var inFlight, most atomic.Int32
	f.b.onCall = func(bankapi.Command) {
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(2 * time.Millisecond) // a bank's answer takes a while
		inFlight.Add(-1)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- f.o.Run(ctx, time.Hour) }()

	const n = 40
	for i := range n {
		f.submit(pi("EXPRESS", 100), fmt.Sprintf("run-%02d", i))
	}
	settled := func() int { return f.count(`SELECT COUNT(*) FROM Transactions WHERE state = 'SETTLED'`) }
	open := func() int { return f.count(`SELECT COUNT(*) FROM OrchestratorQueue WHERE status <> 'DONE'`) }
	for deadline := time.Now().Add(30 * time.Second); settled() < n || open() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d settled, %d work items not DONE: the loop was not woken", settled(), n, open())
		}
	}
	if most.Load() < 2 {
		t.Errorf("at most %d bank call in flight, want several transfers worked at once", most.Load())
	}
	// Idle: no claim, no commit.
	time.Sleep(50 * time.Millisecond) // the last completions' claims
	before := f.db.Stats()
	time.Sleep(300 * time.Millisecond)
	if after := f.db.Stats(); after != before {
		t.Errorf("idle loop ran %d statements and %d commits in 300ms, want none",
			after.Statements-before.Statements, after.Commits-before.Commits)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v, want context.Canceled", err)
	}
}

// A retry's backoff is a timer, not a poll: the loop sleeps until the
// retried item is due (here the manual clock is moved past it, and the
// loop's idle bound is what notices a manual clock's jump).
func TestRunRetriesOnItsTimer(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Concurrency, c.BatchSize = 4, 4 })
	f.b.failWith(bankapi.ReserveFunds, domainerr.New("BANK_TIMEOUT", "no answer", nil), true)
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f.o.Run(ctx, 20*time.Millisecond) }()
	res := f.submit(pi("EXPRESS", 100), "retry-1")
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	waitFor("the retry to be scheduled", func() bool {
		return f.count(`SELECT COUNT(*) FROM OrchestratorQueue WHERE txid = ? AND status = 'READY' AND attempts = 1`, res.TxID) == 1
	})
	f.clk.Advance(2 * time.Second) // past the 1s backoff
	waitFor("the transfer to settle", func() bool { return f.view(res.TxID).State == "SETTLED" })
	cancel()
	<-done
}
