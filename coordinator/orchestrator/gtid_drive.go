package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/mandate"
	"github.com/zcgw/zcgw/coordinator/store"
)

// legAnswer is a leg's leg-ready-check answer as stored in
// GtidLegs.bank_proof_ref.
type legAnswer struct {
	Result     string `json:"result"` // OK|NG
	ReasonCode string `json:"reason_code,omitempty"`
	BankID     string `json:"bank_id"`
	AnsweredAt string `json:"answered_at"`
}

// legRequestID is the request_id of a ZC->bank command for a GTID leg
// (spec 002 §12.4 LEG:{gtid}:{leg_id}:{name}:{issuer}).
func legRequestID(gtid, legID string, cmd bankapi.Command) string {
	k, err := idem.LegKey(gtid, legID, string(cmd), "ZC")
	if err != nil { // gtid and leg_id are validated at registration
		return "LEG:" + gtid + ":" + legID + ":" + string(cmd) + ":ZC"
	}
	return k
}

// driveGtid moves a GTID as far as it can go now (the KindGtid item):
//   - GT_RECEIVED / GT_PRECHECKED: leg-ready-check to every leg's bank not
//     answered yet; an NG (or a refusal) cancels with LEG_NOT_READY; when
//     every leg is READY, the decision commit;
//   - GT_DECIDED_CANCEL: release-reserve of every PAYER leg's hold, then
//     GT_CANCELLED;
//   - GT_DECIDED_TO_SETTLE: nothing (the legs' transfers run their DRIVE
//     items; the last one to settle settles the GTID).
//
// A bank that does not answer is retried by the queue until the GTID's
// expires_at, when the timeout sweep cancels it (CANCEL_GTID_TIMEOUT).
func (o *Orchestrator) driveGtid(ctx context.Context, gtid string) error {
	for i := 0; i < maxSteps; i++ {
		var g gtidRow
		var legs []lane.Leg
		if err := o.db.Read(ctx, func(tx *store.Tx) error {
			var err error
			g, legs, err = readGtidTx(ctx, tx, gtid)
			return err
		}); err != nil {
			return err
		}
		switch g.state {
		case lane.GtReceived, lane.GtPrechecked:
			done, err := o.gtidReady(ctx, g, legs)
			if err != nil || done {
				return err
			}
		case lane.GtDecidedCancel:
			return o.gtidRelease(ctx, g, legs)
		default:
			return nil
		}
	}
	return domainerr.New("INVARIANT_VIOLATION", "GTID did not move within the step bound", map[string]any{"gtid": gtid})
}

