package demo

import (
	"fmt"
	"time"

	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/outbox"
)

// OfflineCore is what happened while a core was offline.
type OfflineCore struct {
	Bank    string
	Queued  int // postings waiting in the adapter's outbox while the core was offline
	Drained int // of those, applied once the core returned
}

// LostReply is the posting whose reply the core lost.
type LostReply struct {
	Bank    string
	TxID    string
	Sends   int    // times the posting was sent to the core (1: never resent blindly)
	Lookups int    // inquiries by reference that resolved it
	Status  string // APPLIED
	Journal int    // journal lines of the transfer at the core (1: applied once)
}

// outboxOpen counts a bank's MQ postings not yet settled with its core
// (pending, claimed or in doubt). Postings routed to the overnight file
// wait for the night's exchange (overnight) and are not counted.
func (d *day) outboxOpen(bank string) (int, error) {
	// One read, so the count is a snapshot: the drainers move rows between
	// PENDING and CLAIMED while a core is offline, and separate reads per
	// status could miss a row in transit.
	es, err := d.n.Banks[bank].Adapter.Outbox().List(d.ctx, outbox.Filter{Route: outbox.RouteMQ, Limit: 100_000})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range es {
		switch e.Status {
		case outbox.Pending, outbox.Claimed, outbox.InDoubt:
			n++
		}
	}
	return n, nil
}

// drainAll waits until no bank has an MQ posting pending, claimed or in
// doubt (the node's drainers do the work).
func (d *day) drainAll(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		open := map[string]int{}
		total := 0
		for _, b := range banks {
			n, err := d.outboxOpen(b.ID)
			if err != nil {
				return err
			}
			open[b.ID], total = n, total+n
		}
		if total == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return violated(InvOfflineDrained, "postings still open with the cores after %s: %v", limit, open)
		}
		if err := d.pause(20 * time.Millisecond); err != nil {
			return err
		}
	}
}

// quiesce waits until the node has nothing in flight for the day's
// transfers: no orchestrator work item ready or claimed (a settled
// transfer still sends its credit-notify and debit-settled) and every
// outbox settled with its core. The scheduler's jobs then see the day as
// it stands.
func (d *day) quiesce(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		busy := 0
		for _, t := range d.transfers {
			items, err := d.n.Orchestrator.QueueItems(d.ctx, t.TxID)
			if err != nil {
				return err
			}
			for _, it := range items {
				if it.Status == orchestrator.StatusReady || it.Status == orchestrator.StatusClaimed {
					busy++
				}
			}
		}
		if busy == 0 {
			return d.drainAll(limit)
		}
		if time.Now().After(deadline) {
			return violated(InvTransfersFinal, "orchestrator still has %d work items in flight after %s", busy, limit)
		}
		if err := d.pause(20 * time.Millisecond); err != nil {
			return err
		}
	}
}

// offline takes bank 002's core offline (an unplanned batch run), lets
// transfers to and from it settle at the coordinator while its postings
// wait in the adapter's outbox, then brings the core back and drains them.
func (d *day) offline() error {
	const bank = "002"
	// The morning's postings (a settled transfer still sends its
	// notifications) reach the cores first, so that what waits in the
	// outbox below is exactly what was queued while the core was offline.
	if err := d.quiesce(20 * time.Second); err != nil {
		return err
	}
	d.section("bank " + bank + "'s core goes offline (coresim SetOffline)")
	core := d.n.Banks[bank].Core
	core.SetOffline(true)
	var ts []*Transfer
	for _, s := range []struct {
		label, from, to string
		amount          int64
	}{
		{"payee's core offline", "001/SATO", "002/KOBAYASHI", 30_000},
		{"payer's core offline", "002/YAMADA", "001/SATO", 10_000},
	} {
		t, err := d.send(s.label, orchestrator.LaneExpress, s.from, s.to, s.amount, "SETTLED")
		if err != nil {
			return err
		}
		ts = append(ts, t)
	}
	if err := d.wait(20*time.Second, ts...); err != nil {
		return err
	}
	d.printFinal(ts...)
	queued, err := d.outboxOpen(bank)
	if err != nil {
		return err
	}
	yamada, err := core.Balance(d.ctx, accountByKey("002/YAMADA").Core())
	if err != nil {
		return err
	}
	d.printf("  decided and settled at ZC; bank %s's postings wait in its adapter outbox: %d open; YAMADA at the core still %s\n",
		bank, queued, yen(yamada.Balance))
	if queued != len(ts) {
		return violated(InvOfflineDrained, "bank %s's outbox holds %d open postings while its core is offline, want %d", bank, queued, len(ts))
	}
	d.section("bank " + bank + "'s core is back: the outbox drains")
	core.SetOffline(false)
	if err := d.drainAll(20 * time.Second); err != nil {
		return err
	}
	applied := 0
	for _, t := range ts {
		es, err := d.n.Banks[bank].Adapter.Outbox().List(d.ctx, outbox.Filter{TxID: t.TxID})
		if err != nil {
			return err
		}
		for _, e := range es {
			if e.Status == outbox.Applied {
				applied++
			}
		}
	}
	after, err := core.Balance(d.ctx, accountByKey("002/YAMADA").Core())
	if err != nil {
		return err
	}
	d.printf("  %d postings applied at bank %s's core; YAMADA now %s\n", applied, bank, yen(after.Balance))
	d.sum.Offline = OfflineCore{Bank: bank, Queued: queued, Drained: applied}
	if applied != queued {
		return violated(InvOfflineDrained, "%d postings queued while bank %s was offline, %d applied after it returned", queued, bank, applied)
	}
	return nil
}

