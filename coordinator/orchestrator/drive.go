package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Lanes accepted by POST /api/transfers (spec 003 lane domain; HTLC has its
// own endpoint, RTP its own flow, GTID is not a request value).
const (
	LaneExpress   = "EXPRESS"
	LaneStandard  = "STANDARD"
	LaneHighValue = "HIGH_VALUE"
	LaneBulk      = "BULK"
	LaneDeferred  = "DEFERRED"
)

// NameRecheck is how long a transfer whose name check the payee bank
// deferred waits before the check is asked again.
const NameRecheck = 30 * time.Second

// maxSteps bounds one drive of a transfer (a lane has at most 8 steps).
const maxSteps = 16

// requestID is the deterministic request_id of a ZC->bank command for a
// transfer (spec 002 §12.4 TX:{txid}:{name}:{issuer}): a retried call is
// a replay at the bank, never a second instruction.
func requestID(txid string, cmd bankapi.Command) string {
	k, err := idem.TxKey(txid, string(cmd), "ZC")
	if err != nil { // txid is validated at Submit; keep a usable id anyway
		return "TX:" + txid + ":" + string(cmd) + ":ZC"
	}
	return k
}

func decisionProofRef(txid string) string { return "DP-" + txid }

// drive moves one transfer as far as it can go now. It returns nil when the
// transfer reached a terminal state or a point where it waits for someone
// else (a window, the venue, the sweep), errWait to be run again later,
// and any other error for the queue's retry policy.
func (o *Orchestrator) drive(ctx context.Context, txid string) error {
	for i := 0; i < maxSteps; i++ {
		r, err := o.load(ctx, txid)
		if err != nil {
			return err
		}
		if r.Owner != lane.OwnerZC { // custody elsewhere (VENUE:BOJ, CYCLE:...): not ours to move
			return nil
		}
		done, err := o.step(ctx, r)
		if err != nil || done {
			return err
		}
	}
	return domainerr.New("INVARIANT_VIOLATION", "transfer did not settle within the step bound", map[string]any{"txid": txid})
}

// step performs the next step of r. done reports that nothing more can be
// done now.
func (o *Orchestrator) step(ctx context.Context, r txRow) (done bool, err error) {
	switch r.State {
	case lane.Received:
		if r.Lane == LaneHTLC {
			return o.htlcLock(ctx, r)
		}
		return o.precheck(ctx, r)
	case lane.HtlcFulfillRequested:
		return false, o.htlcDecide(ctx, r)
	case lane.Prechecked:
		return o.toDecision(ctx, r, nil)
	case lane.PrecheckedSuspended:
		return o.resumePrechecked(ctx, r)
	case lane.HReserved:
		return false, o.commit(ctx, func(tx *store.Tx) error { return o.decideInTx(ctx, tx, r, lane.HReserved, r.BankRes) })
	case lane.DecidedToSettle:
		return false, o.executeDebit(ctx, r)
	case lane.PayerExecConfirmed:
		return o.afterDebit(ctx, r)
	case lane.Suspended:
		if r.PayerProof == "" {
			return false, o.executeDebit(ctx, r)
		}
		return o.afterDebit(ctx, r)
	case lane.PayeeExecConfirmed:
		return false, o.settle(ctx, r, nil)
	case lane.DecidedCancel:
		return false, o.finishCancel(ctx, r)
	case lane.Settled:
		return true, o.notify(ctx, r)
	}
	return true, nil // terminal, or waiting for a claim or the chain (HTLC_LOCKED, HTLC_ONCHAIN_PENDING)
}

func (o *Orchestrator) transition(ctx context.Context, t lane.Transition) error {
	res, err := o.lanes.TransitionWithLog(ctx, t)
	if err == nil && res.Applied {
		o.log.InfoContext(ctx, "orchestrator.transition", "txid", t.TxID, "from", string(t.From), "to", string(t.To),
			"event_type", string(t.EventType))
	}
	return err
}

// participant reads a participant on a read snapshot.
func (o *Orchestrator) participant(ctx context.Context, bankID string) (participants.Participant, error) {
	return o.parts.Get(ctx, bankID)
}

// errConflict rolls back a commit whose transition lost a race (the row
// moved concurrently, e.g. by the sweep): the drive reloads and goes on
// from where the row is.
const errConflict = sentinel("transfer moved concurrently")

// applyInTx runs transitions in order inside tx; one that does not apply
// is errConflict.
func (o *Orchestrator) applyInTx(ctx context.Context, tx *store.Tx, ts ...lane.Transition) error {
	for _, t := range ts {
		res, err := o.lanes.TransitionInTx(ctx, tx, t)
		if err != nil {
			return err
		}
		if !res.Applied {
			return errConflict
		}
	}
	return nil
}

// commit runs fn in one write transaction; errConflict is not an error
// for the drive (it reloads the row).
func (o *Orchestrator) commit(ctx context.Context, fn func(tx *store.Tx) error) error {
	err := o.db.Write(ctx, fn)
	if err == errConflict {
		return nil
	}
	return err
}

func precheckPassed(txid, laneName string) lane.Transition {
	return lane.Transition{TxID: txid, From: lane.Received, To: lane.Prechecked, EventType: finality.PreCheckPassed,
		Payload: map[string]any{"lane": laneName}}
}

func resumed(txid, from string, extra map[string]any) lane.Transition {
	cols := map[string]any{"reason_code": nil}
	for k, v := range extra {
		cols[k] = v
	}
	return lane.Transition{TxID: txid, From: lane.PrecheckedSuspended, To: lane.Prechecked, EventType: finality.Resumed,
		SetColumns: cols, Payload: map[string]any{"resumed_from": from}}
}

// checks holds the results of the bank-side prechecks of one drive; they
// are written with the commit that acts on them.
type checks struct {
	authority, name string // "" (not needed or not asked), OK/NG, MATCH/MISMATCH
	bankReason      string // the bank's reason for an NG / MISMATCH
	resolved        string // the payee account an EXPRESS pspr_ref resolved to
}

func (c checks) progress(ctx context.Context, tx *store.Tx, txid, now string) error {
	if c.authority == "" && c.name == "" {
		return nil
	}
	return setProgress(ctx, tx, txid, now, "authority_result = COALESCE(?, authority_result), name_result = COALESCE(?, name_result)",
		nullStr(c.authority), nullStr(c.name))
}

// precheck moves a RECEIVED transfer: a passed expires_at cancels it
// (REJECT_PRECHECK_EXPIRED); a closed payee operating window parks it in
// PRECHECKED_SUSPENDED with COUNTERPARTY_WINDOW_CLOSED (the request kept in
// pending_request_json for the sweep's resume); otherwise it goes on to
// the bank checks and the decision, PreCheckPassed being committed with
// what follows it. A transfer sent under a mandate is checked against it
// first (checkMandate): refused, it is cancelled with the MANDATE_* code.
func (o *Orchestrator) precheck(ctx context.Context, r txRow) (bool, error) {
	now := o.clk.Now()
	expires, reqJSON := r.ExpiresAt, r.RequestJSON
	if expires != "" {
		if t, err := clock.ParseStamp(expires); err == nil && !now.Before(t) {
			return false, o.commit(ctx, func(tx *store.Tx) error {
				if err := o.applyInTx(ctx, tx, precheckPassed(r.TxID, r.Lane)); err != nil {
					return err
				}
				return o.cancelInTx(ctx, tx, r.TxID, lane.Prechecked, ReasonPrecheckExpired, map[string]any{"expires_at": expires})
			})
		}
	}
	verdict, refused, err := o.checkMandate(ctx, r, now)
	if err != nil || refused {
		return false, err
	}
	payee, err := o.participant(ctx, r.PayeeBank)
	if err != nil {
		return false, err
	}
	if !payee.WindowOpen(now) {
		_, err := o.lanes.SuspendTx(ctx, lane.Suspend{TxID: r.TxID, From: lane.Received, To: lane.PrecheckedSuspended,
			ReasonCode: ReasonCounterpartyWindowClosed,
			Payload: map[string]any{"payee_bank_id": r.PayeeBank, "window_start": payee.WindowStart, "window_end": payee.WindowEnd,
				"window_opens_at": clock.Stamp(payee.NextWindowOpen(now))},
			SetColumns: map[string]any{"pending_request_json": reqJSON}})
		o.log.InfoContext(ctx, "orchestrator.window_closed", "txid", r.TxID, "payee_bank_id", r.PayeeBank)
		return true, err
	}
	pass := precheckPassed(r.TxID, r.Lane)
	if verdict != nil {
		pass.Payload = map[string]any{"lane": r.Lane, "mandate": verdict}
	}
	return o.toDecision(ctx, r, []lane.Transition{pass})
}

// runChecks asks the banks for the prechecks r's lane needs and has not
// passed yet: authority-check at the payer bank (STANDARD, HIGH_VALUE) and
// name-check at the payee bank (STANDARD). It returns the results, whether
// the transfer must wait (name-check DEFERRED), and the error of a check
// that could not be asked.
func (o *Orchestrator) runChecks(ctx context.Context, r txRow) (c checks, wait string, err error) {
	if (r.Lane == LaneStandard || r.Lane == LaneHighValue) && r.Authority != "OK" {
		var resp bankapi.CheckResponse
		if err := o.send(ctx, r.PayerBank, r.TxID, &bankapi.AuthorityCheckRequest{RequestIDValue: requestID(r.TxID, bankapi.AuthorityCheck),
			TxID: r.TxID, CheckType: bankapi.CheckInitial}, &resp); err != nil {
			return c, ReasonSuspendAuthorityPending, err
		}
		if resp.Result != bankapi.ResultOK {
			c.authority, c.bankReason = "NG", resp.ReasonCode
			return c, "", nil
		}
		c.authority = "OK"
	}
	resolve := r.Lane == LaneExpress && r.PayeeAcct == ""
	if (r.Lane == LaneStandard && r.Name != bankapi.ResultMatch) || resolve {
		var resp bankapi.NameCheckResponse
		if err := o.send(ctx, r.PayeeBank, r.TxID, &bankapi.NameCheckRequest{RequestIDValue: requestID(r.TxID, bankapi.NameCheck),
			TxID: r.TxID, PSPRRef: r.PSPRRef, AccountHash: r.PayeeAcct}, &resp); err != nil {
			return c, ReasonSuspendNameCheckPending, err
		}
		if resolve && resp.Result == bankapi.ResultMatch && resp.ResolvedAccountHash == "" {
			// A bank that does not resolve references cannot take this transfer.
			resp = bankapi.NameCheckResponse{Result: bankapi.ResultMismatch, ReasonCode: bankapi.ReasonAccountNotFound}
		}
		switch resp.Result {
		case bankapi.ResultMatch:
			c.name, c.resolved = bankapi.ResultMatch, resp.ResolvedAccountHash
		case bankapi.ResultMismatch:
			c.name, c.bankReason = bankapi.ResultMismatch, resp.ReasonCode
		default: // DEFERRED: the payee bank cannot answer now
			return c, ReasonSuspendNameCheckPending, nil
		}
	}
	return c, "", nil
}

// toDecision takes a transfer in RECEIVED (prefix holds PreCheckPassed),
// PRECHECKED, or PRECHECKED_SUSPENDED waiting for a check (prefix holds
// its Resumed) to the decision, committing the prefix only together with
// what the checks and the reservation lead to:
//   - a check NG/MISMATCH: cancel (AUTHORITY_CHECK_NG / NAME_MISMATCH);
//   - a check that cannot be answered now: PRECHECKED_SUSPENDED with
//     SUSPEND_AUTHORITY_PENDING / SUSPEND_NAMECHECK_PENDING, retried;
//   - HIGH_VALUE: the payer's BOJ balance must cover the amount
//     (else BOJ_INSUFFICIENT_FUNDS), then the decision, no reservation;
//   - other lanes: reserve-funds at the payer bank, then H at ZC,
//     H_RESERVED and the decision in one commit.
func (o *Orchestrator) toDecision(ctx context.Context, r txRow, prefix []lane.Transition) (bool, error) {
	now := clock.Stamp(o.clk.Now())
	c, wait, callErr := o.runChecks(ctx, r)
	// The state the transfer is in once the prefix is applied.
	at := r.State
	if len(prefix) > 0 {
		at = prefix[len(prefix)-1].To
	}
	switch {
	case callErr != nil && !domainerr.ShouldRetry(callErr):
		return false, callErr // acked and escalated by the queue
	case callErr != nil || wait != "":
		if r.State != lane.PrecheckedSuspended {
			if err := o.commit(ctx, func(tx *store.Tx) error {
				if err := o.applyInTx(ctx, tx, prefix...); err != nil {
					return err
				}
				if err := c.progress(ctx, tx, r.TxID, now); err != nil {
					return err
				}
				payload := map[string]any{}
				if callErr != nil {
					payload["cause_reason_code"] = domainerr.Code(callErr)
				}
				_, err := o.lanes.SuspendInTx(ctx, tx, lane.Suspend{TxID: r.TxID, From: lane.Prechecked, To: lane.PrecheckedSuspended,
					ReasonCode: wait, Payload: payload})
				return err
			}); err != nil {
				return false, err
			}
			o.log.InfoContext(ctx, "orchestrator.precheck_suspended", "txid", r.TxID, "reason_code", wait)
		}
		if callErr != nil {
			return true, callErr // retried with backoff by the queue
		}
		return true, errWait{until: o.clk.Now().Add(NameRecheck), reason: wait}
	case c.authority == "NG" || c.name == bankapi.ResultMismatch:
		reason := ReasonAuthorityCheckNG
		if c.name == bankapi.ResultMismatch {
			reason = ReasonNameMismatch
		}
		return false, o.commit(ctx, func(tx *store.Tx) error {
			if r.State == lane.Received {
				if err := o.applyInTx(ctx, tx, prefix...); err != nil {
					return err
				}
			} else {
				at = r.State // cancel straight from PRECHECKED(_SUSPENDED)
			}
			if err := c.progress(ctx, tx, r.TxID, now); err != nil {
				return err
			}
			return o.cancelInTx(ctx, tx, r.TxID, at, reason, map[string]any{"bank_reason_code": c.bankReason})
		})
	}
	if r.Lane == LaneHighValue {
		bal, err := o.position(ctx, r.PayerBank, VenueBOJ, r.Currency)
		if err != nil {
			return false, err
		}
		return false, o.commit(ctx, func(tx *store.Tx) error {
			if err := o.applyInTx(ctx, tx, prefix...); err != nil {
				return err
			}
			if err := c.progress(ctx, tx, r.TxID, now); err != nil {
				return err
			}
			if bal < r.Amount {
				return o.cancelInTx(ctx, tx, r.TxID, at, ReasonBOJInsufficientFunds, map[string]any{"boj_balance": bal})
			}
			return o.decideInTx(ctx, tx, r, at, "")
		})
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
			if err := o.applyInTx(ctx, tx, prefix...); err != nil {
				return err
			}
			if err := c.progress(ctx, tx, r.TxID, now); err != nil {
				return err
			}
			return o.cancelInTx(ctx, tx, r.TxID, at, reason, map[string]any{"bank_result": resp.Result})
		})
	}
	hResID := BatchReservationID(r.TxID) // the id a batch window reserves under, so its reservation is replayed
	err := o.commit(ctx, func(tx *store.Tx) error {
		hintRow(tx, r)
		if err := o.applyInTx(ctx, tx, prefix...); err != nil {
			return err
		}
		if err := c.progress(ctx, tx, r.TxID, now); err != nil {
			return err
		}
		if _, err := o.h.ReserveH(ctx, tx, hlimit.ReserveRequest{ReservationID: hResID, TxID: r.TxID, BankID: r.PayerBank,
			Currency: r.Currency, Amount: r.Amount}); err != nil {
			return err
		}
		if err := setProgress(ctx, tx, r.TxID, now, "bank_reservation_ref = ?", resp.ReservationRef); err != nil {
			return err
		}
		cols := map[string]any{"h_reservation_id": hResID, "reason_code": nil}
		payload := map[string]any{"h_reservation_id": hResID, "bank_reservation_ref": resp.ReservationRef}
		if c.resolved != "" {
			// The payee account is fixed before DECIDED_TO_SETTLE (001 §13.1).
			cols["payee_account_hash"], payload["account_resolved_ref"] = c.resolved, c.resolved
		}
		reserved := lane.Transition{TxID: r.TxID, From: lane.Prechecked, To: lane.HReserved,
			EventType: finality.HReserved, SetColumns: cols, Payload: payload}
		if err := o.applyInTx(ctx, tx, reserved); err != nil {
			return err
		}
		return o.decideInTx(ctx, tx, r, lane.HReserved, resp.ReservationRef)
	})
	if domainerr.Has(err, "H_LIMIT_EXCEEDED") {
		var rel bankapi.ReleaseReserveResponse
		if rerr := o.send(ctx, r.PayerBank, r.TxID, &bankapi.ReleaseReserveRequest{RequestIDValue: requestID(r.TxID, bankapi.ReleaseReserve),
			TxID: r.TxID, ReservationRef: resp.ReservationRef}, &rel); rerr != nil {
			return false, rerr // retried: the hold must be released before the cancel
		}
		return false, o.commit(ctx, func(tx *store.Tx) error {
			if err := o.applyInTx(ctx, tx, prefix...); err != nil {
				return err
			}
			return o.cancelInTx(ctx, tx, r.TxID, at, ReasonHLimitExceeded, map[string]any{"bank_reservation_ref": resp.ReservationRef})
		})
	}
	return false, err
}

