package orchestrator

import (
	"context"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/conditions"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
)

// recheckRequestID is the request_id of the AML recheck at claim: its own
// name, so the bank never answers it with the INITIAL check's stored reply.
func recheckRequestID(txid string) string {
	k, err := idem.TxKey(txid, "authority-recheck", "ZC")
	if err != nil {
		return "TX:" + txid + ":authority-recheck:ZC"
	}
	return k
}

// presenter is the non-repudiation part of a claim recorded in the log
// (001 §15.4): who presented, when, with which signature. Never the
// preimage.
func presenter(req HtlcClaim) map[string]any {
	return map[string]any{"presenter_org_id": req.PresenterOrgID, "presenter_system_id": req.PresenterSystemID,
		"presented_at": req.PresentedAt, "present_signature": req.PresentSignature}
}

// ClaimHTLC is POST /api/htlc/{htlc_id}/claim by issuer, the payee bank
// (anyone else: HTLC_NOT_FOUND). In order (001 §15.3-15.5):
//
//   - an HTLC already claimed with this preimage answers the same view
//     (Replayed): a claim succeeds once;
//   - a timelock passed by 1 ms: the HTLC is cancelled (TIMELOCK_EXPIRED)
//     and the claim refused with EXPIRED;
//   - a preimage whose SHA-256 is not the hashlock: HtlcClaimRejected
//     (INVALID_PREIMAGE) is recorded, the HTLC stays HTLC_LOCKED, and the
//     claim is refused with PREIMAGE_MISMATCH;
//   - attached conditions are evaluated by the ConditionChecker;
//     HtlcConditionsEvaluated is recorded either way, and an unmet (or
//     unevaluable) expression is CONDITIONS_NOT_MET;
//   - when the timelock runs past the creation's JST business day, the
//     payer bank is asked again (authority-check RECHECK): NG cancels the
//     HTLC (RECHECK_AUTHORITY_NG); no answer refuses the claim without a
//     transition (HtlcClaimRejected, RECHECK_AUTHORITY_UNAVAILABLE) and
//     leaves it claimable — fail closed, never released unscreened;
//   - otherwise HTLC_LOCKED -> HTLC_FULFILL_REQUESTED (HtlcFulfillRequested)
//     with the contract's secret_verified, and the drive settles it.
//
// The preimage is used to compute its hash and dropped: no row, log line
// or FinalityLog payload holds it.
func (o *Orchestrator) ClaimHTLC(ctx context.Context, htlcID string, req HtlcClaim, issuer string) (HtlcView, error) {
	c, r, err := o.loadHtlc(ctx, "htlc_id", htlcID)
	if err != nil {
		return HtlcView{}, err
	}
	if issuer != c.PayeeBankID {
		return HtlcView{}, HtlcNotFound(htlcID)
	}
	presented, err := hashOf(req.Preimage)
	if err != nil {
		return HtlcView{}, err
	}
	match := presented == c.Hashlock
	if v, done, err := o.claimSettledAnswer(c, r, match); done {
		return v, err
	}
	if r.State != lane.HtlcLocked || r.Owner != lane.OwnerZC {
		return HtlcView{}, domainerr.New("STATE_GUARD", "the HTLC is not claimable by preimage in its state",
			map[string]any{"htlc_id": htlcID, "state": string(c.State), "tx_state": string(r.State)})
	}
	if expiredAt(c, o.clk.Now()) {
		return o.claimAfterExpiry(ctx, c)
	}
	if !match {
		if _, err := o.lanes.RecordWithLog(ctx, lane.Record{TxID: c.TxID, State: lane.HtlcLocked, EventType: finality.HtlcClaimRejected,
			Payload: withPresenter(req, map[string]any{"reason_code": ReasonInvalidPreimage, "htlc_id": c.HtlcID, "hashlock": c.Hashlock,
				"presented_hash": presented})}); err != nil {
			return HtlcView{}, err
		}
		o.log.InfoContext(ctx, "htlc.claim_rejected", "htlc_id", c.HtlcID, "txid", c.TxID, "reason_code", ReasonInvalidPreimage)
		return HtlcView{}, domainerr.New("PREIMAGE_MISMATCH", "the preimage does not hash to the hashlock", map[string]any{"htlc_id": c.HtlcID})
	}
	var cond *condEval
	if c.ConditionExprJSON != "" {
		ev := o.evaluateConditions(ctx, c, c.ConditionExprJSON)
		if !ev.met {
			return HtlcView{}, o.refuseConditions(ctx, c, ev)
		}
		cond = &ev
	}
	return o.fulfilHTLC(ctx, c, req, cond, ClaimSourcePreimage, match)
}

