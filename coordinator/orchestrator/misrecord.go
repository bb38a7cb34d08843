package orchestrator

import (
	"context"

	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Misrecord-correct (spec 004: POST /api/transfers/:txid/misrecord-correct
// with FOUR_EYES_REQUIRED / EVIDENCE_REQUIRED / B_CONFIRMED /
// WINDOW_EXPIRED / NOT_CORRECTABLE; state reason MISRECORD_CORRECTED,
// "追記のみ"): a field of an accepted transfer was recorded wrong — the
// payee account — so the payee bank refused the credit. Two operators
// correct it while the transfer waits in SUSPENDED / EXEC_CREDIT_FAILED
// (the payer is debited, the payee not credited), and the transfer goes on
// to the payee's right account instead of being reversed.
// docs/orchestrator.md "Misrecord-correct".

// ReasonMisrecordCorrected is the state reason code of a correction (in
// the MisrecordCorrected entry's payload; the row's reason_code is left).
const ReasonMisrecordCorrected = "MISRECORD_CORRECTED"

// CorrectableFields are the Transactions columns misrecord-correct may
// change.
var CorrectableFields = map[string]bool{"payee_account_hash": true}

// MisrecordRequest is a correction asked by one operator and approved by
// another.
type MisrecordRequest struct {
	TxID        string
	Field       string // a CorrectableFields name
	Value       string // the correct value
	RequestedBy string
	ApprovedBy  string // a second operator (four eyes)
	EvidenceRef string // what shows the recorded value was wrong (required)
	Note        string
}

// Correction is the outcome of a misrecord-correct.
type Correction struct {
	TxID     string `json:"txid"`
	Field    string `json:"field"`
	OldValue string `json:"old_value"`
	NewValue string `json:"new_value"`
	State    string `json:"state"`
	EventSeq int64  `json:"event_seq"`
}

// CorrectMisrecord corrects a misrecorded field of a transfer whose credit
// the payee bank refused, records MisrecordCorrected on its chain (the
// field, both values, both operators, the evidence) in the same commit,
// advances its Cases to IN_PROGRESS and requeues it, so the worker sends
// execute-credit with the corrected account. Refusals (422 unless noted):
// MISSING_FIELD (400), EVIDENCE_REQUIRED, FOUR_EYES_REQUIRED (no approver,
// or the requester approving), NOT_CORRECTABLE (another field, a value
// equal to the recorded one, or a transfer not waiting on a refused
// credit), B_CONFIRMED (the payee's execution is confirmed: reverse it
// instead), WINDOW_EXPIRED (FAILED_EXECUTION: the wait ended; reverse it
// instead), TX_NOT_FOUND.
func (o *Orchestrator) CorrectMisrecord(ctx context.Context, req MisrecordRequest) (Correction, error) {
	for _, f := range []struct{ name, v string }{{"txid", req.TxID}, {"field", req.Field}, {"value", req.Value}, {"requested_by", req.RequestedBy}} {
		if f.v == "" {
			return Correction{}, domainerr.New("MISSING_FIELD", f.name+" is required", map[string]any{"field": f.name})
		}
	}
	if req.EvidenceRef == "" {
		return Correction{}, domainerr.New("EVIDENCE_REQUIRED", "a correction needs evidence_ref", map[string]any{"field": "evidence_ref"})
	}
	if req.ApprovedBy == "" || req.ApprovedBy == req.RequestedBy {
		return Correction{}, domainerr.New("FOUR_EYES_REQUIRED", "a correction needs approved_by, a second operator",
			map[string]any{"field": "approved_by", "requested_by": req.RequestedBy})
	}
	if !CorrectableFields[req.Field] {
		return Correction{}, domainerr.New("NOT_CORRECTABLE", "this field cannot be corrected", map[string]any{"field": req.Field})
	}
	var out Correction
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		r, err := readTx(ctx, tx, req.TxID)
		if err != nil {
			return err
		}
		details := map[string]any{"txid": r.TxID, "state": string(r.State), "reason_code": r.ReasonCode}
		switch {
		case r.State == lane.PayeeExecConfirmed || r.State == lane.Settled:
			return domainerr.New("B_CONFIRMED", "the payee's execution is confirmed; a reversal undoes it, not a correction", details)
		case r.State == lane.FailedExecution:
			return domainerr.New("WINDOW_EXPIRED", "the transfer failed; its payer is refunded by a reversal", details)
		case r.State != lane.Suspended || r.ReasonCode != ReasonExecCreditFailed:
			return domainerr.New("NOT_CORRECTABLE", "only a transfer whose credit the payee bank refused can be corrected", details)
		}
		if req.Value == r.PayeeAcct {
			return domainerr.New("NOT_CORRECTABLE", "the value is the one recorded", map[string]any{"txid": r.TxID, "field": req.Field})
		}
		res, err := o.lanes.RecordInTx(ctx, tx, lane.Record{TxID: r.TxID, State: lane.Suspended, EventType: finality.MisrecordCorrected,
			SetColumns: map[string]any{req.Field: req.Value},
			Payload: map[string]any{"reason_code": ReasonMisrecordCorrected, "field": req.Field, "old_value": r.PayeeAcct,
				"new_value": req.Value, "requested_by": req.RequestedBy, "approved_by": req.ApprovedBy,
				"evidence_ref": req.EvidenceRef, "note": req.Note}})
		if err != nil {
			return err
		}
		if !res.Applied {
			return errConflict
		}
		if err := o.advanceCasesInTx(ctx, tx, r.TxID); err != nil {
			return err
		}
		out = Correction{TxID: r.TxID, Field: req.Field, OldValue: r.PayeeAcct, NewValue: req.Value, State: string(res.State), EventSeq: res.Entry.EventSeq}
		return o.enqueue(ctx, tx, KindDrive, r.TxID, r.Lane, StatusReady, o.clk.Now())
	})
	if err == errConflict {
		return Correction{}, domainerr.New("CONCURRENCY_CONFLICT", "the transfer moved during the correction; ask again", map[string]any{"txid": req.TxID})
	}
	if err != nil {
		return Correction{}, err
	}
	o.log.InfoContext(ctx, "orchestrator.misrecord_corrected", "txid", out.TxID, "field", out.Field,
		"requested_by", req.RequestedBy, "approved_by", req.ApprovedBy)
	return out, nil
}

// advanceCasesInTx moves every OPEN Case linked to txid to IN_PROGRESS.
func (o *Orchestrator) advanceCasesInTx(ctx context.Context, tx *store.Tx, txid string) error {
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT c.case_id FROM CaseRelatedTransactions l
		JOIN Cases c ON c.case_id = l.case_id WHERE l.link_key = ? AND c.state = ? ORDER BY c.case_id`, txid, cases.StateOpen)
	if err != nil {
		return wrapDB("cases of correction", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return wrapDB("cases of correction", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return wrapDB("cases of correction", err)
	}
	for _, id := range ids {
		if _, err := o.cases.SetState(ctx, tx, id, cases.StateInProgress, "OPS", ReasonMisrecordCorrected); err != nil {
			return err
		}
	}
	return nil
}