func (o *Orchestrator) decision(txid string, from lane.TxState) lane.Transition {
	dp := decisionProofRef(txid)
	return lane.Transition{TxID: txid, From: from, To: lane.DecidedToSettle, EventType: finality.DecidedToSettle,
		SetColumns: map[string]any{"decision_proof_ref": dp, "reason_code": nil},
		Payload:    map[string]any{"decision": string(lane.DecidedToSettle), "decision_proof_ref": dp}}
}

// resumePrechecked resumes a PRECHECKED_SUSPENDED transfer when what it
// waits for is there: the payee's window is open again, or the pending
// check now answers.
func (o *Orchestrator) resumePrechecked(ctx context.Context, r txRow) (bool, error) {
	switch r.ReasonCode {
	case ReasonCounterpartyWindowClosed:
		payee, err := o.participant(ctx, r.PayeeBank)
		if err != nil {
			return false, err
		}
		if !payee.WindowOpen(o.clk.Now()) {
			return true, nil // the sweep resumes it when the window opens
		}
		return o.toDecision(ctx, r, []lane.Transition{resumed(r.TxID, r.ReasonCode, map[string]any{"pending_request_json": nil})})
	case ReasonSuspendAuthorityPending, ReasonSuspendNameCheckPending:
		return o.toDecision(ctx, r, []lane.Transition{resumed(r.TxID, r.ReasonCode, nil)})
	}
	return true, nil // suspended by someone else (DNS hold, ...): not ours to resume
}