// fulfilHTLC is the end every claim route shares once the claim's own
// proof is accepted (the preimage, or the conditions): the AML recheck
// when required (NG cancels, no answer refuses — fail closed), then in one
// commit the met evaluation (with its equivocation Cases), HTLC_LOCKED ->
// HTLC_FULFILL_REQUESTED (HtlcFulfillRequested, source) with the
// contract's secret_verified, and the drive's work item; the commit
// re-checks the timelock.
func (o *Orchestrator) fulfilHTLC(ctx context.Context, c lane.HtlcContract, req HtlcClaim, cond *condEval, source string, match bool) (HtlcView, error) {
	recheck := "NOT_REQUIRED"
	if c.AuthorityRecheckRequired {
		var resp bankapi.CheckResponse
		err := o.send(ctx, c.PayerBankID, c.TxID, &bankapi.AuthorityCheckRequest{RequestIDValue: recheckRequestID(c.TxID),
			TxID: c.TxID, CheckType: bankapi.CheckRecheck}, &resp)
		switch {
		case err != nil:
			if _, rerr := o.lanes.RecordWithLog(ctx, lane.Record{TxID: c.TxID, State: lane.HtlcLocked, EventType: finality.HtlcClaimRejected,
				Payload: withPresenter(req, map[string]any{"reason_code": ReasonRecheckAuthorityUnavailable, "htlc_id": c.HtlcID,
					"cause_reason_code": domainerr.Code(err)})}); rerr != nil {
				return HtlcView{}, rerr
			}
			o.log.InfoContext(ctx, "htlc.claim_rejected", "htlc_id", c.HtlcID, "txid", c.TxID, "reason_code", ReasonRecheckAuthorityUnavailable,
				"cause", domainerr.Code(err))
			return HtlcView{}, domainerr.Wrap("BANK_ERROR", err,
				"the payer bank did not answer the AML recheck; the claim is refused and may be retried before the timelock",
				map[string]any{"htlc_id": c.HtlcID, "state_reason_code": ReasonRecheckAuthorityUnavailable, "cause_reason_code": domainerr.Code(err)})
		case resp.Result != bankapi.ResultOK:
			err := o.db.Write(ctx, func(tx *store.Tx) error {
				return o.htlcCancelInTx(ctx, tx, c, lane.HtlcLocked, ReasonRecheckAuthorityNG, map[string]any{"bank_reason_code": resp.ReasonCode})
			})
			if err == errConflict {
				return o.claimReload(ctx, c.HtlcID, match)
			}
			if err != nil {
				return HtlcView{}, err
			}
			return HtlcView{}, domainerr.New("AUTHORITY_CHECK_NG", "the payer bank's AML recheck answered NG; the HTLC is cancelled",
				map[string]any{"htlc_id": c.HtlcID, "state_reason_code": ReasonRecheckAuthorityNG, "bank_reason_code": resp.ReasonCode})
		}
		recheck = bankapi.ResultOK
	}
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		now := o.clk.Now()
		if expiredAt(c, now) { // the timelock passed while the claim was being checked
			return errConflict
		}
		if cond != nil {
			if err := o.recordConditionsTx(ctx, tx, c, *cond); err != nil {
				return err
			}
		}
		// secret_verified says the preimage was checked: a claim by
		// conditions or attestation fulfils the HTLC without it.
		secret := source == ClaimSourcePreimage
		var set map[string]any
		if secret {
			set = map[string]any{"secret_verified": 1}
		}
		res, err := o.lanes.TransitionInTx(ctx, tx, lane.Transition{TxID: c.TxID, From: lane.HtlcLocked, To: lane.HtlcFulfillRequested,
			EventType: finality.HtlcFulfillRequested,
			Payload: withPresenter(req, map[string]any{"htlc_id": c.HtlcID, "hashlock": c.Hashlock, "secret_verified": secret,
				"verified_at": clock.Stamp(now), "authority_recheck": recheck, "source": source}),
			SideUpdates: lane.HtlcEdge(c.HtlcID, lane.HtlcContractLocked, lane.HtlcContractFulfill, clock.Stamp(now), set)})
		if err != nil {
			return err
		}
		if !res.Applied {
			return errConflict
		}
		return o.enqueue(ctx, tx, KindDrive, c.TxID, LaneHTLC, StatusReady, now)
	})
	if err == errConflict || domainerr.Has(err, "CONCURRENCY_CONFLICT") {
		return o.claimReload(ctx, c.HtlcID, match)
	}
	if err != nil {
		return HtlcView{}, err
	}
	o.log.InfoContext(ctx, "htlc.claimed", "htlc_id", c.HtlcID, "txid", c.TxID, "authority_recheck", recheck, "source", source)
	c, r, err := o.loadHtlc(ctx, "htlc_id", c.HtlcID)
	if err != nil {
		return HtlcView{}, err
	}
	return htlcView(c, string(r.State), r.ReasonCode, r.Owner), nil
}

