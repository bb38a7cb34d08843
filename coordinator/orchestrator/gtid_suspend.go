package orchestrator

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
)

// A decided GTID whose leg's transfer suspends (spec 000 §4: suspendTx
// finds the leg by txid and checkAndFinalizeGtid moves the aggregate to
// GT_SUSPENDED), and the ways out (docs/gtid-rtp.md "Suspension"):
//
//   - the leg recovers (its bank answers a retry, a held credit is
//     approved): when every leg has settled, GT_SUSPENDED -> GT_SETTLED and
//     the GTID's Case is resolved;
//   - the operator retries the suspended legs (RetryGtid, POST
//     /internal/gtid/{gtid}/retry) once the cause is fixed: their DRIVE
//     items are queued again, exactly as the queue's own retries;
//   - a leg fails for good (its transfer FAILED_EXECUTION): the operator
//     closes the GTID (ResolveGtid, POST /internal/gtid/{gtid}/resolve):
//     GT_SUSPENDED -> GT_FAILED_EXECUTION, the failed legs LEG_FAILED, the
//     hold of a failed payer leg that was never debited released, the Case
//     resolved. A payer debited for a credit that failed is refunded by the
//     transfer's own reversal (POST /internal/transfers/{txid}/refund).
//
// Every GTID leg's transfer runs in lane GTID, the FX conduit's included,
// so this applies to both.

// ReasonGtidLegSuspended is the state reason code of GT_SUSPENDED (waiting
// family: the GTID waits for its leg) and the CASE reason_code of the
// GTID's Case; ReasonGtidLegFailed that of GT_FAILED_EXECUTION (event
// family).
const (
	ReasonGtidLegSuspended = "SUSPEND_GTID_LEG"
	ReasonGtidLegFailed    = "GTID_LEG_FAILED"
	// caseReasonGtidLegsSettled is the EntityStateLog reason of the
	// GTID's Case resolved because every leg settled after all.
	caseReasonGtidLegsSettled = "GTID_LEGS_SETTLED"
)

// gtidSuspendSide is the side update of a suspend of a transfer of lane
// laneName: for a GTID leg, gtidLegSuspendedInTx in the same commit; nil
// for any other lane.
func (o *Orchestrator) gtidSuspendSide(laneName, txid, reason string) lane.SideUpdates {
	if laneName != LaneGtid {
		return nil
	}
	return func(ctx context.Context, tx *store.Tx) error { return o.gtidLegSuspendedInTx(ctx, tx, txid, reason) }
}

// gtidLegSuspendedInTx runs in the commit that suspends a GTID leg's
// transfer: a GTID still GT_DECIDED_TO_SETTLE moves to GT_SUSPENDED
// (GtidSuspended on its chain, naming the leg, its reason and the Case)
// and its Case is opened (one per GTID: the cause is the GTID). The GTID
// row is locked first, so of two legs suspending at once the second
// finds it suspended and does nothing.
func (o *Orchestrator) gtidLegSuspendedInTx(ctx context.Context, tx *store.Tx, txid, legReason string) error {
	gtid, state, err := lockGtidOfLegTx(ctx, tx, txid)
	if err != nil {
		return err
	}
	if state != lane.GtDecidedToSettle {
		return nil // suspended already (or settled: nothing to suspend)
	}
	opened, err := o.cases.OpenCase(ctx, tx, cases.OpenRequest{ReasonCode: ReasonGtidLegSuspended, OpenedBy: "ZC",
		RelatedGtID: gtid, DetectionPath: "orchestrator.gtid", Cause: gtid,
		Description: "a leg's transfer " + txid + " suspended after the GTID's decision (" + legReason + "); the GTID cannot settle until it recovers"})
	if err != nil {
		return err
	}
	res, err := o.lanes.TransitionGtidInTx(ctx, tx, lane.GtidTransition{GTID: gtid, From: lane.GtDecidedToSettle, To: lane.GtSuspended,
		EventType: finality.GtidSuspended, Payload: map[string]any{"reason_code": ReasonGtidLegSuspended, "leg_txid": txid,
			"leg_reason_code": legReason, "case_id": opened.CaseID}})
	if err != nil {
		return err
	}
	if !res.Applied {
		return errConflict
	}
	o.log.WarnContext(ctx, "orchestrator.gtid_suspended", "gtid", gtid, "leg_txid", txid, "leg_reason_code", legReason, "case_id", opened.CaseID)
	return nil
}