// executeDebit instructs the payer bank (PayerExecRequested) and records
// PayerExecConfirmed. A bank that cannot be reached AdapterDownAfter times
// in a row parks the transfer in SUSPENDED with SUSPEND_ADAPTER_DOWN; a bank
// that refuses parks it with EXEC_DEBIT_FAILED (and the queue opens a Case).
func (o *Orchestrator) executeDebit(ctx context.Context, r txRow) error {
	// The body recorded at the decision is sent; o.deadline builds it only
	// for a transfer decided before bodies were recorded.
	req := executeDebitRequest(r, o.deadline(r))
	var resp bankapi.ExecuteResponse
	if err := o.send(ctx, r.PayerBank, r.TxID, req, &resp); err != nil {
		return o.execFailed(ctx, r, err, ReasonExecDebitFailed)
	}
	if resp.Result != bankapi.ResultOK {
		return o.execFailed(ctx, r, domainerr.New("INVARIANT_VIOLATION", "execute-debit answered "+resp.Result,
			map[string]any{"txid": r.TxID}), ReasonExecDebitFailed)
	}
	proof, err := json.Marshal(resp.BankProofRef)
	if err != nil {
		return err
	}
	now := clock.Stamp(o.clk.Now())
	return o.db.Write(ctx, func(tx *store.Tx) error {
		hintRow(tx, r)
		res, err := o.lanes.TransitionInTx(ctx, tx, lane.Transition{TxID: r.TxID, From: r.State, To: lane.PayerExecConfirmed,
			EventType: finality.PayerExecConfirmed, SetColumns: map[string]any{"payer_bank_proof_ref": string(proof), "reason_code": nil},
			Payload: map[string]any{"result": bankapi.ResultOK, "bank_proof_ref": resp.BankProofRef}})
		if err != nil || !res.Applied {
			return err
		}
		return o.resetExecFailures(ctx, tx, r, now)
	})
}

