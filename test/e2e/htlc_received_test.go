package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/idem"
)

var evCancelRx = string(finality.DecidedCancel) + ":RECEIVED>DECIDED_CANCEL"

// TestHTLCStuckInReceivedIsSwept: an HTLC whose lock never completes
// stays RECEIVED; at its timelock the timeout sweep cancels it
// (TIMELOCK_EXPIRED, htlc_received_expired) and the cancel releases
// whatever the payer bank holds for it, once the bank answers.
//
//   - The bank never got reserve-funds (down): nothing was held; the
//     cancel waits in DECIDED_CANCEL while the bank is down, then
//     completes, the bank's replayed lock released at once.
//   - The bank held the funds but its answer was lost (the hold exists
//     at the bank, ZC never recorded its reference): the cancel asks the
//     bank under the lock's own request_id and releases that hold.
//
// Either way: no H, nothing moved at the cores, the daily total given
// back, the contract HTLC_CANCELLED.
func TestHTLCStuckInReceivedIsSwept(t *testing.T) {
	s := newHTLCStack(t, nil)
	before := s.snapshot()
	tl := start.Add(10 * time.Minute)
	s.banks.SetDown("001", true, bankapi.ReserveFunds)
	_, hl := secret(80)
	never := s.create("rx1", hl, 1_200, tl, nil)
	_, hl2 := secret(81)
	lost := s.create("rx2", hl2, 800, tl, nil)
	s.run()
	for _, v := range []string{never.TxID, lost.TxID} {
		s.wantState(v, "RECEIVED", "")
	}
	// The bank held rx2's funds under the lock's request_id; the answer never reached ZC.
	rid, err := idem.TxKey(lost.TxID, string(bankapi.ReserveFunds), "ZC")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := s.bank["001"].a.ReserveFunds(s.ctx, bankapi.ReserveFundsRequest{RequestIDValue: rid, TxID: lost.TxID,
		Amount: bankapi.Amount{Value: 800, Currency: "JPY"}, AccountHash: "h:a"}); err != nil || r.Result != bankapi.ResultReserved {
		t.Fatalf("reserve at the bank: %+v %v", r, err)
	}
	if s.hold(lost.TxID) != "HELD" || s.hold(never.TxID) != "" {
		t.Fatalf("holds before: %q %q", s.hold(lost.TxID), s.hold(never.TxID))
	}
	s.clk.Set(tl.Add(-time.Millisecond))
	if res, err := s.o.TimeoutSweep(s.ctx); err != nil || res.HtlcReceivedExpired != 0 {
		t.Fatalf("1 ms before: %+v %v", res, err)
	}
	s.clk.Set(tl)
	res, err := s.o.TimeoutSweep(s.ctx)
	if err != nil || res.HtlcReceivedExpired != 2 || res.HtlcTimelockExpired != 0 {
		t.Fatalf("at the timelock: %+v %v", res, err)
	}
	s.wantState(never.TxID, "DECIDED_CANCEL", "TIMELOCK_EXPIRED")
	s.run() // the bank is still down: the cancels wait for it
	s.wantState(lost.TxID, "DECIDED_CANCEL", "TIMELOCK_EXPIRED")
	if s.hold(lost.TxID) != "HELD" {
		t.Fatalf("released while the bank was down: %s", s.hold(lost.TxID))
	}
	s.banks.SetDown("001", false)
	s.clk.Advance(5 * time.Minute) // past the queue's backoff
	s.run()
	for _, v := range []string{never.TxID, lost.TxID} {
		s.wantState(v, "CANCELLED", "TIMELOCK_EXPIRED")
		s.wantChain(v, evInit, evCancelRx, evCanceled)
		if st := s.hold(v); st != "RELEASED" {
			t.Errorf("%s: hold %q after the cancel", v, st)
		}
		if s.openH(v) != 0 {
			t.Errorf("%s: H reserved", v)
		}
	}
	if n := s.count(`SELECT COUNT(*) FROM HtlcContracts WHERE txid IN (?, ?) AND state = 'HTLC_CANCELLED'`, never.TxID, lost.TxID); n != 2 {
		t.Fatalf("contracts cancelled %d", n)
	}
	if s.hUsed() != 0 || s.count(`SELECT daily_amount_used FROM Participants WHERE bank_id = '001'`) != 0 {
		t.Fatalf("h_used %d daily %d", s.hUsed(), s.count(`SELECT daily_amount_used FROM Participants WHERE bank_id = '001'`))
	}
	s.checkInvariants(before, s.snapshot())
	_, err = s.claim(never.HtlcID, "00")
	wantCode(t, err, "EXPIRED")
}

// TestHTLCReceivedSweepRacesTheLock: the lock worker and the sweep race
// at the timelock for n HTLCs created while the payer bank was down. Each
// ends one way — locked then expired by the sweep, or cancelled from
// RECEIVED — and in both the bank's hold ends RELEASED, H is free and
// nothing moved.
func TestHTLCReceivedSweepRacesTheLock(t *testing.T) {
	s := newHTLCStack(t, nil)
	before := s.snapshot()
	tl := start.Add(30 * time.Minute)
	const n = 8
	s.banks.SetDown("001", true, bankapi.ReserveFunds)
	txids := make([]string, n)
	for i := range txids {
		_, hl := secret(300 + i)
		txids[i] = s.create(fmt.Sprintf("rr-%d", i), hl, int64(100+i), tl, nil).TxID
	}
	s.run()
	s.banks.SetDown("001", false)
	s.clk.Set(tl.Add(-10 * time.Minute)) // the queue's backoff has elapsed; the timelock has not
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if _, err := s.o.RunUntilIdle(s.ctx); err != nil { // the lock workers ...
			t.Error(err)
		}
	}()
	go func() {
		defer wg.Done()
		time.Sleep(15 * time.Millisecond) // some locks commit first, the rest are in flight
		s.clk.Set(tl)
		for k := 0; k < 3; k++ {
			if _, err := s.o.TimeoutSweep(s.ctx); err != nil { // ... race the sweep at the timelock
				t.Error(err)
			}
		}
	}()
	wg.Wait()
	if _, err := s.o.TimeoutSweep(s.ctx); err != nil {
		t.Fatal(err)
	}
	s.clk.Advance(5 * time.Minute)
	s.run()
	locked := 0
	for _, txid := range txids {
		view := s.view(txid)
		chain := strings.Join(s.chain(txid), " ")
		if view.State != "CANCELLED" || view.ReasonCode != "TIMELOCK_EXPIRED" {
			t.Errorf("%s: %s/%s chain %s", txid, view.State, view.ReasonCode, chain)
		}
		if strings.Contains(chain, "HtlcLocked") {
			locked++
		}
		if st := s.hold(txid); st != "RELEASED" {
			t.Errorf("%s: hold %q", txid, st)
		}
		if s.openH(txid) != 0 {
			t.Errorf("%s: H reserved", txid)
		}
	}
	if s.hUsed() != 0 {
		t.Fatalf("h_used %d", s.hUsed())
	}
	s.checkInvariants(before, s.snapshot())
	t.Logf("%d of %d locked before the sweep", locked, n)
}