// gtidReady asks the legs not answered yet, then cancels (an NG) or
// decides (all READY).
func (o *Orchestrator) gtidReady(ctx context.Context, g gtidRow, legs []lane.Leg) (bool, error) {
	if g.expired(o.clk.Now()) {
		return false, o.cancelGtid(ctx, g.gtid, g.state, ReasonGtidTimeout, map[string]any{"expires_at": g.expiresAt})
	}
	var notReady []string
	var answers []lane.LegTransition
	var retry error
	ready := 0
	for _, l := range legs {
		switch l.State {
		case lane.LegNotReady:
			notReady = append(notReady, originLegID(l))
			continue
		case lane.LegReady:
			ready++
			continue
		case lane.LegPending:
		default:
			continue
		}
		if len(notReady) > 0 {
			break // one NG decides: no need to ask the rest
		}
		var resp bankapi.CheckResponse
		id := originLegID(l)
		err := o.send(ctx, l.BankID, g.gtid, &bankapi.LegReadyCheckRequest{RequestIDValue: legRequestID(g.gtid, id, bankapi.LegReadyCheck),
			GTID: g.gtid, LegID: id, Role: string(l.Role), Amount: bankapi.Amount{Value: l.AmountValue, Currency: l.Currency},
			AccountHash: l.AccountHash}, &resp)
		if err != nil && domainerr.ShouldRetry(err) {
			retry = err // asked again by the queue's retry; the sweep cancels at expires_at
			continue
		}
		ans := legAnswer{Result: resp.Result, ReasonCode: resp.ReasonCode, BankID: l.BankID, AnsweredAt: clock.Stamp(o.clk.Now())}
		if err != nil { // refused by the bank: the leg cannot be ready
			ans = legAnswer{Result: bankapi.ResultNG, ReasonCode: domainerr.Code(err), BankID: l.BankID, AnsweredAt: ans.AnsweredAt}
		}
		to := lane.LegReady
		if ans.Result != bankapi.ResultOK {
			ans.Result, to = bankapi.ResultNG, lane.LegNotReady
		}
		proof, err := json.Marshal(ans)
		if err != nil {
			return true, err
		}
		o.log.InfoContext(ctx, "orchestrator.gtid_leg_checked", "gtid", g.gtid, "leg_id", id, "bank_id", l.BankID,
			"result", ans.Result, "reason_code", ans.ReasonCode)
		answers = append(answers, lane.LegTransition{LegID: l.LegID, GTID: g.gtid, From: lane.LegPending, To: to, BankProofRef: string(proof)})
		if to == lane.LegNotReady {
			notReady = append(notReady, id)
		} else {
			ready++
		}
	}
	// The answers in one commit, with the cancel when one is NG. A leg no
	// longer PENDING (the GTID was cancelled meanwhile) rolls it back: reload.
	if len(answers) > 0 || len(notReady) > 0 {
		cancelled, applied := false, false
		if err := o.commit(ctx, func(tx *store.Tx) error {
			applied = false
			for _, a := range answers {
				res, err := o.lanes.TransitionLegInTx(ctx, tx, a)
				if err != nil {
					return err
				}
				if !res.Applied {
					return errConflict
				}
			}
			if len(notReady) > 0 {
				var err error
				cancelled, err = o.cancelGtidInTx(ctx, tx, g.gtid, g.state, ReasonLegNotReady, map[string]any{"not_ready_leg_ids": notReady})
				if err != nil {
					return err
				}
				if !cancelled {
					return errConflict
				}
			}
			applied = true
			return nil
		}); err != nil {
			return true, err
		}
		if cancelled {
			o.log.InfoContext(ctx, "orchestrator.gtid_cancel_decided", "gtid", g.gtid, "reason_code", ReasonLegNotReady)
		}
		if !applied || len(notReady) > 0 {
			return false, nil // reload: cancelled now, or moved meanwhile
		}
	}
	if retry != nil {
		return true, retry
	}
	if ready < len(legs) {
		return false, nil
	}
	err := o.decideGtid(ctx, g, legs)
	if err == errGtidExpired {
		return false, o.cancelGtid(ctx, g.gtid, g.state, ReasonGtidTimeout, map[string]any{"expires_at": g.expiresAt})
	}
	if domainerr.Has(err, "H_LIMIT_EXCEEDED") {
		return false, o.cancelGtid(ctx, g.gtid, g.state, ReasonHLimitExceeded, map[string]any{"cause_reason_code": "H_LIMIT_EXCEEDED"})
	}
	if domainerr.Has(err, "DAILY_LIMIT_EXCEEDED") {
		de, _ := domainerr.As(err)
		return false, o.cancelGtid(ctx, g.gtid, g.state, ReasonDailyLimitExceeded, map[string]any{"cause_reason_code": "DAILY_LIMIT_EXCEEDED", "details": de.Details})
	}
	var refused gtidLegRefused
	if errors.As(err, &refused) {
		return false, o.cancelGtid(ctx, g.gtid, g.state, refused.reason, refused.payload)
	}
	return false, err
}

// gtidLegRefused rolls back a decision whose precheck refused a leg (its
// mandate): the GTID is cancelled with reason, every hold released.
type gtidLegRefused struct {
	reason  string
	payload map[string]any
}

func (e gtidLegRefused) Error() string { return "GTID leg refused at precheck: " + e.reason }