// deadline is the execution deadline of a transfer decided before
// execute-debit bodies were recorded at the decision: pending_since plus
// the stage's timeout, as such a transfer's first send computed it.
func (o *Orchestrator) deadline(r txRow) time.Time {
	t, err := clock.ParseStamp(r.PendingSince)
	if err != nil {
		t = o.clk.Now()
	}
	return t.Add(o.to.Exec)
}

// execFailed handles a failed execution command. Retryable (the bank was
// not reached or timed out): count it, park in SUSPENDED with
// SUSPEND_ADAPTER_DOWN once AdapterDownAfter is reached, and return the
// error so the queue retries. Refused by the bank: park with
// EXEC_DEBIT_FAILED / EXEC_CREDIT_FAILED and return the error so the queue
// acknowledges it and opens a Case.
func (o *Orchestrator) execFailed(ctx context.Context, r txRow, callErr error, refusedReason string) error {
	now := clock.Stamp(o.clk.Now())
	suspendable := r.State == lane.DecidedToSettle || r.State == lane.PayerExecConfirmed
	if domainerr.ShouldRetry(callErr) {
		n := r.ExecFailures + 1
		err := o.db.Write(ctx, func(tx *store.Tx) error {
			if err := setProgress(ctx, tx, r.TxID, now, "exec_failures = ?", n); err != nil {
				return err
			}
			to, err := o.timeoutsTx(ctx, tx)
			if err != nil {
				return err
			}
			if n >= to.AdapterDownAfter && suspendable {
				_, err := o.lanes.SuspendInTx(ctx, tx, lane.Suspend{TxID: r.TxID, From: r.State, To: lane.Suspended,
					ReasonCode: ReasonSuspendAdapterDown, Payload: map[string]any{"cause_reason_code": domainerr.Code(callErr), "failures": n},
					SideUpdates: o.gtidSuspendSide(r.Lane, r.TxID, ReasonSuspendAdapterDown)})
				return err
			}
			return nil
		})
		if err != nil {
			return err
		}
		return callErr
	}
	if suspendable {
		if _, err := o.lanes.SuspendTx(ctx, lane.Suspend{TxID: r.TxID, From: r.State, To: lane.Suspended, ReasonCode: refusedReason,
			Payload: refusalPayload(callErr), SideUpdates: o.gtidSuspendSide(r.Lane, r.TxID, refusedReason)}); err != nil {
			return err
		}
	}
	return callErr
}