func withPresenter(req HtlcClaim, m map[string]any) map[string]any {
	for k, v := range presenter(req) {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// claimSettledAnswer answers a claim of an HTLC that is past HTLC_LOCKED:
// claimed already (the same answer with the right preimage), cancelled
// (EXPIRED for a passed timelock, STATE_GUARD otherwise). done is false
// when the claim must go on.
func (o *Orchestrator) claimSettledAnswer(c lane.HtlcContract, r txRow, match bool) (HtlcView, bool, error) {
	switch c.State {
	case lane.HtlcContractFulfill:
		if !match {
			return HtlcView{}, true, domainerr.New("PREIMAGE_MISMATCH", "the preimage does not hash to the hashlock", map[string]any{"htlc_id": c.HtlcID})
		}
		v := htlcView(c, string(r.State), r.ReasonCode, r.Owner)
		v.Replayed = true
		return v, true, nil
	case lane.HtlcContractCanceled:
		if r.ReasonCode == ReasonTimelockExpired {
			return HtlcView{}, true, domainerr.New("EXPIRED", "the HTLC's timelock has passed; it was cancelled",
				map[string]any{"htlc_id": c.HtlcID, "timelock": c.Timelock})
		}
		return HtlcView{}, true, domainerr.New("STATE_GUARD", "the HTLC was cancelled", map[string]any{"htlc_id": c.HtlcID, "reason_code": r.ReasonCode})
	}
	return HtlcView{}, false, nil
}

// claimReload answers a claim whose commit lost a race: to another claim
// (the same answer), to the sweep (EXPIRED) or to a recheck NG.
func (o *Orchestrator) claimReload(ctx context.Context, htlcID string, match bool) (HtlcView, error) {
	c, r, err := o.loadHtlc(ctx, "htlc_id", htlcID)
	if err != nil {
		return HtlcView{}, err
	}
	if v, done, err := o.claimSettledAnswer(c, r, match); done {
		return v, err
	}
	if expiredAt(c, o.clk.Now()) {
		return o.claimAfterExpiry(ctx, c)
	}
	return HtlcView{}, domainerr.New("CONCURRENCY_CONFLICT", "the HTLC changed during the claim; retry", map[string]any{"htlc_id": htlcID})
}

// claimAfterExpiry cancels an HTLC whose timelock has passed (as the
// sweep would) and refuses the claim with EXPIRED.
func (o *Orchestrator) claimAfterExpiry(ctx context.Context, c lane.HtlcContract) (HtlcView, error) {
	_, r, err := o.loadHtlc(ctx, "htlc_id", c.HtlcID)
	if err != nil {
		return HtlcView{}, err
	}
	if r.State == lane.HtlcLocked || r.State == lane.HtlcOnchainPending {
		if _, _, err := o.expireHtlc(ctx, c, r.State, r.Owner); err != nil {
			return HtlcView{}, err
		}
	}
	c2, r2, err := o.loadHtlc(ctx, "htlc_id", c.HtlcID)
	if err != nil {
		return HtlcView{}, err
	}
	if c2.State == lane.HtlcContractFulfill { // a claim committed first
		v := htlcView(c2, string(r2.State), r2.ReasonCode, r2.Owner)
		v.Replayed = true
		return v, nil
	}
	return HtlcView{}, domainerr.New("EXPIRED", "the HTLC's timelock has passed; the claim is refused (001 §15.4)",
		map[string]any{"htlc_id": c.HtlcID, "timelock": c.Timelock})
}

// condEval is one evaluation of an HTLC's conditions: the
// HtlcConditionsEvaluated record, whether it is met, and the templates
// whose attestations equivocate (each gets its ATTESTATION_EQUIVOCATION
// Case in the commit that records the evaluation).
type condEval struct {
	rec         lane.Record
	met         bool
	equivocated []string
	evaluatedAt string
}

// evaluateConditions asks the ConditionChecker about expr for c and
// returns the HtlcConditionsEvaluated record to write and whether the
// expression is met. A checker error is "not met" (fail closed).
func (o *Orchestrator) evaluateConditions(ctx context.Context, c lane.HtlcContract, expr string) condEval {
	now := o.clk.Now()
	payload := map[string]any{"htlc_id": c.HtlcID, "evaluated_at": clock.Stamp(now)}
	ev := condEval{evaluatedAt: clock.Stamp(now)}
	if out, err := o.cfg.Conditions.CheckHTLC(ctx, ConditionInput{HtlcID: c.HtlcID, TxID: c.TxID,
		Expr: []byte(expr), Now: now}); err != nil {
		payload["error"], payload["cause_reason_code"] = err.Error(), domainerr.Code(err)
	} else {
		ev.met, ev.equivocated = out.Met, out.Equivocated
		if out.Detail != nil {
			payload["detail"] = out.Detail
		}
	}
	payload["met"] = ev.met
	if !ev.met {
		payload["reason_code"] = "CONDITIONS_NOT_MET"
	}
	if len(ev.equivocated) > 0 {
		payload["equivocated"] = ev.equivocated
	}
	o.log.InfoContext(ctx, "htlc.conditions_evaluated", "htlc_id", c.HtlcID, "txid", c.TxID, "met", ev.met, "equivocated", len(ev.equivocated))
	ev.rec = lane.Record{TxID: c.TxID, State: lane.HtlcLocked, EventType: finality.HtlcConditionsEvaluated, Payload: payload}
	return ev
}

// recordConditionsTx writes ev's HtlcConditionsEvaluated entry and opens
// (or joins) one ATTESTATION_EQUIVOCATION Case per equivocating template
// (000 §11.2-c, 001 §15.5.2: the leaf fails closed, the HTLC stays
// HTLC_LOCKED), inside tx. The row no longer HTLC_LOCKED is errConflict.
func (o *Orchestrator) recordConditionsTx(ctx context.Context, tx *store.Tx, c lane.HtlcContract, ev condEval) error {
	res, err := o.lanes.RecordInTx(ctx, tx, ev.rec)
	if err != nil {
		return err
	}
	if !res.Applied {
		return errConflict
	}
	if len(ev.equivocated) == 0 {
		return nil
	}
	_, err = conditions.OpenEquivocationCasesTx(ctx, tx, o.cases, conditions.Decision{Equivocated: ev.equivocated, EvaluatedAt: ev.evaluatedAt},
		c.HtlcID, c.TxID)
	return err
}

// refuseConditions records an unmet evaluation (and its equivocation
// Cases) and answers the refusal: ATTESTATION_EQUIVOCATION when a
// template equivocated, CONDITIONS_NOT_MET otherwise. The HTLC stays
// HTLC_LOCKED and claimable until its timelock.
func (o *Orchestrator) refuseConditions(ctx context.Context, c lane.HtlcContract, ev condEval) error {
	err := o.db.Write(ctx, func(tx *store.Tx) error { return o.recordConditionsTx(ctx, tx, c, ev) })
	if err == errConflict {
		return domainerr.New("CONCURRENCY_CONFLICT", "the HTLC changed during the claim; retry", map[string]any{"htlc_id": c.HtlcID})
	}
	if err != nil {
		return err
	}
	if len(ev.equivocated) > 0 {
		return domainerr.New("ATTESTATION_EQUIVOCATION", "attestations of a template disagree (PASS and FAIL); the leaf fails closed and a Case is open",
			map[string]any{"htlc_id": c.HtlcID, "templates": ev.equivocated})
	}
	return domainerr.New("CONDITIONS_NOT_MET", "the HTLC's condition expression is not met", map[string]any{"htlc_id": c.HtlcID})
}
