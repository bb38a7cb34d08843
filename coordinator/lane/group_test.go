package lane

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// With group commit the primitives keep every guarantee: one winner per
// race, each call all-or-nothing, read-only refusal.
func TestGroupCommitKeepsPrimitiveGuarantees(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	g := e.lanes
	const rows = 8
	ids := []string{"TX-G0", "TX-G1", "TX-G2", "TX-G3", "TX-G4", "TX-G5", "TX-G6", "TX-G7"}
	for _, id := range ids {
		e.seedTx(t, id, HReserved, OwnerZC)
		e.reserveH(t, id, "001", 100)
	}
	commitsBefore := e.db.Stats().Commits
	var wg sync.WaitGroup
	start := make(chan struct{})
	var cancels, decides, failed atomic.Int32
	for i := 0; i < rows*racers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			id := ids[i%rows]
			switch i % 3 {
			case 0:
				res, err := g.CancelInFlightTx(ctx, Cancel{TxID: id, ReasonCode: "TIMELOCK_EXPIRED"})
				if err != nil {
					t.Error(err)
				} else if res.Applied {
					cancels.Add(1)
				}
			case 1:
				res, err := g.TransitionWithLog(ctx, Transition{TxID: id, From: HReserved, To: DecidedToSettle, EventType: finality.DecidedToSettle})
				if err != nil {
					t.Error(err)
				} else if res.Applied {
					decides.Add(1)
				}
			default: // a caller whose side update fails must not disturb the group
				_, err := g.TransitionWithLog(ctx, Transition{TxID: id, From: HReserved, To: DecidedToSettle, EventType: finality.DecidedToSettle,
					SideUpdates: func(context.Context, *store.Tx) error { return errInjected }})
				if err != nil && !errors.Is(err, errInjected) {
					t.Error(err)
				}
				if err != nil {
					failed.Add(1)
				}
			}
		}(i)
	}
	close(start)
	wg.Wait()
	if cancels.Load()+decides.Load() != rows {
		t.Fatalf("winners %d cancels + %d decisions, want exactly one per row (%d)", cancels.Load(), decides.Load(), rows)
	}
	var released int64
	for _, id := range ids {
		r := e.row(t, id)
		if r.Version != 1 || r.Logs != 2 || (r.State != DecidedCancel && r.State != DecidedToSettle) {
			t.Fatalf("%s: %+v", id, r)
		}
		if r.State == DecidedCancel {
			released += 100
		}
	}
	if used, _ := e.hUsed(t, "001"); used != int64(rows)*100-released {
		t.Fatalf("h_used %d, want %d (released only for cancelled rows)", used, int64(rows)*100-released)
	}
	t.Logf("%d calls in %d commits; %d failed side updates rolled back alone", rows*racers, e.db.Stats().Commits-commitsBefore, failed.Load())
	e.verify(t)

	if _, _, err := e.modes.ActivateBCP(ctx, "op", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.InsertTxWithLog(ctx, newTx("TX-RO")); domainerr.Code(err) != "SYSTEM_BCP_READ_ONLY" {
		t.Fatalf("grouped insert in BCP: %v", err)
	}
}
