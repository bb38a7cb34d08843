package orchestrator

import (
	"context"
	"encoding/json"

	"github.com/zcgw/zcgw/coordinator/conditions"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
)

// Claim sources recorded in HtlcFulfillRequested's payload.
const (
	ClaimSourcePreimage    = "PREIMAGE"
	ClaimSourceConditions  = "CONDITIONS"
	ClaimSourceAttestation = "ATTESTATION"
	ClaimSourceOnchain     = "ONCHAIN"
)

// ReasonAttestationNotPass is the HtlcClaimRejected reason of a
// claim-by-attestation whose attestation is not PASS (004
// ATTESTATION_NOT_PASS).
const ReasonAttestationNotPass = "ATTESTATION_NOT_PASS"

// HtlcPresenter is the non-repudiation part of a claim (001 §15.4).
type HtlcPresenter struct {
	PresenterOrgID    string `json:"presenter_org_id,omitempty"`
	PresenterSystemID string `json:"presenter_system_id,omitempty"`
	PresentedAt       string `json:"presented_at,omitempty"`
	PresentSignature  string `json:"present_signature,omitempty"`
}

func (p HtlcPresenter) claim() HtlcClaim {
	return HtlcClaim{PresenterOrgID: p.PresenterOrgID, PresenterSystemID: p.PresenterSystemID, PresentedAt: p.PresentedAt,
		PresentSignature: p.PresentSignature}
}

// HtlcConditionsClaim is the body of POST
// /api/htlc/{htlc_id}/claim-by-conditions (001 §15.5, 000 §11.3): the
// attestations presented for the expression's leaves (each recorded
// through coordinator/conditions' recordAttestation: signature, scope,
// freshness) and the presenter.
type HtlcConditionsClaim struct {
	Attestations []conditions.Attestation `json:"attestations,omitempty"`
	HtlcPresenter
}

// HtlcAttestationClaim is the body of POST
// /api/htlc/{htlc_id}/claim-by-attestation (003 HtlcContracts
// condition_template_id, 001 §15.5 "単一テンプレ"): one signed attestation
// under the HTLC's template.
type HtlcAttestationClaim struct {
	TemplateID  string                 `json:"template_id"`
	Attestation conditions.Attestation `json:"attestation"`
	HtlcPresenter
}

// ClaimHTLCByConditions is claimHtlcByConditions (001 §15.5): the payee
// bank claims an HTLC without the preimage by its condition expression.
// The presented attestations are recorded first (a verification failure
// refuses the claim with its code, nothing else written; one already
// recorded is not an error), then coordinator/conditions decides the
// expression over the recorded attestations and the ledger predicates at
// one clock reading. HtlcConditionsEvaluated is recorded either way; an
// equivocating template opens its ATTESTATION_EQUIVOCATION Case and its
// leaf fails closed; unmet is CONDITIONS_NOT_MET (or
// ATTESTATION_EQUIVOCATION) with the HTLC still HTLC_LOCKED; met goes the
// way of every claim (AML recheck, HTLC_FULFILL_REQUESTED, settle). An
// HTLC with no expression is CONDITION_EXPR_NOT_SET.
func (o *Orchestrator) ClaimHTLCByConditions(ctx context.Context, htlcID string, req HtlcConditionsClaim, issuer string) (HtlcView, error) {
	c, v, done, err := o.claimableBy(ctx, htlcID, issuer)
	if done {
		return v, err
	}
	if c.ConditionExprJSON == "" {
		return HtlcView{}, domainerr.New("CONDITION_EXPR_NOT_SET", "the HTLC has no condition expression", map[string]any{"htlc_id": htlcID})
	}
	for _, a := range req.Attestations {
		if err := o.recordAttestation(ctx, a); err != nil {
			return HtlcView{}, err
		}
	}
	ev := o.evaluateConditions(ctx, c, c.ConditionExprJSON)
	if !ev.met {
		return HtlcView{}, o.refuseConditions(ctx, c, ev)
	}
	return o.fulfilHTLC(ctx, c, req.claim(), &ev, ClaimSourceConditions, true)
}