// lostReply makes bank 001's core lose the reply to the next request it
// serves (it applies the posting, the reply never arrives). The outbox
// marks the posting IN_DOUBT after the reply timeout and resolves it by an
// inquiry by reference, instead of sending it again to a core that is not
// idempotent: the customer is debited exactly once.
func (d *day) lostReply() error {
	const bank = "001"
	d.section("bank " + bank + "'s core loses a reply (coresim fault DropNextReply)")
	b := d.n.Banks[bank]
	b.Core.InjectFaultsForTest(coresim.Faults{DropNextReply: 1})
	t, err := d.send("reply to the debit posting lost", orchestrator.LaneExpress, "001/SUZUKI", "002/KOBAYASHI", 7_000, "SETTLED")
	if err != nil {
		return err
	}
	if err := d.wait(20*time.Second, t); err != nil {
		return err
	}
	d.printFinal(t)
	d.printf("  waiting for the reply timeout (%s, real time), then the inquiry by reference…\n", b.Link.Timeout())
	if err := d.drainAll(30 * time.Second); err != nil {
		return err
	}
	if left := b.Core.FaultsForTest().DropNextReply; left != 0 {
		return violated(InvLostReplyOnce, "the core never lost a reply (fault still pending)")
	}
	es, err := b.Adapter.Outbox().List(d.ctx, outbox.Filter{TxID: t.TxID})
	if err != nil {
		return err
	}
	lr := LostReply{Bank: bank, TxID: t.TxID}
	for _, e := range es {
		lr.Sends += e.Sends
		lr.Lookups += e.Lookups
		lr.Status = string(e.Status)
	}
	lines, err := b.Core.Journal(d.ctx, accountByKey(t.From).Core())
	if err != nil {
		return err
	}
	for _, l := range lines {
		if l.TxID == t.TxID {
			lr.Journal++
		}
	}
	d.sum.LostReply = lr
	d.printf("  posting %s: sent %d time(s), %d inquiry(ies), %s; journal lines at the core: %d\n", lr.Status, lr.Sends, lr.Lookups, lr.Status, lr.Journal)
	if len(es) != 1 || lr.Status != string(outbox.Applied) || lr.Sends != 1 || lr.Journal != 1 {
		return violated(InvLostReplyOnce, "posting of %s: %d rows, status %s, sent %d times, %d journal lines at the core; want 1 row APPLIED, sent once, 1 line",
			t.TxID, len(es), lr.Status, lr.Sends, lr.Journal)
	}
	return nil
}

// outOfBand changes a balance at bank 002's core behind everyone's back (a
// teller correction the adapter never hears of); reconciliation must find
// it.
func (d *day) outOfBand() error {
	const key, delta = "002/KOBAYASHI", int64(5_000)
	d.at("12:30")
	d.section("a teller changes a balance at bank 002's core behind everyone's back (AdjustBalanceOutOfBand)")
	a := accountByKey(key)
	if err := d.n.Banks[a.Bank].Core.AdjustBalanceOutOfBand(d.ctx, a.Core(), delta); err != nil {
		return err
	}
	d.oob[key] += delta
	d.printf("  %s core %s: %s out of band; the adapter's shadow ledger does not know\n", key, a.Core(), fmt.Sprintf("+%s", yen(delta)))
	return nil
}