// lockGtidOfLegTx finds the GTID of a leg's transfer and locks its row
// (FOR UPDATE on PostgreSQL; SQLite serialises writers), returning its
// state: the commits that settle or suspend legs of one GTID see each
// other.
func lockGtidOfLegTx(ctx context.Context, tx *store.Tx, txid string) (string, lane.GtidState, error) {
	var gtid, state string
	if err := tx.QueryRowContext(ctx, "SELECT gtid FROM GtidLegs WHERE txid = ? LIMIT 1", txid).Scan(&gtid); err != nil {
		return "", "", wrapDB("read leg of "+txid, err)
	}
	if err := tx.QueryRowContext(ctx, "SELECT state FROM GtidTransactions WHERE gtid = ?"+tx.ForUpdate(), gtid).Scan(&state); err != nil {
		return "", "", wrapDB("lock gtid", err)
	}
	return gtid, lane.GtidState(state), nil
}

// payerLegTxsTx reads the transfers of a GTID's decided legs (one per
// PAYER leg).
func payerLegTxsTx(ctx context.Context, tx *store.Tx, legs []lane.Leg) ([]txRow, error) {
	var out []txRow
	for _, l := range legs {
		if l.TxID == "" || l.Role != lane.LegPayer {
			continue
		}
		r, err := readTx(ctx, tx, l.TxID)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// gtidCaseIDTx is the Case opened when the GTID was suspended (from its
// GtidSuspended entry), "" when it never was.
func gtidCaseIDTx(ctx context.Context, tx *store.Tx, gtid string) (string, error) {
	p, err := lastGtidPayloadTx(ctx, tx, gtid, lane.GtSuspended)
	return p.CaseID, err
}

// gtidPayload is what the GTID chain's entries say about their state.
type gtidPayload struct {
	ReasonCode string `json:"reason_code"`
	CaseID     string `json:"case_id"`
}

// lastGtidPayloadTx reads the payload of the GTID chain's latest entry
// into state.
func lastGtidPayloadTx(ctx context.Context, tx *store.Tx, gtid string, state lane.GtidState) (gtidPayload, error) {
	var p gtidPayload
	var raw *string
	err := tx.QueryRowContext(ctx, `SELECT payload_json FROM FinalityLog WHERE gtid = ? AND txid IS NULL AND state_to = ?
		ORDER BY event_seq DESC LIMIT 1`, gtid, string(state)).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return p, nil
	}
	if err != nil {
		return p, wrapDB("read gtid entry", err)
	}
	if raw != nil {
		_ = json.Unmarshal([]byte(*raw), &p) // a payload without the fields says nothing
	}
	return p, nil
}

// GtidOperatorRequest is the body of POST /internal/gtid/{gtid}/retry and
// /resolve: who acts and why (evidence_ref: the ticket or document).
type GtidOperatorRequest struct {
	Operator    string `json:"operator"`
	Reason      string `json:"reason"`
	EvidenceRef string `json:"evidence_ref,omitempty"`
}

func (r GtidOperatorRequest) check() error {
	if strings.TrimSpace(r.Operator) == "" {
		return missingField("operator")
	}
	if strings.TrimSpace(r.Reason) == "" {
		return missingField("reason")
	}
	return nil
}

// GtidOperatorResult answers RetryGtid and ResolveGtid.
type GtidOperatorResult struct {
	GTID     string   `json:"gtid"`
	State    string   `json:"state"`
	CaseID   string   `json:"case_id,omitempty"`
	Requeued []string `json:"requeued_txids,omitempty"` // retry: the legs' transfers driven again
	Failed   []string `json:"failed_txids,omitempty"`   // resolve: the legs that failed
	Settled  []string `json:"settled_txids,omitempty"`  // resolve: the legs that settled (not unwound)
	Released []string `json:"released_reservation_refs,omitempty"`
}

// gtidStateGuard is the refusal of an operator action on a GTID not in
// the state it needs.
func gtidStateGuard(gtid string, state lane.GtidState, why string) error {
	return domainerr.New("STATE_GUARD", why, map[string]any{"gtid": gtid, "state": string(state)})
}

// RetryGtid drives a suspended GTID's suspended legs again: each leg
// transfer in SUSPENDED has its DRIVE item queued READY (an item the
// queue acknowledged to a Case is re-armed), in one commit that also
// moves the GTID's Case IN_PROGRESS. The drive then
// resends the recorded execution command (the bank answers a replay if it
// had applied it). Refusals: GTID_NOT_FOUND, STATE_GUARD (the GTID is not
// GT_SUSPENDED, or no leg is SUSPENDED: a FAILED_EXECUTION leg is final).
func (o *Orchestrator) RetryGtid(ctx context.Context, gtid string, req GtidOperatorRequest) (GtidOperatorResult, error) {
	if err := req.check(); err != nil {
		return GtidOperatorResult{}, err
	}
	out := GtidOperatorResult{GTID: gtid}
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		out.Requeued = out.Requeued[:0]
		g, legs, err := readGtidTx(ctx, tx, gtid)
		if err != nil {
			return err
		}
		out.State = string(g.state)
		if g.state != lane.GtSuspended {
			return gtidStateGuard(gtid, g.state, "only a GT_SUSPENDED GTID has legs to retry")
		}
		now := o.clk.Now()
		rows, err := payerLegTxsTx(ctx, tx, legs)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if r.State != lane.Suspended {
				continue
			}
			if err := o.enqueue(ctx, tx, KindDrive, r.TxID, r.Lane, StatusReady, now); err != nil {
				return err
			}
			out.Requeued = append(out.Requeued, r.TxID)
		}
		if len(out.Requeued) == 0 {
			return gtidStateGuard(gtid, g.state, "no leg of the GTID is SUSPENDED (a FAILED_EXECUTION leg is final: resolve the GTID)")
		}
		if out.CaseID, err = gtidCaseIDTx(ctx, tx, gtid); err != nil || out.CaseID == "" {
			return err
		}
		_, err = o.cases.SetState(ctx, tx, out.CaseID, cases.StateInProgress, req.Operator, ReasonGtidLegSuspended)
		if domainerr.Has(err, "STATE_GUARD") {
			return nil // resolved or aggregated elsewhere: the retry stands
		}
		return err
	})
	if err != nil {
		return GtidOperatorResult{}, err
	}
	o.log.InfoContext(ctx, "orchestrator.gtid_retry", "gtid", gtid, "operator", req.Operator, "reason", req.Reason, "requeued", out.Requeued)
	return out, nil
}