// afterDebit continues after the payer's execution: for HIGH_VALUE the
// external settlement at the BOJ venue first (only on a
// PAYER_HV_ISOLATION_PROOF), then the payee's credit and the settlement.
func (o *Orchestrator) afterDebit(ctx context.Context, r txRow) (bool, error) {
	if r.Lane == LaneHighValue && r.ExtStatus != ExtSettled {
		if pt := r.payerProofType(); pt != ProofPayerHVIsolation {
			return false, domainerr.New("INVARIANT_VIOLATION",
				"HIGH_VALUE: payer proof is not PAYER_HV_ISOLATION_PROOF; external settlement not instructed (spec 002 §12.3)",
				map[string]any{"txid": r.TxID, "proof_type": pt})
		}
		if r.ExtStatus == ExtRequested {
			return true, nil // the venue owns the money leg; it hands the row back
		}
		if err := o.requestVenue(ctx, r); err != nil {
			return false, err
		}
		if o.cfg.ManualVenue {
			return true, nil
		}
		settled, err := o.venueSettle(ctx, r.TxID, false)
		if err != nil {
			return false, err
		}
		if !settled { // IGS_FAILED: retried with backoff (a HOLD may clear)
			return false, domainerr.New("IGS_ERROR", "BOJ venue did not settle the transfer", map[string]any{"txid": r.TxID})
		}
		return false, nil
	}
	return o.executeCredit(ctx, r)
}

