package corelink

import (
	"context"
	"errors"
	"fmt"

	"github.com/zcgw/zcgw/adapter/mq"
)

// Ping inquires the core's request queue on the link's connection (MQINQ):
// nil when the queue manager answers. It puts and gets nothing, so it is a
// cheap readiness probe.
func (l *Link) Ping(ctx context.Context) error {
	if _, err := l.connection().Queue(ctx, l.cfg.RequestQueue); err != nil {
		return fmt.Errorf("corelink %s: inquire %s: %w", l.cfg.Bank, l.cfg.RequestQueue, err)
	}
	return nil
}

// ErrNoDepth is returned by Depths when the link's MQ backend cannot read
// queue depths (it does not implement mq.DepthInquirer).
var ErrNoDepth = errors.New("corelink: the MQ backend does not report queue depths")

// QueueDepth is one queue's current depth.
type QueueDepth struct {
	Queue string
	Depth int64
}

// Depths inquires the current depth of the link's request, reply and
// backout queues (MQINQ CURDEPTH), in that order; ErrNoDepth when the
// backend cannot say.
func (l *Link) Depths(ctx context.Context) ([]QueueDepth, error) {
	di, ok := l.connection().(mq.DepthInquirer)
	if !ok {
		return nil, ErrNoDepth
	}
	out := make([]QueueDepth, 0, 3)
	for _, q := range []string{l.cfg.RequestQueue, l.cfg.ReplyQueue, l.cfg.BackoutQueue} {
		n, err := di.Depth(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("corelink %s: depth of %s: %w", l.cfg.Bank, q, err)
		}
		out = append(out, QueueDepth{Queue: q, Depth: n})
	}
	return out, nil
}
