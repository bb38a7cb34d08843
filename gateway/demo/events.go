package demo

import (
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox/events"
)

// EventOutbox is what the event outbox holds at the end of the day.
type EventOutbox struct {
	Rows   int64 // rows in EventOutbox
	Unsent int64 // of which not yet published (all of them: no broker is configured)
	Chains int   // chains with events
}

// checkEvents: with no Kafka brokers configured every event stays in the
// event outbox; every FinalityLog entry of every chain has exactly one row,
// numbered 1, 2, 3 … per chain (spec 002 §12.5).
func (d *day) checkEvents() error {
	d.section("events: no Kafka configured, so they wait in the event outbox (outbox/events)")
	ob := events.New(d.n.DB, d.clk)
	c, err := ob.Counts(d.ctx)
	if err != nil {
		return err
	}
	perChain := map[string]int64{}
	if err := ob.Tail(d.ctx, 0, false, 0, func(r events.Row) error {
		perChain[r.ChainID]++
		if r.EventSeq != perChain[r.ChainID] {
			return violated(InvEventOutbox, "chain %s: event %s has event_seq %d, want %d", r.ChainID, r.LogID, r.EventSeq, perChain[r.ChainID])
		}
		return nil
	}); err != nil {
		return err
	}
	logged := map[string]int64{}
	if err := d.n.DB.Read(d.ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(d.ctx, `SELECT COALESCE(txid, gtid, 'GLOBAL'), COUNT(*) FROM FinalityLog GROUP BY 1`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var chain string
			var n int64
			if err := rows.Scan(&chain, &n); err != nil {
				return err
			}
			logged[chain] = n
		}
		return rows.Err()
	}); err != nil {
		return err
	}
	for chain, n := range logged {
		if perChain[chain] != n {
			return violated(InvEventOutbox, "chain %s: %d FinalityLog entries, %d event outbox rows", chain, n, perChain[chain])
		}
	}
	if len(perChain) != len(logged) {
		return violated(InvEventOutbox, "event outbox has %d chains, the FinalityLog %d", len(perChain), len(logged))
	}
	d.sum.Events = EventOutbox{Rows: c.Total, Unsent: c.Unsent, Chains: len(perChain)}
	d.printf("  %d events on %d chains, %d unsent: one per FinalityLog entry, in order per chain (`zcgw events tail` follows them)\n",
		c.Total, len(perChain), c.Unsent)
	if first, err := ob.Since(d.ctx, 0, 1); err == nil && len(first) == 1 {
		m, err := first[0].Message()
		if err != nil {
			return violated(InvEventOutbox, "event %s does not decode: %v", first[0].LogID, err)
		}
		d.printf("  the first: key %s, event_seq %d, %s (message_id %s, producer %s)\n", first[0].ChainID, m.EventSeq, m.Name, m.MessageID, m.Producer.OrgID)
	} else if err != nil {
		return err
	}
	if c.Unsent != c.Total {
		return violated(InvEventOutbox, "%d of %d events marked sent with no broker configured", c.Total-c.Unsent, c.Total)
	}
	return nil
}
