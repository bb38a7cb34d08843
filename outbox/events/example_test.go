package events_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox/events"
)

func ExampleInstall() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "zcgw-example")
	defer os.RemoveAll(dir)
	db, _ := store.OpenCoordinator(ctx, filepath.Join(dir, "zc.db"))
	defer db.Close()

	log := finality.New(clock.NewManual(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)))
	events.Install(log, events.Producer{}, nil) // every append now also queues its event
	_ = db.Write(ctx, func(tx *store.Tx) error {
		if _, err := log.Append(ctx, tx, finality.Event{TxID: "TX-1", Type: finality.PaymentInitiated, StateTo: "RECEIVED"}); err != nil {
			return err
		}
		_, err := log.Append(ctx, tx, finality.Event{TxID: "TX-1", Type: finality.Settled, StateFrom: "RECEIVED", StateTo: "SETTLED"})
		return err
	})

	ob := events.New(db, nil)
	rows, _ := ob.Unsent(ctx, 10)
	for _, r := range rows {
		m, _ := r.Message()
		fmt.Println(r.OutboxSeq, m.Name, m.Aggregate, m.EventSeq, m.IdempotencyKey)
	}
	// A publisher holds the stream's lease and, once the broker
	// acknowledged row 1, moves the cursor past it.
	lease, _ := ob.AcquireLease(ctx, "node-1/epoch/events", 10*time.Second)
	_, _ = ob.Advance(ctx, lease, 1)
	c, _ := ob.Counts(ctx)
	fmt.Println("acknowledged through", 1, "unsent", c.Unsent)
	// Output:
	// 1 PaymentInitiated TX:TX-1 1 TX:TX-1:PaymentInitiated:ZC:1
	// 2 Settled TX:TX-1 2 TX:TX-1:Settled:ZC:2
	// acknowledged through 1 unsent 1
}
