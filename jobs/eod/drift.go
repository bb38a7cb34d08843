package eod

import (
	"context"
	"fmt"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// DriftSettlement is what SettleDriftCase did on both sides.
type DriftSettlement struct {
	adapter.DriftSettled
	Case cases.Decided // zero when the Case was already resolved
}

// SettleDriftCase ends the drift behind a RECON_DRIFT Case and the Case
// itself: first the adapter side (adapter.SettleDrift: the drift row
// RESOLVED, the shadow's adjustment and, for adapter.DriftAdjust, the
// adjusting posting, in one adapter transaction), then the ZC side (the
// Case RESOLVED by cases.DecisionAdjusted or DecisionAccepted with the note
// and operator). The two databases commit apart: run again after a crash
// in between, the adapter reports the drift already settled the same way
// (nothing is posted twice) and the Case is closed.
func SettleDriftCase(ctx context.Context, zc *store.DB, cs *cases.Cases, a *adapter.Adapter, caseID, how, operator, note, source string) (DriftSettlement, error) {
	var out DriftSettlement
	var k cases.Case
	if err := zc.Read(ctx, func(tx *store.Tx) error {
		var err error
		k, err = cases.Get(ctx, tx, caseID)
		return err
	}); err != nil {
		return out, err
	}
	if k.ReasonCode != cases.ReasonReconDrift {
		return out, domainerr.New("INVALID_REQUEST", "the Case is not a RECON_DRIFT Case: resolve it without --drift",
			map[string]any{"case_id": caseID, "reason_code": k.ReasonCode})
	}
	if k.CausePartyID != a.BankID() {
		return out, domainerr.New("INVALID_REQUEST", fmt.Sprintf("the Case is bank %s's, not bank %s's", k.CausePartyID, a.BankID()),
			map[string]any{"case_id": caseID})
	}
	d, err := a.DriftByCase(ctx, caseID)
	if err != nil {
		return out, err
	}
	if out.DriftSettled, err = a.SettleDrift(ctx, d.DriftID, how, operator, note); err != nil {
		return out, err
	}
	decision := cases.DecisionAccepted
	if how == adapter.DriftAdjust {
		decision = cases.DecisionAdjusted
	}
	caseNote := fmt.Sprintf("%s (drift %s of %+d on %s", note, d.DriftID, d.Drift, d.CoreAccount)
	if out.Ref != "" {
		caseNote += ", adjusting posting " + out.Ref
	}
	caseNote += ")"
	out.Case, err = cs.Decide(ctx, zc, cases.Decide{CaseID: caseID, Decision: decision, Note: caseNote, Operator: operator, Source: source})
	if domainerr.Code(err) == "STATE_GUARD" && out.Already {
		return out, nil // both sides were done before
	}
	return out, err
}