// ResolveGtid closes a suspended GTID one of whose legs failed for good:
// every leg's transfer must be final (SETTLED or FAILED_EXECUTION, at
// least one FAILED_EXECUTION), else STATE_GUARD (a SUSPENDED leg may
// still recover: retry it, or wait for the sweep to fail it). The hold of
// each failed payer leg that was never debited is released at its bank
// (release-reserve; TX_NOT_FOUND: nothing held), then one commit: the
// failed legs LEG_DECIDED -> LEG_FAILED, GT_SUSPENDED ->
// GT_FAILED_EXECUTION (GtidFailed: the failed and the settled legs, the
// operator, the reason and evidence, the released holds) and the GTID's
// Case RESOLVED. The settled legs are not unwound (each moved its money
// with its banks' execution; reversing one needs its payee's bank): the
// payload and the Case name them. Resolving again answers the same state
// with nothing done.
func (o *Orchestrator) ResolveGtid(ctx context.Context, gtid string, req GtidOperatorRequest) (GtidOperatorResult, error) {
	if err := req.check(); err != nil {
		return GtidOperatorResult{}, err
	}
	var g gtidRow
	var rows []txRow
	var legs []lane.Leg
	if err := o.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		if g, legs, err = readGtidTx(ctx, tx, gtid); err != nil {
			return err
		}
		rows, err = payerLegTxsTx(ctx, tx, legs)
		return err
	}); err != nil {
		return GtidOperatorResult{}, err
	}
	out := GtidOperatorResult{GTID: gtid, State: string(g.state)}
	if g.state == lane.GtFailedExecution {
		return out, nil
	}
	if g.state != lane.GtSuspended {
		return GtidOperatorResult{}, gtidStateGuard(gtid, g.state, "only a GT_SUSPENDED GTID can be resolved")
	}
	for _, r := range rows {
		switch r.State {
		case lane.Settled:
			out.Settled = append(out.Settled, r.TxID)
		case lane.FailedExecution:
			out.Failed = append(out.Failed, r.TxID)
		default:
			return GtidOperatorResult{}, domainerr.New("STATE_GUARD", "a leg's transfer is not final: retry it, or let the sweep fail it",
				map[string]any{"gtid": gtid, "txid": r.TxID, "tx_state": string(r.State)})
		}
	}
	if len(out.Failed) == 0 {
		return GtidOperatorResult{}, gtidStateGuard(gtid, g.state, "no leg failed: the GTID settles by itself")
	}
	for _, r := range rows {
		if r.State != lane.FailedExecution || r.PayerProof != "" || r.BankRes == "" {
			continue // debited (refunded by its reversal), or no hold
		}
		var resp bankapi.ReleaseReserveResponse
		err := o.send(ctx, r.PayerBank, r.TxID, &bankapi.ReleaseReserveRequest{RequestIDValue: requestID(r.TxID, bankapi.ReleaseReserve),
			TxID: r.TxID, ReservationRef: r.BankRes}, &resp)
		switch {
		case err == nil:
			out.Released = append(out.Released, resp.ReservationRef)
		case domainerr.Has(err, "TX_NOT_FOUND"):
		default:
			return GtidOperatorResult{}, err // nothing written: ask again
		}
	}
	applied := false
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		applied = false
		var err error
		if out.CaseID, err = gtidCaseIDTx(ctx, tx, gtid); err != nil {
			return err
		}
		failed := map[string]bool{}
		for _, t := range out.Failed {
			failed[t] = true
		}
		for _, l := range legs {
			if !failed[l.TxID] || l.State != lane.LegDecided {
				continue
			}
			lr, err := o.lanes.TransitionLegInTx(ctx, tx, lane.LegTransition{LegID: l.LegID, GTID: gtid, From: lane.LegDecided, To: lane.LegFailed})
			if err != nil {
				return err
			}
			if !lr.Applied {
				return errConflict
			}
		}
		res, err := o.lanes.TransitionGtidInTx(ctx, tx, lane.GtidTransition{GTID: gtid, From: lane.GtSuspended, To: lane.GtFailedExecution,
			EventType: finality.GtidFailed, Payload: map[string]any{"reason_code": ReasonGtidLegFailed, "failed_txids": out.Failed,
				"settled_txids": out.Settled, "released_reservation_refs": out.Released, "operator": req.Operator,
				"reason": req.Reason, "evidence_ref": req.EvidenceRef, "case_id": out.CaseID}})
		if err != nil {
			return err
		}
		if !res.Applied {
			return errConflict
		}
		applied = true
		if out.CaseID == "" {
			return nil
		}
		_, err = o.cases.SetState(ctx, tx, out.CaseID, cases.StateResolved, req.Operator, ReasonGtidLegFailed)
		if domainerr.Has(err, "STATE_GUARD") {
			return nil
		}
		return err
	})
	if err == errConflict || (err == nil && !applied) {
		return GtidOperatorResult{}, domainerr.New("CONCURRENCY_CONFLICT", "the GTID moved meanwhile; read it and ask again", map[string]any{"gtid": gtid})
	}
	if err != nil {
		return GtidOperatorResult{}, err
	}
	out.State = string(lane.GtFailedExecution)
	o.log.WarnContext(ctx, "orchestrator.gtid_failed", "gtid", gtid, "operator", req.Operator, "reason", req.Reason,
		"failed", out.Failed, "settled", out.Settled, "case_id", out.CaseID)
	return out, nil
}
