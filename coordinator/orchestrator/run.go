package orchestrator

import (
	"context"
	"sync"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
)

func (o *Orchestrator) runOnce(ctx context.Context) (int, error) {
	items, _, err := o.claim(ctx, o.cfg.WorkerID, o.cfg.BatchSize)
	if err != nil {
		return 0, err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, o.cfg.Concurrency)
	)
	// Items of one transfer run one after another in one goroutine.
	for _, seq := range byTransfer(items) {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			for _, it := range seq {
				if err := o.process(ctx, it, o.cfg.WorkerID, o.work); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return len(items), first
}

// byTransfer groups items by transfer, in claim order.
func byTransfer(items []Item) [][]Item {
	var out [][]Item
	at := map[string]int{}
	for _, it := range items {
		if i, ok := at[it.TxID]; ok {
			out[i] = append(out[i], it)
			continue
		}
		at[it.TxID] = len(out)
		out = append(out, []Item{it})
	}
	return out
}

// run is Run's loop: claim what is due while there is room, hand each
// item to the pool, sleep until a poke, a completion or the timer.
func (o *Orchestrator) run(ctx context.Context, idle time.Duration) error {
	if idle <= 0 {
		idle = 50 * time.Millisecond
	}
	backstop := idle
	switch o.clk.(type) {
	case clock.System, *clock.System:
		backstop = time.Second
	}
	if _, err := o.TakeBackEarlierClaims(ctx); err != nil && ctx.Err() == nil {
		o.log.ErrorContext(ctx, "orchestrator.take_back_failed", "error", err.Error())
	}
	p := &pool{o: o, busy: map[string][]Item{}, done: make(chan struct{}, 1)}
	defer p.wg.Wait()
	timer := time.NewTimer(backstop)
	defer timer.Stop()
	for {
		gen := o.wake.wait() // before the claim: a poke during it is not lost
		sleep := backstop
		if free := o.cfg.Concurrency - p.claimed(); free > 0 {
			limit := min(free, o.cfg.BatchSize)
			items, next, err := o.claim(ctx, o.cfg.WorkerID, limit)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				o.log.ErrorContext(ctx, "orchestrator.run_failed", "error", err.Error())
			}
			for _, it := range items {
				p.start(ctx, it)
			}
			if len(items) == limit {
				continue // more may be due: claim again while there is room
			}
			if !next.IsZero() {
				sleep = min(max(next.Sub(o.clk.Now()), time.Millisecond), backstop)
			}
		}
		timer.Reset(sleep)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-gen:
		case <-p.done:
		case <-timer.C:
		}
	}
}

// pool works the items Run claimed, each in its own goroutine; an item
// whose transfer already has one running waits behind it.
type pool struct {
	o    *Orchestrator
	wg   sync.WaitGroup
	done chan struct{} // a completion (capacity 1: completions coalesce)

	mu   sync.Mutex
	n    int               // items claimed and not finished
	busy map[string][]Item // txid -> items waiting behind the running one
}

func (p *pool) claimed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func (p *pool) start(ctx context.Context, it Item) {
	p.mu.Lock()
	p.n++
	if q, running := p.busy[it.TxID]; running {
		p.busy[it.TxID] = append(q, it)
		p.mu.Unlock()
		return
	}
	p.busy[it.TxID] = nil
	p.mu.Unlock()
	p.wg.Add(1)
	go p.work(ctx, it)
}

// work runs it, then whatever of its transfer queued behind it.
func (p *pool) work(ctx context.Context, it Item) {
	defer p.wg.Done()
	for {
		if err := p.o.process(ctx, it, p.o.cfg.WorkerID, p.o.work); err != nil && ctx.Err() == nil {
			p.o.log.ErrorContext(ctx, "orchestrator.run_failed", "txid", it.TxID, "error", err.Error())
		}
		p.mu.Lock()
		p.n--
		q := p.busy[it.TxID]
		if len(q) == 0 {
			delete(p.busy, it.TxID)
		} else {
			it, p.busy[it.TxID] = q[0], q[1:]
		}
		p.mu.Unlock()
		select {
		case p.done <- struct{}{}:
		default:
		}
		if len(q) == 0 {
			return
		}
	}
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
