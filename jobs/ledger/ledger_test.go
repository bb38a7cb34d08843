package ledger

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

var t0 = time.Date(2026, 12, 1, 23, 30, 0, 0, clock.JST)

func openTwo(t *testing.T, clk clock.Clock) (*Ledger, *Ledger) {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	a, err := Open(context.Background(), path, clk)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(context.Background(), path, clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// N goroutines on two handles of one file race for one job's lease:
// exactly one wins, with token 1; every other gets ErrLeaseHeld.
func TestAcquireLeaseRaceHasOneWinner(t *testing.T) {
	clk := clock.NewManual(t0)
	a, b := openTwo(t, clk)
	const n = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []Lease
	held := 0
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := a
			if i%2 == 1 {
				l = b
			}
			<-start
			lease, err := l.AcquireLease(context.Background(), "eod", "r"+string(rune('a'+i)), time.Minute)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won = append(won, lease)
			case errors.Is(err, ErrLeaseHeld) && domainerr.Code(err) == "CONCURRENCY_CONFLICT":
				held++
			default:
				t.Errorf("acquire: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(won) != 1 || held != n-1 || won[0].Token != 1 {
		t.Fatalf("winners %v, held %d; want exactly one winner with token 1", won, held)
	}
	cur, ok, err := a.CurrentLease(context.Background(), "eod")
	if err != nil || !ok || cur.Holder != won[0].Holder || cur.Token != 1 || !cur.ExpiresAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("lease row = %+v %v %v", cur, ok, err)
	}
}

// A holder whose lease expired and was taken over is fenced out of every
// write; the token only grows.
func TestStaleHolderIsFenced(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	l, _ := openTwo(t, clk)
	old, err := l.AcquireLease(ctx, "eod", "old", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	run, _, err := l.BeginRun(ctx, old, Begin{Job: "eod", BusinessDate: "2026-12-01", Slot: DailySlot, Trigger: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AcquireLease(ctx, "eod", "new", time.Minute); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("acquire over a live lease: %v", err)
	}
	clk.Advance(61 * time.Second)
	cur, err := l.AcquireLease(ctx, "eod", "new", time.Minute)
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
		if !errors.Is(err, ErrFenced) || domainerr.Code(err) != "CONCURRENCY_CONFLICT" {
			t.Errorf("%s with stale token: err = %v, want ErrFenced", name, err)
		}
	}
	got, err := l.RunByID(ctx, run.RunID)
	if err != nil || got.Status != Started || got.Summary != "" || got.Token != 1 {
		t.Fatalf("run after stale writes = %+v, %v; want untouched", got, err)
	}
	steps, _ := l.Steps(ctx, run.RunID)
	if len(steps) != 0 {
		t.Fatalf("stale holder wrote steps: %+v", steps)
	}
	if err := l.ReleaseLease(ctx, cur); err != nil {
		t.Fatal(err)
	}
	next, err := l.AcquireLease(ctx, "eod", "third", time.Minute)
	if err != nil || next.Token != 3 {
		t.Fatalf("after release = %+v, %v; want token 3", next, err)
	}
}

func TestCompletedInstanceRefusedUnlessForcedWithReason(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	l, _ := openTwo(t, clk)
	lease, _ := l.AcquireLease(ctx, "eod", "h", time.Minute)
	b := Begin{Job: "eod", BusinessDate: "2026-12-01", Slot: DailySlot, Trigger: "test"}
	run, resumed, err := l.BeginRun(ctx, lease, b)
	if err != nil || resumed || run.RunKey != "daily" || run.Attempts != 1 || run.Status != Started {
		t.Fatalf("begin = %+v %v %v", run, resumed, err)
	}
	if err := l.WriteFenced(ctx, lease, func(tx *store.Tx) error {
		return l.CompleteStep(ctx, tx, run.RunID, 1, "only", "did it")
	}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(1500 * time.Millisecond)
	if err := l.FinishRun(ctx, lease, run.RunID, "1 step"); err != nil {
		t.Fatal(err)
	}
	_, _, err = l.BeginRun(ctx, lease, b)
	if !errors.Is(err, ErrAlreadyCompleted) || domainerr.Code(err) != "ALREADY_PROCESSED" {
		t.Fatalf("second begin: %v", err)
	}
	forced := b
	forced.Force, forced.ForcedBy = true, "alice"
	if _, _, err := l.BeginRun(ctx, lease, forced); !errors.Is(err, ErrForceReason) || domainerr.Code(err) != "MISSING_FIELD" {
		t.Fatalf("force without reason: %v", err)
	}
	forced.Reason = "core file was resent"
	clk.Advance(time.Hour)
	re, _, err := l.BeginRun(ctx, lease, forced)
	if err != nil {
		t.Fatal(err)
	}
	if re.RunKey != "daily/rerun-1" || re.Rerun != 1 || re.ForcedBy != "alice" || re.ForceReason != "core file was resent" ||
		!re.ForcedAt.Equal(t0.Add(time.Hour+1500*time.Millisecond)) || re.SupersedesRunID != run.RunID {
		t.Fatalf("forced run = %+v", re)
	}
	first, _ := l.RunByID(ctx, run.RunID)
	if first.Status != Completed || first.DurationMS != 1500 || first.Summary != "1 step" ||
		first.EndedAt.Sub(first.StartedAt) != 1500*time.Millisecond {
		t.Fatalf("first run = %+v", first)
	}
	if d, _ := l.LastCompletedDate(ctx, "eod", DailySlot); d != "2026-12-01" {
		t.Fatalf("last completed = %q", d)
	}
	if _, err := l.RunByID(ctx, 999); !errors.Is(err, ErrRunNotFound) || domainerr.Code(err) != "NOT_FOUND" {
		t.Fatalf("missing run: %v", err)
	}
}

func TestPruneKeepsDailyInstances(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	l, _ := openTwo(t, clk)
	lease, _ := l.AcquireLease(ctx, "any", "h", time.Minute)
	for _, b := range []Begin{
		{Job: "any", BusinessDate: "2026-10-01", Slot: "10:00"},
		{Job: "any", BusinessDate: "2026-10-01", Slot: DailySlot},
		{Job: "any", BusinessDate: "2026-11-30", Slot: "10:00"},
	} {
		b.Trigger = "test"
		run, _, err := l.BeginRun(ctx, lease, b)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.WriteFenced(ctx, lease, func(tx *store.Tx) error { return l.CompleteStep(ctx, tx, run.RunID, 1, "s", "") }); err != nil {
			t.Fatal(err)
		}
		if err := l.FinishRun(ctx, lease, run.RunID, ""); err != nil {
			t.Fatal(err)
		}
	}
	var n int64
	if err := l.WriteFenced(ctx, lease, func(tx *store.Tx) (err error) {
		n, err = PruneRepeatingRuns(ctx, tx, "2026-11-01")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	runs, _ := l.History(ctx, Filter{})
	if n != 1 || len(runs) != 2 || runs[0].BusinessDate != "2026-11-30" || runs[1].Slot != DailySlot {
		t.Fatalf("pruned %d, left %+v", n, runs)
	}
}