// executeCredit instructs the payee bank (PayeeExecRequested) and, in one
// commit, records PayeeExecConfirmed and settles. A credit the payee
// bank's incoming-transfer filter holds (HELD) parks the transfer in
// SUSPENDED until the bank resumes it (ResumeCredit); done is then true.
func (o *Orchestrator) executeCredit(ctx context.Context, r txRow) (done bool, err error) {
	var resp bankapi.ExecuteResponse
	err = o.send(ctx, r.PayeeBank, r.TxID, &bankapi.ExecuteCreditRequest{RequestIDValue: requestID(r.TxID, bankapi.ExecuteCredit),
		TxID: r.TxID, Amount: r.amount(), DecisionProofRef: r.DecisionProofRef, PayeeAccountHash: r.PayeeAcct, Lane: r.Lane,
		PayerBankID: r.PayerBank, PayerAccountHash: r.PayerAcct, EdiRef: r.EdiRef}, &resp)
	if err != nil {
		return false, o.execFailed(ctx, r, err, ReasonExecCreditFailed)
	}
	if resp.Result == bankapi.ResultHeld {
		return true, o.creditHeld(ctx, r, resp.ApprovalID)
	}
	if resp.Result != bankapi.ResultOK {
		return false, o.execFailed(ctx, r, domainerr.New("INVARIANT_VIOLATION", "execute-credit answered "+resp.Result,
			map[string]any{"txid": r.TxID}), ReasonExecCreditFailed)
	}
	return false, o.settle(ctx, r, &resp.BankProofRef)
}

