package orchestrator

import (
	"context"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
)

// htlcLock is the drive step of a RECEIVED HTLC (001 §15.3 step 2): the
// AML check (authority-check INITIAL) at the payer bank, reserve-funds
// there, then H at ZC and RECEIVED -> HTLC_LOCKED (HtlcLocked) with the
// contract's HTLC_RECEIVED -> HTLC_LOCKED in one commit. A timelock that
// passed before the lock, an NG, a refused reserve or the H limit cancel
// the HTLC (the payer bank's hold released first when one was taken). A
// locked HTLC waits for its claim or its timelock: done.
func (o *Orchestrator) htlcLock(ctx context.Context, r txRow) (bool, error) {
	c, _, err := o.loadHtlc(ctx, "txid", r.TxID)
	if err != nil {
		return false, err
	}
	if expiredAt(c, o.clk.Now()) {
		return false, o.commit(ctx, func(tx *store.Tx) error {
			return o.htlcCancelInTx(ctx, tx, c, lane.Received, ReasonTimelockExpired, map[string]any{"timelock": c.Timelock})
		})
	}
	now := clock.Stamp(o.clk.Now())
	authority := r.Authority
	if authority != "OK" {
		var resp bankapi.CheckResponse
		if err := o.send(ctx, r.PayerBank, r.TxID, &bankapi.AuthorityCheckRequest{RequestIDValue: requestID(r.TxID, bankapi.AuthorityCheck),
			TxID: r.TxID, CheckType: bankapi.CheckInitial}, &resp); err != nil {
			return false, err // retried by the queue; the timelock bounds the wait
		}
		if resp.Result != bankapi.ResultOK {
			return false, o.commit(ctx, func(tx *store.Tx) error {
				if err := setProgress(ctx, tx, r.TxID, now, "authority_result = ?", "NG"); err != nil {
					return err
				}
				return o.htlcCancelInTx(ctx, tx, c, lane.Received, ReasonAuthorityCheckNG, map[string]any{"bank_reason_code": resp.ReasonCode})
			})
		}
		authority = "OK"
	}
	var resp bankapi.ReserveFundsResponse
	if err := o.send(ctx, r.PayerBank, r.TxID, &bankapi.ReserveFundsRequest{RequestIDValue: requestID(r.TxID, bankapi.ReserveFunds),
		TxID: r.TxID, Amount: r.amount(), AccountHash: r.PayerAcct}, &resp); err != nil {
		return false, err
	}
	if resp.Result != bankapi.ResultReserved || resp.ReservationRef == "" {
		reason := resp.ReasonCode
		if reason == "" {
			reason = ReasonReserveRefused
		}
		return false, o.commit(ctx, func(tx *store.Tx) error {
			return o.htlcCancelInTx(ctx, tx, c, lane.Received, reason, map[string]any{"bank_result": resp.Result})
		})
	}
	hResID := BatchReservationID(r.TxID)
	err = o.commit(ctx, func(tx *store.Tx) error {
		if err := setProgress(ctx, tx, r.TxID, now, "authority_result = ?, bank_reservation_ref = ?", authority, resp.ReservationRef); err != nil {
			return err
		}
		if expiredAt(c, o.clk.Now()) {
			// Expired while the bank reserved: the hold is released by
			// the DECIDED_CANCEL step (bank_reservation_ref is recorded).
			return o.htlcCancelInTx(ctx, tx, c, lane.Received, ReasonTimelockExpired, map[string]any{"timelock": c.Timelock})
		}
		if _, err := o.h.ReserveH(ctx, tx, hlimit.ReserveRequest{ReservationID: hResID, TxID: r.TxID, BankID: r.PayerBank,
			Currency: r.Currency, Amount: r.Amount}); err != nil {
			return err
		}
		return o.applyInTx(ctx, tx, lane.Transition{TxID: r.TxID, From: lane.Received, To: lane.HtlcLocked, EventType: finality.HtlcLocked,
			SetColumns: map[string]any{"h_reservation_id": hResID, "reason_code": nil},
			Payload: map[string]any{"htlc_id": c.HtlcID, "hashlock": c.Hashlock, "timelock": c.Timelock, "h_reservation_id": hResID,
				"bank_reservation_ref": resp.ReservationRef, "authority_result": authority},
			SideUpdates: lane.HtlcEdge(c.HtlcID, lane.HtlcReceived, lane.HtlcContractLocked, now, nil)})
	})
	if domainerr.Has(err, "H_LIMIT_EXCEEDED") {
		return false, o.commit(ctx, func(tx *store.Tx) error {
			if err := setProgress(ctx, tx, r.TxID, now, "bank_reservation_ref = ?", resp.ReservationRef); err != nil {
				return err
			}
			return o.htlcCancelInTx(ctx, tx, c, lane.Received, ReasonHLimitExceeded, map[string]any{"bank_reservation_ref": resp.ReservationRef})
		})
	}
	if err != nil {
		return false, err
	}
	o.log.InfoContext(ctx, "htlc.locked", "txid", r.TxID, "htlc_id", c.HtlcID)
	return true, nil
}

