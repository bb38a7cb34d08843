package filedrop

import (
	"context"
	"time"
)

// Watcher polls the banks' folders while a server runs.
//
// Wiring in `zcgw serve` (gateway/node): build the Processor on the
// coordinator database with the orchestrator as Coordinator and its
// participant registry as Participants, then run the watcher beside the
// orchestrator's workers and the batch-window job:
//
//	p, err := filedrop.New(filedrop.Config{DB: db, Coordinator: orch,
//		Participants: orch.Participants(), Root: dataDir, Banks: banks, Logger: log})
//	...
//	go filedrop.NewWatcher(p, time.Second).Run(ctx)
type Watcher struct {
	p        *Processor
	interval time.Duration
}

// NewWatcher returns a Watcher polling every interval (default 1s).
func NewWatcher(p *Processor, interval time.Duration) *Watcher {
	if interval <= 0 {
		interval = time.Second
	}
	return &Watcher{p: p, interval: interval}
}

// Run polls until ctx is done and returns ctx's error. A failed pass is
// logged (filedrop.poll_failed) and retried on the next tick: a file
// whose apply stopped stays in processing and is resumed.
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		_, _ = w.p.PollOnce(ctx) // errors are logged by PollOnce
		t.Reset(w.interval)
	}
}