// gtidPrecheckLegsInTx is the GTID's precheck of its PAYER legs inside
// the decision commit, as Submit and precheck do for a transfer: each leg
// is checked against the GTID's mandate (mandate.CheckTx with lane GTID;
// a refusal is gtidLegRefused with the MANDATE_* reason and the verdict)
// and its JPY amount is counted in its payer's daily total
// (hlimit.ConsumeDaily; DAILY_LIMIT_EXCEEDED rolls the whole decision
// back). It returns the JST business date the amounts were counted in.
func (o *Orchestrator) gtidPrecheckLegsInTx(ctx context.Context, tx *store.Tx, g gtidRow, pairs []legPair) (string, error) {
	now := o.clk.Now()
	date := ""
	for _, p := range pairs {
		if g.mandateID != "" {
			v, err := mandate.CheckTx(ctx, tx, mandate.Request{MandateID: g.mandateID, PayerBankID: p.payer.BankID,
				Amount: p.payer.Amount.Value, Lane: LaneGtid}, now)
			if err != nil {
				return "", err
			}
			if !v.Allowed {
				return "", gtidLegRefused{reason: mandateReasons[v.ReasonCode],
					payload: map[string]any{"refused_leg_id": p.payer.LegID, "mandate": v}}
			}
		}
		if p.payer.Amount.Currency != "JPY" {
			continue // the daily limit is in JPY minor units
		}
		d, err := o.h.ConsumeDaily(ctx, tx, p.payer.BankID, p.payer.Amount.Value)
		if err != nil {
			if de, ok := domainerr.As(err); ok && de.Code == "DAILY_LIMIT_EXCEEDED" {
				de.Details["refused_leg_id"] = p.payer.LegID
			}
			return "", err
		}
		date = d.BusinessDate
	}
	return date, nil
}