// htlcContractState maps a Transactions state of an HTLC to the contract
// state a cancel moves from.
func htlcContractState(s lane.TxState) lane.HtlcState {
	switch s {
	case lane.HtlcLocked:
		return lane.HtlcContractLocked
	case lane.HtlcOnchainPending:
		return lane.HtlcContractOnchain
	}
	return lane.HtlcReceived
}

// htlcCancelInTx cancels HTLC c from Transactions state from to
// DECIDED_CANCEL with reason inside tx (CancelInTx: H released, the daily
// total given back) and its contract to HTLC_CANCELLED in the same batch,
// and queues the drive that releases the payer bank's hold and completes
// the cancel (DECIDED_CANCEL -> CANCELLED). A row no longer in from is
// errConflict.
func (o *Orchestrator) htlcCancelInTx(ctx context.Context, tx *store.Tx, c lane.HtlcContract, from lane.TxState, reason string, payload map[string]any) error {
	if payload == nil {
		payload = map[string]any{}
	}
	payload["htlc_id"] = c.HtlcID
	now := o.clk.Now()
	res, err := o.lanes.CancelInTx(ctx, tx, lane.Cancel{TxID: c.TxID, ReasonCode: reason, FromStates: []lane.TxState{from}, Payload: payload,
		SideUpdates: lane.HtlcEdge(c.HtlcID, htlcContractState(from), lane.HtlcContractCanceled, clock.Stamp(now), nil)})
	if err != nil {
		return err
	}
	if !res.Applied {
		return errConflict
	}
	o.log.InfoContext(ctx, "htlc.cancelled", "txid", c.TxID, "htlc_id", c.HtlcID, "reason_code", reason, "from", string(from))
	return o.enqueue(ctx, tx, KindDrive, c.TxID, LaneHTLC, StatusReady, now)
}

// finishCancel is the drive step of DECIDED_CANCEL: an HTLC whose payer
// bank holds a reservation has it released first (release-reserve,
// idempotent by request_id); then DECIDED_CANCEL -> CANCELLED.
//
// An HTLC cancelled at its timelock before its lock committed (RECEIVED,
// no reservation_ref recorded) may still hold money at the payer bank:
// reserve-funds may have reached it while the answer, or the lock's
// commit, never came back. The drive asks the bank by replaying
// reserve-funds under the lock's own request_id — the bank answers its
// stored result, and holds now if it never had the request — and releases
// what that names, so nothing stays held whichever came first.
func (o *Orchestrator) finishCancel(ctx context.Context, r txRow) error {
	ref := r.BankRes
	if r.Lane == LaneHTLC && ref == "" && r.ReasonCode == ReasonTimelockExpired && r.Authority != "NG" {
		var resp bankapi.ReserveFundsResponse
		if err := o.send(ctx, r.PayerBank, r.TxID, &bankapi.ReserveFundsRequest{RequestIDValue: requestID(r.TxID, bankapi.ReserveFunds),
			TxID: r.TxID, Amount: r.amount(), AccountHash: r.PayerAcct}, &resp); err != nil {
			return err // retried by the queue; a give-up opens the queue's Case
		}
		if resp.Result == bankapi.ResultReserved {
			ref = resp.ReservationRef
		}
	}
	if r.Lane == LaneHTLC && ref != "" {
		var rel bankapi.ReleaseReserveResponse
		if err := o.send(ctx, r.PayerBank, r.TxID, &bankapi.ReleaseReserveRequest{RequestIDValue: requestID(r.TxID, bankapi.ReleaseReserve),
			TxID: r.TxID, ReservationRef: ref}, &rel); err != nil {
			return err
		}
	}
	return o.transition(ctx, lane.Transition{TxID: r.TxID, From: lane.DecidedCancel, To: lane.Cancelled, EventType: finality.Cancelled,
		Payload: map[string]any{"reason_code": r.ReasonCode}})
}

