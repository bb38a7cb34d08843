package orchestrator

import (
	"context"
	"sync"

	"github.com/zcgw/zcgw/coordinator/store"
)

func (o *Orchestrator) runOnce(ctx context.Context) (int, error) {
	items, err := o.claim(ctx, o.cfg.WorkerID, o.cfg.BatchSize)
	if err != nil {
		return 0, err
	}
	if o.cfg.Concurrency <= 1 || len(items) <= 1 {
		for _, it := range items {
			if err := o.process(ctx, it, o.cfg.WorkerID, o.work); err != nil {
				return len(items), err
			}
		}
		return len(items), nil
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, o.cfg.Concurrency)
	)
	for _, it := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := o.process(ctx, it, o.cfg.WorkerID, o.work); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return len(items), first
}

// process runs fn for a claimed item and records the outcome with the
// retry policy. Only a failure to record the outcome is returned.
func (o *Orchestrator) process(ctx context.Context, it Item, worker string, fn func(context.Context, Item) error) error {
	c := &claim{it: it, worker: worker}
	runErr := fn(withClaim(ctx, c), it)
	if runErr == nil && c.finished {
		return nil // completed inside the run's last commit
	}
	return o.db.Write(ctx, func(tx *store.Tx) error {
		_, err := o.finish(ctx, tx, it, worker, runErr)
		return err
	})
}

// RunUntilIdle works the queue until no item is due now (then it returns
// how many items it processed). Items scheduled later (backoff, waits) are
// left for later rounds.
func (o *Orchestrator) RunUntilIdle(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := o.RunOnce(ctx)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}
