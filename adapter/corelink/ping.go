package corelink

import (
	"context"
	"fmt"
)

// Ping inquires the core's request queue on the link's connection (MQINQ):
// nil when the queue manager answers. It puts and gets nothing, so it is a
// cheap readiness probe.
func (l *Link) Ping(ctx context.Context) error {
	if _, err := l.conn.Queue(ctx, l.cfg.RequestQueue); err != nil {
		return fmt.Errorf("corelink %s: inquire %s: %w", l.cfg.Bank, l.cfg.RequestQueue, err)
	}
	return nil
}