// htlcDecide is the drive step of HTLC_FULFILL_REQUESTED: the decision
// (DECIDED_TO_SETTLE) with the execute-debit body recorded; the transfer
// then runs as every lane does (a, b, SETTLED, notifications).
func (o *Orchestrator) htlcDecide(ctx context.Context, r txRow) error {
	return o.commit(ctx, func(tx *store.Tx) error { return o.decideInTx(ctx, tx, r, lane.HtlcFulfillRequested, r.BankRes) })
}

// sweepHTLC is the timeout sweep's HTLC part (001 §15.3 step 5, 000 §5.2):
// every HTLC_LOCKED HTLC whose outer timelock has passed is cancelled
// (TIMELOCK_EXPIRED), and so is every HTLC still RECEIVED at its timelock
// (its lock never completed: the payer bank never answered, or the queue
// gave up; finishCancel then releases whatever the bank holds for it —
// counted in receivedExpired); an HTLC_ONCHAIN_PENDING one is first reclaimed from
// the chain (OwnershipReclaimed, CHAIN:default -> ZC: the lease's
// contractual end) and then cancelled by ZC, in one commit. A claim that
// won the race leaves the row in HTLC_FULFILL_REQUESTED: the reclaim's or
// the cancel's guard misses and nothing is written.
func (o *Orchestrator) sweepHTLC(ctx context.Context, now time.Time) (expired, reclaimed, receivedExpired int, err error) {
	type cand struct {
		c     lane.HtlcContract
		state lane.TxState
		owner string
	}
	var cands []cand
	err = o.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT h.htlc_id, t.state, t.owner FROM HtlcContracts h JOIN Transactions t ON t.txid = h.txid
			WHERE t.state IN (?, ?, ?) AND h.timelock <= ? ORDER BY h.timelock`,
			string(lane.Received), string(lane.HtlcLocked), string(lane.HtlcOnchainPending), clock.Stamp(now))
		if err != nil {
			return wrapDB("htlc sweep select", err)
		}
		var ids []cand
		for rows.Next() {
			var x cand
			var st string
			if err := rows.Scan(&x.c.HtlcID, &st, &x.owner); err != nil {
				rows.Close()
				return wrapDB("htlc sweep scan", err)
			}
			x.state = lane.TxState(st)
			ids = append(ids, x)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return wrapDB("htlc sweep rows", err)
		}
		for _, x := range ids {
			c, err := lane.ReadHtlc(ctx, tx, x.c.HtlcID)
			if err != nil {
				return err
			}
			if expiredAt(c, now) { // stamps compare as text only when both are clock.Stamp; check the instant
				x.c = c
				cands = append(cands, x)
			}
		}
		return nil
	})
	if err != nil {
		return 0, 0, 0, err
	}
	for _, x := range cands {
		wasReclaimed, applied, err := o.expireHtlc(ctx, x.c, x.state, x.owner)
		if err != nil {
			return expired, reclaimed, receivedExpired, err
		}
		switch {
		case applied && x.state == lane.Received:
			receivedExpired++
		case applied:
			expired++
		}
		if wasReclaimed {
			reclaimed++
		}
	}
	return expired, reclaimed, receivedExpired, nil
}

// expireHtlc cancels HTLC c (seen in state with owner) for its passed
// timelock in one commit, reclaiming the chain's lease first when the
// chain holds it. applied is false when the row moved first (a claim won).
func (o *Orchestrator) expireHtlc(ctx context.Context, c lane.HtlcContract, state lane.TxState, owner string) (reclaimedLease, applied bool, err error) {
	err = o.db.Write(ctx, func(tx *store.Tx) error {
		reclaimedLease, applied = false, false
		if owner != lane.OwnerZC {
			res, err := o.lanes.TransferOwnershipInTx(ctx, tx, lane.Handoff{TxID: c.TxID, FromOwner: owner, ToOwner: lane.OwnerZC,
				EventType: finality.OwnershipReclaimed,
				Payload:   map[string]any{"htlc_id": c.HtlcID, "reason": "outer timelock reached: the chain's lease ended", "timelock": c.Timelock}})
			if err != nil {
				return err
			}
			if !res.Applied || res.State != state {
				return errNotApplied
			}
			reclaimedLease = true
		}
		err := o.htlcCancelInTx(ctx, tx, c, state, ReasonTimelockExpired, map[string]any{"timelock": c.Timelock, "by": "timeout_sweep"})
		if err == errConflict {
			return errNotApplied
		}
		applied = err == nil
		return err
	})
	if err == errNotApplied {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	o.log.InfoContext(ctx, "htlc.expired", "txid", c.TxID, "htlc_id", c.HtlcID, "lease_reclaimed", reclaimedLease)
	return reclaimedLease, applied, nil
}