// settle records PayeeExecConfirmed (when proof is given) and SETTLED in
// one commit, releasing ZC's H and moving the ZC net positions (non
// HIGH_VALUE lanes; HIGH_VALUE moved BOJ at the venue). The notifications
// follow (step SETTLED).
func (o *Orchestrator) settle(ctx context.Context, r txRow, proof *bankapi.BankProofRef) error {
	now := clock.Stamp(o.clk.Now())
	return o.commit(ctx, func(tx *store.Tx) error {
		hintRow(tx, r)
		from := r.State
		if proof != nil {
			pj, err := json.Marshal(proof)
			if err != nil {
				return err
			}
			if err := o.applyInTx(ctx, tx, lane.Transition{TxID: r.TxID, From: r.State, To: lane.PayeeExecConfirmed,
				EventType: finality.PayeeExecConfirmed, SetColumns: map[string]any{"payee_bank_proof_ref": string(pj), "reason_code": nil},
				Payload: map[string]any{"result": bankapi.ResultOK, "bank_proof_ref": proof}}); err != nil {
				return err
			}
			from = lane.PayeeExecConfirmed
		}
		if err := o.applyInTx(ctx, tx, lane.Transition{TxID: r.TxID, From: from, To: lane.Settled, EventType: finality.Settled,
			Payload: map[string]any{"amount": r.amount(), "payer_bank_id": r.PayerBank, "payee_bank_id": r.PayeeBank}}); err != nil {
			return err
		}
		if _, err := o.h.ReleaseForTx(ctx, tx, r.TxID); err != nil {
			return err
		}
		if r.Lane == LaneGtid {
			if err := o.gtidLegSettledInTx(ctx, tx, r.TxID); err != nil {
				return err
			}
		}
		if r.Lane == LaneRtp {
			if err := o.rtpTransferSettledInTx(ctx, tx, r.TxID); err != nil {
				return err
			}
		}
		if r.Lane != LaneHighValue {
			if err := movePosition(ctx, tx, VenueZC, r.PayerBank, r.PayeeBank, r.Currency, r.Amount, now, false); err != nil {
				return err
			}
		}
		if err := recordRequestInTx(ctx, tx, r.TxID, debitSettledRequest(r, now), o.clk.Now()); err != nil {
			return err
		}
		return o.resetExecFailures(ctx, tx, r, now)
	})
}

