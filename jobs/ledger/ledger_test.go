package ledger

import (
	"context"
	"errors"
	"path/filepath"
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