// ClaimHTLCByAttestation is claimHtlcByAttestation (003 HtlcContracts
// condition_template_id): the single-template claim. CONDITION_TEMPLATE_NOT_SET
// when the HTLC names no template, TEMPLATE_MISMATCH when the body or the
// attestation names another; the attestation is recorded (signature,
// scope, freshness); one that is not PASS is ATTESTATION_NOT_PASS with
// HtlcClaimRejected recorded. Then the template is decided as a
// one-leaf expression (the template's distinct-operator quorum and
// equivocation apply) exactly as claim-by-conditions.
func (o *Orchestrator) ClaimHTLCByAttestation(ctx context.Context, htlcID string, req HtlcAttestationClaim, issuer string) (HtlcView, error) {
	c, v, done, err := o.claimableBy(ctx, htlcID, issuer)
	if done {
		return v, err
	}
	if c.ConditionTemplateID == "" {
		return HtlcView{}, domainerr.New("CONDITION_TEMPLATE_NOT_SET", "the HTLC has no condition_template_id", map[string]any{"htlc_id": htlcID})
	}
	if req.TemplateID != c.ConditionTemplateID || req.Attestation.TemplateID != c.ConditionTemplateID {
		return HtlcView{}, domainerr.New("TEMPLATE_MISMATCH", "the attestation's template is not the HTLC's condition_template_id",
			map[string]any{"htlc_id": htlcID, "template_id": req.TemplateID, "attestation_template_id": req.Attestation.TemplateID})
	}
	if req.Attestation.Subject != c.HtlcID {
		return HtlcView{}, invalidField("attestation.subject", "must be the HTLC's htlc_id", req.Attestation.Subject)
	}
	if err := o.recordAttestation(ctx, req.Attestation); err != nil {
		return HtlcView{}, err
	}
	if req.Attestation.VerifiedResult != conditions.ResultPass {
		if _, err := o.lanes.RecordWithLog(ctx, lane.Record{TxID: c.TxID, State: lane.HtlcLocked, EventType: finality.HtlcClaimRejected,
			Payload: withPresenter(req.claim(), map[string]any{"reason_code": ReasonAttestationNotPass, "htlc_id": c.HtlcID,
				"template_id": c.ConditionTemplateID, "attestation_id": req.Attestation.AttestationID})}); err != nil {
			return HtlcView{}, err
		}
		o.log.InfoContext(ctx, "htlc.claim_rejected", "htlc_id", c.HtlcID, "txid", c.TxID, "reason_code", ReasonAttestationNotPass)
		return HtlcView{}, domainerr.New("ATTESTATION_NOT_PASS", "the attestation's verified_result is not PASS",
			map[string]any{"htlc_id": c.HtlcID, "attestation_id": req.Attestation.AttestationID})
	}
	leaf, err := json.Marshal(map[string]string{"template_id": c.ConditionTemplateID})
	if err != nil {
		return HtlcView{}, err
	}
	ev := o.evaluateConditions(ctx, c, string(leaf))
	if !ev.met {
		return HtlcView{}, o.refuseConditions(ctx, c, ev)
	}
	return o.fulfilHTLC(ctx, c, req.claim(), &ev, ClaimSourceAttestation, true)
}

// claimableBy loads an HTLC for a claim without the preimage by issuer:
// only the payee bank (anyone else HTLC_NOT_FOUND); an HTLC already
// claimed answers the same view (done, Replayed), a cancelled one its
// refusal; one past its timelock is cancelled and refused EXPIRED; one
// not HTLC_LOCKED in ZC's custody is STATE_GUARD.
func (o *Orchestrator) claimableBy(ctx context.Context, htlcID, issuer string) (lane.HtlcContract, HtlcView, bool, error) {
	c, r, err := o.loadHtlc(ctx, "htlc_id", htlcID)
	if err != nil {
		return c, HtlcView{}, true, err
	}
	if issuer != c.PayeeBankID {
		return c, HtlcView{}, true, HtlcNotFound(htlcID)
	}
	if v, done, err := o.claimSettledAnswer(c, r, true); done {
		return c, v, true, err
	}
	if r.State != lane.HtlcLocked || r.Owner != lane.OwnerZC {
		return c, HtlcView{}, true, domainerr.New("STATE_GUARD", "the HTLC is not claimable in its state",
			map[string]any{"htlc_id": htlcID, "state": string(c.State), "tx_state": string(r.State)})
	}
	if expiredAt(c, o.clk.Now()) {
		v, err := o.claimAfterExpiry(ctx, c)
		return c, v, true, err
	}
	return c, HtlcView{}, false, nil
}

// recordAttestation records a through coordinator/conditions
// (recordAttestation of 000 §11.2-b); an attestation recorded before
// (SIGNATURE_REPLAYED: the same attestation_id or key and nonce) is
// already counted and not an error, so a claim may be retried with the
// same body.
func (o *Orchestrator) recordAttestation(ctx context.Context, a conditions.Attestation) error {
	err := conditions.NewAttestations(o.db, o.clk).Record(ctx, a)
	if domainerr.Has(err, "SIGNATURE_REPLAYED") {
		return nil
	}
	return err
}