// decideGtid is the GT-level decision, one commit: GT_RECEIVED ->
// GT_PRECHECKED -> GT_DECIDED_TO_SETTLE (a CAS on the GTID row, so a
// concurrent cancel and this decision cannot both apply), then for each
// leg pair its transfer materialised at DECIDED_TO_SETTLE (lane GTID,
// txid bankapi.LegTxID of the PAYER leg, whose hold at the payer bank
// the execute-debit consumes), ZC's H reserved, the execute-debit body
// recorded and the transfer's DRIVE item queued. The legs must still be
// READY (their CAS), else nothing is written.
func (o *Orchestrator) decideGtid(ctx context.Context, g gtidRow, legs []lane.Leg) error {
	reqs := make([]GtidLegRequest, len(legs))
	for i, l := range legs {
		reqs[i] = GtidLegRequest{LegID: originLegID(l), Role: string(l.Role), BankID: l.BankID, AccountHash: l.AccountHash,
			Amount: bankapi.Amount{Value: l.AmountValue, Currency: l.Currency}}
	}
	pairs, err := pairLegs(reqs)
	if err != nil {
		return err
	}
	var txids []string
	decided := false
	err = o.commit(ctx, func(tx *store.Tx) error {
		txids, decided = txids[:0], false
		if g.expired(o.clk.Now()) {
			return errGtidExpired // decided only before expires_at
		}
		from := g.state
		if from == lane.GtReceived {
			res, err := o.lanes.TransitionGtidInTx(ctx, tx, lane.GtidTransition{GTID: g.gtid, From: lane.GtReceived, To: lane.GtPrechecked,
				EventType: finality.GtidPrechecked, Payload: map[string]any{"legs_ready": len(legs)}})
			if err != nil {
				return err
			}
			if !res.Applied {
				return errConflict
			}
			from = lane.GtPrechecked
		}
		for _, p := range pairs {
			txids = append(txids, bankapi.LegTxID(g.gtid, p.payer.LegID))
		}
		res, err := o.lanes.TransitionGtidInTx(ctx, tx, lane.GtidTransition{GTID: g.gtid, From: from, To: lane.GtDecidedToSettle,
			EventType: finality.GtidDecided, Payload: map[string]any{"decision": string(lane.GtDecidedToSettle), "txids": txids},
			SideUpdates: func(ctx context.Context, tx *store.Tx) error {
				_, err := tx.ExecContext(ctx, "UPDATE GtidTransactions SET legs_ready_count = ? WHERE gtid = ?", len(legs), g.gtid)
				return err
			}})
		if err != nil {
			return err
		}
		if !res.Applied {
			return errConflict
		}
		daily, err := o.gtidPrecheckLegsInTx(ctx, tx, g, pairs)
		if err != nil {
			return err
		}
		to, err := o.timeoutsTx(ctx, tx)
		if err != nil {
			return err
		}
		now := o.clk.Now()
		stamp := clock.Stamp(now)
		for _, p := range pairs {
			txid := bankapi.LegTxID(g.gtid, p.payer.LegID)
			hResID := BatchReservationID(txid)
			bankRes := bankapi.LegReservationRef(g.gtid, p.payer.LegID)
			dp := decisionProofRef(txid)
			payload := map[string]any{"decision_proof_ref": dp, "h_reservation_id": hResID, "bank_reservation_ref": bankRes}
			extra := map[string]any{"h_reservation_id": hResID, "decision_proof_ref": dp}
			if p.payer.Amount.Currency == "JPY" {
				payload[hlimit.DailyDateKey] = daily
			}
			if g.mandateID != "" {
				extra["mandate_id"] = g.mandateID
			}
			if _, err := o.lanes.MaterialiseLegTxInTx(ctx, tx, lane.LegTx{GTID: g.gtid,
				LegIDs: []string{bankapi.LegTxID(g.gtid, p.payer.LegID), bankapi.LegTxID(g.gtid, p.payee.LegID)},
				Tx: lane.NewTx{TxID: txid, AmountValue: p.payer.Amount.Value, Currency: p.payer.Amount.Currency,
					PayerBankID: p.payer.BankID, PayerAccountHash: p.payer.AccountHash, PayeeBankID: p.payee.BankID,
					PayeeAccountHash: p.payee.AccountHash, IdempotencyKey: legRequestID(g.gtid, p.payer.LegID, "DecidedToSettle"),
					ExtraColumns: extra, Payload: payload}}); err != nil {
				if domainerr.Has(err, "CONCURRENCY_CONFLICT") {
					return errConflict // a leg moved (cancelled) meanwhile: reload
				}
				return err
			}
			if _, err := o.h.ReserveH(ctx, tx, hlimit.ReserveRequest{ReservationID: hResID, TxID: txid, BankID: p.payer.BankID,
				Currency: p.payer.Amount.Currency, Amount: p.payer.Amount.Value}); err != nil {
				return err
			}
			body, err := json.Marshal(map[string]any{"gtid": g.gtid, "payer_leg_id": p.payer.LegID, "payee_leg_id": p.payee.LegID})
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO OrchestratorTransfers (`+progressColumns+`, bank_reservation_ref)
				VALUES (?, ?, ?, ?, ?, ?)`, txid, g.initiator, string(body), stamp, stamp, bankRes); err != nil {
				return wrapDB("insert leg progress", err)
			}
			r := txRow{TxID: txid, Lane: LaneGtid, Amount: p.payer.Amount.Value, Currency: p.payer.Amount.Currency,
				PayerBank: p.payer.BankID, PayerAcct: p.payer.AccountHash, DecisionProofRef: dp, BankRes: bankRes}
			if err := recordRequestInTx(ctx, tx, txid, executeDebitRequest(r, now.Add(to.Exec)), now); err != nil {
				return err
			}
			if err := o.enqueue(ctx, tx, KindDrive, txid, LaneGtid, StatusReady, now); err != nil {
				return err
			}
		}
		decided = true
		return nil
	})
	if err == nil && decided {
		o.log.InfoContext(ctx, "orchestrator.gtid_decided", "gtid", g.gtid, "txids", txids)
	}
	return err
}

// errGtidExpired rolls back a decision reached at or after expires_at.
const errGtidExpired = sentinel("GTID expired before its decision")

// expired reports whether the GTID's expires_at has passed at now.
func (g gtidRow) expired(now time.Time) bool {
	t, err := clock.ParseStamp(g.expiresAt)
	return err == nil && !now.Before(t)
}

// cancelGtid is the GT-level cancel, one commit: from -> GT_DECIDED_CANCEL
// (a CAS on the GTID row), every leg not terminal -> LEG_CANCELLED, and
// the GTID item queued to release the payer legs' holds. A GTID no longer
// in from is left alone.
func (o *Orchestrator) cancelGtid(ctx context.Context, gtid string, from lane.GtidState, reason string, payload map[string]any) error {
	applied := false
	err := o.commit(ctx, func(tx *store.Tx) error {
		var err error
		applied, err = o.cancelGtidInTx(ctx, tx, gtid, from, reason, payload)
		return err
	})
	if err == nil && applied {
		o.log.InfoContext(ctx, "orchestrator.gtid_cancel_decided", "gtid", gtid, "reason_code", reason)
	}
	return err
}

func (o *Orchestrator) cancelGtidInTx(ctx context.Context, tx *store.Tx, gtid string, from lane.GtidState, reason string, payload map[string]any) (bool, error) {
	p := map[string]any{"reason_code": reason}
	for k, v := range payload {
		p[k] = v
	}
	res, err := o.lanes.TransitionGtidInTx(ctx, tx, lane.GtidTransition{GTID: gtid, From: from, To: lane.GtDecidedCancel,
		EventType: finality.GtidDecidedCancel, Payload: p})
	if err != nil || !res.Applied {
		return false, err
	}
	legs, err := lane.LegsInTx(ctx, tx, gtid)
	if err != nil {
		return false, err
	}
	for _, l := range legs {
		if !lane.CanTransitionLeg(l.State, lane.LegCancelled) {
			continue
		}
		lr, err := o.lanes.TransitionLegInTx(ctx, tx, lane.LegTransition{LegID: l.LegID, GTID: gtid, From: l.State, To: lane.LegCancelled})
		if err != nil {
			return false, err
		}
		if !lr.Applied {
			return false, errConflict
		}
	}
	return true, o.enqueue(ctx, tx, KindGtid, gtid, LaneGtid, StatusReady, o.clk.Now())
}

// gtidRelease releases the hold every PAYER leg may hold at its bank
// (release-reserve; a bank that holds nothing for the leg answers
// TX_NOT_FOUND, which is released too: a leg-ready-check that timed out
// may or may not have placed it), then GT_DECIDED_CANCEL -> GT_CANCELLED.
func (o *Orchestrator) gtidRelease(ctx context.Context, g gtidRow, legs []lane.Leg) error {
	var released []string
	for _, l := range legs {
		if l.Role != lane.LegPayer {
			continue
		}
		var resp bankapi.ReleaseReserveResponse
		id := originLegID(l)
		err := o.send(ctx, l.BankID, g.gtid, &bankapi.ReleaseReserveRequest{RequestIDValue: legRequestID(g.gtid, id, bankapi.ReleaseReserve),
			TxID: bankapi.LegTxID(g.gtid, id), ReservationRef: bankapi.LegReservationRef(g.gtid, id)}, &resp)
		switch {
		case err == nil:
			released = append(released, resp.ReservationRef)
		case domainerr.Has(err, "TX_NOT_FOUND"):
		default:
			return err // retried: the holds are released before GT_CANCELLED
		}
	}
	return o.commit(ctx, func(tx *store.Tx) error {
		res, err := o.lanes.TransitionGtidInTx(ctx, tx, lane.GtidTransition{GTID: g.gtid, From: lane.GtDecidedCancel, To: lane.GtCancelled,
			EventType: finality.GtidCancelled, Payload: map[string]any{"reason_code": g.reason, "released_reservation_refs": released}})
		if err != nil || !res.Applied {
			return err
		}
		o.log.InfoContext(ctx, "orchestrator.gtid_cancelled", "gtid", g.gtid, "reason_code", g.reason, "released", len(released))
		return o.finishClaimInTx(ctx, tx)
	})
}

// gtidLegSettledInTx runs in the commit that settles a GTID leg's
// transfer: the transfer's legs move LEG_DECIDED -> LEG_SETTLED, and when
// every leg of the GTID is settled the GTID moves GT_DECIDED_TO_SETTLE
// (or GT_SUSPENDED, its suspended legs recovered: its Case is resolved)
// -> GT_SETTLED (GtidSettled on its chain). The GTID row is locked first
// (FOR UPDATE on PostgreSQL), so of two legs settling at once the second
// sees the first.
func (o *Orchestrator) gtidLegSettledInTx(ctx context.Context, tx *store.Tx, txid string) error {
	gtid, state, err := lockGtidOfLegTx(ctx, tx, txid)
	if err != nil {
		return err
	}
	legs, err := lane.LegsInTx(ctx, tx, gtid)
	if err != nil {
		return err
	}
	settled := 0
	for _, l := range legs {
		if l.TxID == txid && l.State == lane.LegDecided {
			lr, err := o.lanes.TransitionLegInTx(ctx, tx, lane.LegTransition{LegID: l.LegID, GTID: gtid, From: lane.LegDecided, To: lane.LegSettled})
			if err != nil {
				return err
			}
			if !lr.Applied {
				return errConflict
			}
			l.State = lane.LegSettled
		}
		if l.State == lane.LegSettled {
			settled++
		}
	}
	if settled < len(legs) {
		return nil
	}
	from := state
	payload := map[string]any{"legs_settled": settled}
	caseID := ""
	if from == lane.GtSuspended { // the suspended legs recovered
		if caseID, err = gtidCaseIDTx(ctx, tx, gtid); err != nil {
			return err
		}
		payload["case_id"] = caseID
	}
	res, err := o.lanes.TransitionGtidInTx(ctx, tx, lane.GtidTransition{GTID: gtid, From: from, To: lane.GtSettled,
		EventType: finality.GtidSettled, Payload: payload,
		SideUpdates: func(ctx context.Context, tx *store.Tx) error {
			_, err := tx.ExecContext(ctx, "UPDATE GtidTransactions SET legs_settled_count = ? WHERE gtid = ?", settled, gtid)
			return err
		}})
	if err != nil || !res.Applied {
		return err
	}
	if caseID != "" {
		if _, err := o.cases.SetState(ctx, tx, caseID, cases.StateResolved, "ZC", caseReasonGtidLegsSettled); err != nil && !domainerr.Has(err, "STATE_GUARD") {
			return err
		}
	}
	o.log.InfoContext(ctx, "orchestrator.gtid_settled", "gtid", gtid, "legs", settled, "from", string(state))
	return nil
}

// sweepGtid cancels the GTIDs still undecided at their expires_at
// (CANCEL_GTID_TIMEOUT); each is a CAS, so one decided meanwhile is left
// alone. It returns how many it cancelled.
func (o *Orchestrator) sweepGtid(ctx context.Context, now time.Time) (int, error) {
	type due struct {
		gtid  string
		state lane.GtidState
	}
	var rows []due
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		rs, err := tx.QueryContext(ctx, `SELECT gtid, state FROM GtidTransactions WHERE state IN (?, ?) AND expires_at IS NOT NULL AND expires_at <= ?
			ORDER BY expires_at`, string(lane.GtReceived), string(lane.GtPrechecked), clock.Stamp(now))
		if err != nil {
			return wrapDB("gtid sweep select", err)
		}
		defer rs.Close()
		for rs.Next() {
			var d due
			var s string
			if err := rs.Scan(&d.gtid, &s); err != nil {
				return wrapDB("gtid sweep scan", err)
			}
			d.state = lane.GtidState(s)
			rows = append(rows, d)
		}
		return rs.Err()
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range rows {
		applied := false
		if err := o.db.Write(ctx, func(tx *store.Tx) error {
			var err error
			applied, err = o.cancelGtidInTx(ctx, tx, d.gtid, d.state, ReasonGtidTimeout, map[string]any{"expired_at": clock.Stamp(now)})
			return err
		}); err != nil && err != errConflict {
			return n, err
		}
		if applied {
			n++
			o.log.InfoContext(ctx, "orchestrator.gtid_cancel_decided", "gtid", d.gtid, "reason_code", ReasonGtidTimeout)
		}
	}
	return n, nil
}