// cancelInTx moves a transfer that has not been decided from `from` to
// DECIDED_CANCEL and CANCELLED inside tx, with a state reason code. H is
// released by the cancel primitive; a payer-bank hold must have been
// released before.
func (o *Orchestrator) cancelInTx(ctx context.Context, tx *store.Tx, txid string, from lane.TxState, reason string, payload map[string]any) error {
	res, err := o.lanes.CancelInTx(ctx, tx, lane.Cancel{TxID: txid, ReasonCode: reason, FromStates: []lane.TxState{from}, Payload: payload})
	if err != nil {
		return err
	}
	if !res.Applied {
		return errConflict
	}
	if err := o.applyInTx(ctx, tx, lane.Transition{TxID: txid, From: lane.DecidedCancel, To: lane.Cancelled,
		EventType: finality.Cancelled, Payload: map[string]any{"reason_code": reason}}); err != nil {
		return err
	}
	o.log.InfoContext(ctx, "orchestrator.cancelled", "txid", txid, "reason_code", reason)
	return nil
}

// notify sends credit-notify to the payee bank and debit-settled to the
// payer bank after SETTLED (each once; a failure is retried by the
// queue), then records both in one commit that also completes the
// transfer's work item.
func (o *Orchestrator) notify(ctx context.Context, r txRow) error {
	if r.CreditNotified && r.DebitDone {
		return nil
	}
	if !r.CreditNotified {
		var resp bankapi.NotifyResponse
		if err := o.send(ctx, r.PayeeBank, r.TxID, &bankapi.CreditNotifyRequest{RequestIDValue: requestID(r.TxID, bankapi.CreditNotify),
			TxID: r.TxID, PayeeAccountHash: r.PayeeAcct, Amount: r.amount(), PayerBankID: r.PayerBank}, &resp); err != nil {
			return err
		}
	}
	var debitErr error
	if !r.DebitDone {
		var resp bankapi.DebitSettledResponse
		// The body recorded at the settlement; r.UpdatedAt only for a
		// transfer settled before bodies were recorded (as it was sent then).
		debitErr = o.send(ctx, r.PayerBank, r.TxID, debitSettledRequest(r, r.UpdatedAt), &resp)
	}
	now := clock.Stamp(o.clk.Now())
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		sets := "credit_notified_at = COALESCE(credit_notified_at, ?)"
		args := []any{now}
		if debitErr == nil {
			sets += ", debit_settled_at = COALESCE(debit_settled_at, ?)"
			args = append(args, now)
		}
		if err := setProgress(ctx, tx, r.TxID, now, sets, args...); err != nil {
			return err
		}
		if debitErr != nil {
			return nil
		}
		return o.finishClaimInTx(ctx, tx)
	})
	if err != nil {
		return err
	}
	return debitErr
}

// work runs one claimed item.
func (o *Orchestrator) work(ctx context.Context, it Item) error {
	if o.banks == nil {
		return fmt.Errorf("orchestrator: Config.Banks is not set")
	}
	switch it.Kind {
	case KindDrive:
		return o.drive(ctx, it.TxID)
	case KindRefund:
		return o.refundStep(ctx, it.TxID)
	case KindGtid:
		return o.driveGtid(ctx, it.TxID)
	case KindRtp:
		return o.driveRtp(ctx, it.TxID)
	case KindRelease:
		return o.releaseStep(ctx, it.TxID)
	}
	return domainerr.New("INVARIANT_VIOLATION", "unknown work item kind", map[string]any{"kind": it.Kind})
}

// resetExecFailures clears the transfer's count of failed execution calls
// after a success; r was loaded by this step (only the worker holding the
// transfer's item writes the count), so a count of 0 costs no statement.
func (o *Orchestrator) resetExecFailures(ctx context.Context, tx *store.Tx, r txRow, now string) error {
	if r.ExecFailures == 0 {
		return nil
	}
	return setProgress(ctx, tx, r.TxID, now, "exec_failures = 0")
}
