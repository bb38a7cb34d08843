package scheduler

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/zcgw/zcgw/coordinator/store/storetest"
	"github.com/zcgw/zcgw/jobs/ledger"
)

// Three schedulers, each on its own handle of one shared database (three
// nodes on one PostgreSQL), race four goroutines each to run eod for each
// of five business dates in turn: every date runs exactly once (one COMPLETED
// instance, every step's effect written once), the losers are refused
// with the lease held or the instance completed, and never with anything
// else.
func TestSchedulersOnOneDatabaseRunEachDateOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		p := newProbe()
		e := newEnvAt(t, b.Location(t, "zc"), p.job("eod"))
		runners := []*Runner{e.r, e.runner(t, e.openLedger(t), "node-b/1/scheduler", nil), e.runner(t, e.openLedger(t), "node-c/1/scheduler", nil)}
		dates := []string{"2026-11-25", "2026-11-26", "2026-11-27", "2026-11-30", "2026-12-01"}
		var mu sync.Mutex
		completed := map[string]int{}
		// The job's lease is one per job (one eod at a time), so the dates
		// follow one another, as the cron and its catch-up fire them; the
		// nodes race for each.
		for _, date := range dates {
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range 3 * 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, err := runners[i%3].Run(context.Background(), Request{Job: "eod", BusinessDate: date, Trigger: "test"})
					switch {
					case err == nil:
						mu.Lock()
						completed[date]++
						mu.Unlock()
					case errors.Is(err, ledger.ErrLeaseHeld), errors.Is(err, ledger.ErrAlreadyCompleted):
					default:
						t.Errorf("%s: %v", date, err)
					}
				}()
			}
			close(start)
			wg.Wait()
		}
		effects := e.effects(t)
		for _, d := range dates {
			if completed[d] != 1 {
				t.Errorf("%s completed %d times, want once", d, completed[d])
			}
			for _, step := range []string{"s1", "s3"} {
				if n := effects[step+"@"+d]; n != 1 {
					t.Errorf("%s effect of %s written %d times", d, step, n)
				}
			}
		}
		runs, err := e.led.History(context.Background(), ledger.Filter{Job: "eod"})
		if err != nil {
			t.Fatal(err)
		}
		perDate := map[string]int{}
		for _, r := range runs {
			if r.Status != ledger.Completed {
				t.Errorf("run %+v not completed", r)
			}
			perDate[r.BusinessDate]++
		}
		if len(runs) != len(dates) {
			t.Errorf("%d runs for %d dates: %v", len(runs), len(dates), perDate)
		}
	})
}
