package coresim

import (
	"context"
	"fmt"
	"github.com/zcgw/zcgw/formats/coreacct"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Faults are TEST-ONLY failure injections for the core's MQ serving loop.
// Counters apply to the next N requests the loop processes and count down.
type Faults struct {
	// DropNextReply: the request is processed and committed, but its reply
	// is never put (a reply lost on the way back).
	DropNextReply int
	// DelayNextReply: the next N replies are put ReplyDelay after the
	// request was processed (real time), e.g. past the requester's
	// timeout. The core takes nothing else off its queue meanwhile.
	DelayNextReply int
	ReplyDelay     time.Duration
	// CrashAfterApplyBeforeReply: the ledger change commits, then the
	// serving loop "crashes" before the reply and the get are committed:
	// the unit of work is backed out and the request is redelivered with
	// BackoutCount+1. The redelivery is answered from the stored result.
	CrashAfterApplyBeforeReply int
	// DeliverTwice: after the request is processed and committed, the
	// broker delivers the same message (same MsgID) a second time.
	DeliverTwice int
}

// InjectFaultsForTest sets the faults of the serving loop. Test-only.
func (c *Core) InjectFaultsForTest(f Faults) {
	c.mu.Lock()
	c.faults = f
	c.mu.Unlock()
}

// FaultsForTest returns the faults still pending. Test-only.
func (c *Core) FaultsForTest() Faults {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.faults
}

// faultsArmed reports whether any fault waits for a request.
func (c *Core) faultsArmed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.faults != Faults{}
}

// takeFaults consumes the counters for one request.
func (c *Core) takeFaults() (drop, crash, twice bool, delay time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := &c.faults
	if f.DropNextReply > 0 {
		f.DropNextReply--
		drop = true
	}
	if f.CrashAfterApplyBeforeReply > 0 {
		f.CrashAfterApplyBeforeReply--
		crash = true
	}
	if f.DeliverTwice > 0 {
		f.DeliverTwice--
		twice = true
	}
	if f.DelayNextReply > 0 {
		f.DelayNextReply--
		delay = f.ReplyDelay
	}
	return drop, crash, twice, delay
}

// AdjustBalanceOutOfBand changes a balance behind everyone's back (a
// teller correction the adapter never hears of), journalled with source
// OUT_OF_BAND, so reconciliation has a drift to find. TEST-ONLY.
func (c *Core) AdjustBalanceOutOfBand(ctx context.Context, account string, delta int64) error {
	now := clock.Stamp(c.clk.Now())
	return c.db.Write(ctx, func(tx *store.Tx) error {
		var bal int64
		if err := tx.QueryRowContext(ctx, `SELECT balance FROM CoreAccounts WHERE account = ?`, account).Scan(&bal); err != nil {
			return fmt.Errorf("coresim: out-of-band adjust %s: %w", coreacct.Mask(account), err)
		}
		kind := KindCredit
		amt := delta
		if delta < 0 {
			kind, amt = KindDebit, -delta
		}
		if _, err := tx.ExecContext(ctx, `UPDATE CoreAccounts SET balance = ?, updated_at = ? WHERE account = ?`,
			bal+delta, now, account); err != nil {
			return fmt.Errorf("coresim: out-of-band adjust %s: %w", coreacct.Mask(account), err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO CoreJournal (ref, txid, account, kind, amount, delta, balance_after,
			source, posted_at) VALUES (?, '', ?, ?, ?, ?, ?, ?, ?)`,
			fmt.Sprintf("OOB-%s-%d", account, c.clk.Now().UnixNano()), account, kind, amt, delta, bal+delta, SourceOOB, now)
		return err
	})
}
