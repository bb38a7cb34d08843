package orchestrator

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/entitystate"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

// Reversal (refund) of a transfer that ended in FAILED_EXECUTION after its
// payer was debited (issue 11 item 4; docs/orchestrator.md "Reversal and
// refund"). The transfer keeps its terminal state; the reversal is a
// record of its own (ReversalRecords, EntityStateLog 'REVERSAL') and two
// evidence entries on the transfer's chain:
//
//  1. decision commit: CreditFailedProofSubmitted (the proof that the
//     credit physically failed: the payee bank's refusal recorded on the
//     chain, or an operator's evidence_ref), the ReversalRecords row
//     REQUESTED, the compensate body recorded in OrchestratorRequests under
//     TX:{txid}:compensate:ZC, and a REFUND work item;
//  2. the payer bank is sent compensate (through the Banks port; the
//     adapter queues a REVERSAL posting per debit in its outbox, in one
//     transaction with its idempotency record);
//  3. outcome commit: ReversalCompleted (EXT_REFUND_PROOF naming the
//     reversal postings) or NoDebitRecordedProofSubmitted (the bank holds
//     no debit for the txid), the row COMPLETED / NO_DEBIT, and the Cases
//     of the transfer resolved (or IN_PROGRESS while other transfers they
//     bundle still wait).
//
// A crash between 1 and 3 is finished by the REFUND work item (or by the
// operator asking again): the recorded body is resent, so the bank answers
// a replay and the payer is refunded once.

// KindRefund is the work item that finishes a decided reversal.
const KindRefund = "REFUND"

// Reversal statuses (ReversalRecords.status, EntityStateLog 'REVERSAL').
const (
	ReversalRequested = "REQUESTED"
	ReversalCompleted = "COMPLETED"
	ReversalNoDebit   = "NO_DEBIT"
)

// ReversalEntity is the EntityStateLog.entity_type of a reversal, and
// the EntityStateLog event types of its history.
const (
	ReversalEntity         = "REVERSAL"
	EventReversalRequested = "ReversalRequested"
	EventReversalCompleted = "ReversalCompleted"
	EventReversalNoDebit   = "ReversalNoDebit"
)

// Proof sources of a reversal decision.
const (
	ProofSourceCreditRefused = ReasonExecCreditFailed // the payee bank refused execute-credit (on the chain)
	ProofSourceOperator      = "OPERATOR_EVIDENCE"    // an operator's evidence_ref
)

// Proof types of spec 002 §12.3 used by reversals.
const (
	ProofCreditFailed    = "CREDIT_FAILED_PROOF"
	ProofExtRefund       = "EXT_REFUND_PROOF"
	ProofNoDebitRecorded = "NO_DEBIT_RECORDED_PROOF"
)

// CaseReasonCreditFailedProofRequired is the Case opened when a reversal
// is asked without a proof that the credit failed (spec 004 state reason
// code CREDIT_FAILED_PROOF_REQUIRED: "CASE 起票").
const CaseReasonCreditFailedProofRequired = "CREDIT_FAILED_PROOF_REQUIRED"

// caseReasonReversed is the EntityStateLog reason_code of a Case resolved
// by a completed reversal.
const caseReasonReversed = "REVERSAL_COMPLETED"

// RefundRequest is an operator's request to reverse a failed transfer.
type RefundRequest struct {
	TxID        string
	RequestedBy string // operator id (required)
	// EvidenceRef names outside evidence that the credit failed (the payee
	// bank's confirmation); required when the chain holds no refusal of
	// execute-credit.
	EvidenceRef string
	Note        string
}

// Reversal is a ReversalRecords row.
type Reversal struct {
	ReversalID  string   `json:"reversal_id"`
	TxID        string   `json:"txid"`
	PayerBankID string   `json:"payer_bank_id"`
	Amount      int64    `json:"amount"`
	Currency    string   `json:"currency"`
	Status      string   `json:"status"`
	RequestID   string   `json:"request_id"`
	ProofSource string   `json:"proof_source"`
	EvidenceRef string   `json:"evidence_ref,omitempty"`
	RequestedBy string   `json:"requested_by"`
	Note        string   `json:"note,omitempty"`
	Reversals   []string `json:"reversals,omitempty"` // the payer bank's REVERSAL posting refs
	CreatedAt   string   `json:"created_at"`
	UpdatedAt   string   `json:"updated_at"`
	// Replayed is true when the reversal had been decided by an earlier
	// request (nothing new was decided).
	Replayed bool `json:"replayed"`
	// Pending names why a REQUESTED reversal is not complete yet (the bank
	// call's error); the REFUND work item retries it.
	Pending string `json:"pending,omitempty"`
}

func reversalID(txid string) string { return "REV-" + txid }

// errNeedsEvidence rolls back a decision without a proof; the Case is
// opened in its own commit.
const errNeedsEvidence = sentinel("credit-failed proof required")

// RequestRefund decides the reversal of a FAILED_EXECUTION transfer and
// sends the compensation to the payer bank. A transfer already reversed (or
// being reversed) replays its record (Replayed true) and, while REQUESTED,
// sends the recorded command again. Refusals: MISSING_FIELD, TX_NOT_FOUND,
// STATE_GUARD (not FAILED_EXECUTION), EVIDENCE_REQUIRED (no refusal of the
// credit on the chain and no evidence_ref; a CREDIT_FAILED_PROOF_REQUIRED
// Case is opened), read-only modes. A bank call that fails leaves the
// reversal REQUESTED with Pending set; the REFUND work item retries it.
func (o *Orchestrator) RequestRefund(ctx context.Context, req RefundRequest) (Reversal, error) {
	if req.TxID == "" {
		return Reversal{}, domainerr.New("MISSING_FIELD", "txid is required", map[string]any{"field": "txid"})
	}
	if req.RequestedBy == "" {
		return Reversal{}, domainerr.New("MISSING_FIELD", "requested_by is required", map[string]any{"field": "requested_by"})
	}
	replayed := false
	var bankReason string
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		if _, err := readReversal(ctx, tx, req.TxID); err == nil {
			replayed = true
			return nil
		} else if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := (sysmode.Gate{}).CheckWritable(ctx, tx); err != nil {
			return err // before the proof check: a read-only system opens no Case either
		}
		r, err := readTx(ctx, tx, req.TxID)
		if err != nil {
			return err
		}
		if r.State != lane.FailedExecution {
			return domainerr.New("STATE_GUARD", "only a FAILED_EXECUTION transfer can be reversed",
				map[string]any{"txid": req.TxID, "state": string(r.State)})
		}
		if bankReason, err = creditRefusal(ctx, tx, req.TxID); err != nil {
			return err
		}
		if bankReason == "" && req.EvidenceRef == "" {
			return errNeedsEvidence
		}
		return o.decideRefundInTx(ctx, tx, r, req, bankReason)
	})
	if err == errNeedsEvidence {
		caseID, cerr := o.openProofCase(ctx, req)
		if cerr != nil {
			return Reversal{}, cerr
		}
		return Reversal{}, domainerr.New("EVIDENCE_REQUIRED",
			"no proof that the credit failed: the chain holds no refusal of execute-credit; give evidence_ref",
			map[string]any{"txid": req.TxID, "case_id": caseID, "case_reason_code": CaseReasonCreditFailedProofRequired})
	}
	if err != nil {
		return Reversal{}, err
	}
	if !replayed {
		o.log.InfoContext(ctx, "orchestrator.reversal_decided", "txid", req.TxID, "requested_by", req.RequestedBy,
			"proof_source", map[bool]string{true: ProofSourceCreditRefused, false: ProofSourceOperator}[bankReason != ""])
	}
	stepErr := o.refundStep(ctx, req.TxID)
	rev, err := o.Reversal(ctx, req.TxID)
	if err != nil {
		return Reversal{}, err
	}
	rev.Replayed = replayed
	if stepErr != nil {
		if !domainerr.ShouldRetry(stepErr) {
			return rev, stepErr
		}
		rev.Pending = domainerr.Code(stepErr)
		if rev.Pending == "" {
			rev.Pending = stepErr.Error()
		}
	}
	return rev, nil
}

// creditRefusal returns the payee bank's reason code when the chain of
// txid records a refusal of execute-credit (a Suspended entry with
// EXEC_CREDIT_FAILED: the bank answered with a catalog refusal, and the
// adapter records nothing for a refused command), else "".
func creditRefusal(ctx context.Context, tx *store.Tx, txid string) (string, error) {
	var reason sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT json_extract(payload_json, '$.bank_reason_code') FROM FinalityLog
		WHERE txid = ? AND event_type = ? AND json_extract(payload_json, '$.reason_code') = ?
		ORDER BY event_seq DESC LIMIT 1`, txid, string(finality.Suspended), ReasonExecCreditFailed).Scan(&reason)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", wrapDB("read credit refusal", err)
	}
	if reason.String == "" {
		return ReasonExecCreditFailed, nil
	}
	return reason.String, nil
}

// decideRefundInTx writes the decision commit (see the file comment).
func (o *Orchestrator) decideRefundInTx(ctx context.Context, tx *store.Tx, r txRow, req RefundRequest, bankReason string) error {
	now := o.clk.Now()
	stamp := clock.Stamp(now)
	id := reversalID(r.TxID)
	source, issuer := ProofSourceOperator, lane.OwnerZC
	if bankReason != "" {
		source, issuer = ProofSourceCreditRefused, r.PayeeBank
	}
	proof := map[string]any{"proof_type": ProofCreditFailed, "issuer_bank_id": issuer, "source": source,
		"proof_id": id, "recorded_at": stamp}
	if bankReason != "" {
		proof["bank_reason_code"] = bankReason
	}
	if req.EvidenceRef != "" {
		proof["evidence_ref"] = req.EvidenceRef
	}
	res, err := o.lanes.RecordInTx(ctx, tx, lane.Record{TxID: r.TxID, State: lane.FailedExecution,
		EventType: finality.CreditFailedProofSubmitted,
		Payload: map[string]any{"proof": proof, "reversal_id": id, "requested_by": req.RequestedBy, "note": req.Note,
			"payer_bank_id": r.PayerBank, "amount": r.amount()}})
	if err != nil {
		return err
	}
	if !res.Applied {
		return domainerr.New("STATE_GUARD", "only a FAILED_EXECUTION transfer can be reversed",
			map[string]any{"txid": r.TxID, "state": string(res.State)})
	}
	creq := &bankapi.CompensateRequest{RequestIDValue: requestID(r.TxID, bankapi.Compensate), TxID: r.TxID, Reason: r.ReasonCode}
	if _, err := store.Insert(ctx, tx, "ReversalRecords",
		[]string{"reversal_id", "txid", "payer_bank_id", "amount_value", "amount_currency", "status", "request_id",
			"proof_source", "evidence_ref", "requested_by", "note", "created_at", "updated_at"},
		id, r.TxID, r.PayerBank, r.Amount, r.Currency, ReversalRequested, creq.RequestIDValue,
		source, nullStr(req.EvidenceRef), req.RequestedBy, nullStr(req.Note), stamp, stamp); err != nil {
		return wrapDB("insert reversal", err)
	}
	if err := recordRequestInTx(ctx, tx, r.TxID, creq, now); err != nil {
		return err
	}
	if err := entitystate.Record(ctx, tx, o.clk, entitystate.Fact{EntityType: ReversalEntity, EntityID: id,
		EventType: EventReversalRequested, To: ReversalRequested, ReasonCode: r.ReasonCode, Actor: "OPS",
		Payload: map[string]any{"txid": r.TxID, "requested_by": req.RequestedBy, "proof_source": source}}); err != nil {
		return err
	}
	return o.enqueue(ctx, tx, KindRefund, r.TxID, r.Lane, StatusReady, now)
}

// openProofCase opens (or joins) the CREDIT_FAILED_PROOF_REQUIRED Case of a
// reversal asked without a proof, in its own commit.
func (o *Orchestrator) openProofCase(ctx context.Context, req RefundRequest) (string, error) {
	var id string
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		opened, err := o.cases.OpenCase(ctx, tx, cases.OpenRequest{ReasonCode: CaseReasonCreditFailedProofRequired,
			OpenedBy: "OPS", RelatedTxID: req.TxID, DetectionPath: "orchestrator.reversal",
			Description: "reversal asked by " + req.RequestedBy + " without a proof that the credit failed"})
		id = opened.CaseID
		return err
	})
	return id, err
}

// refundStep sends the recorded compensate of a REQUESTED reversal and
// records the outcome. It does nothing for a reversal that is complete.
func (o *Orchestrator) refundStep(ctx context.Context, txid string) error {
	var rev Reversal
	err := o.db.Read(ctx, func(tx *store.Tx) (err error) {
		rev, err = readReversal(ctx, tx, txid)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return domainerr.New("INVARIANT_VIOLATION", "REFUND work item without a reversal", map[string]any{"txid": txid})
	}
	if err != nil {
		return err
	}
	if rev.Status != ReversalRequested {
		return nil
	}
	if o.banks == nil {
		return fmt.Errorf("orchestrator: Config.Banks is not set")
	}
	var resp bankapi.CompensateResponse
	callErr := o.send(ctx, rev.PayerBankID, txid, &bankapi.CompensateRequest{RequestIDValue: rev.RequestID, TxID: txid}, &resp)
	status := ReversalCompleted
	switch code := domainerr.Code(callErr); {
	case callErr == nil && resp.Result == bankapi.ResultReversed:
	case callErr == nil:
		return domainerr.New("INVARIANT_VIOLATION", "compensate answered "+resp.Result, map[string]any{"txid": txid})
	case code == "ALREADY_PROCESSED":
		// Every debit of the txid is reversed already: our own earlier
		// compensate whose cached answer has expired at the bank.
		resp = bankapi.CompensateResponse{Result: code, TxID: txid}
	case code == "TX_NOT_FOUND":
		status, resp = ReversalNoDebit, bankapi.CompensateResponse{Result: code, TxID: txid}
	default:
		return callErr
	}
	return o.db.Write(ctx, func(tx *store.Tx) error { return o.completeRefundInTx(ctx, tx, rev, status, resp) })
}

// completeRefundInTx writes the outcome commit. A reversal no longer
// REQUESTED (a concurrent step recorded it) is left alone.
func (o *Orchestrator) completeRefundInTx(ctx context.Context, tx *store.Tx, rev Reversal, status string, resp bankapi.CompensateResponse) error {
	now := clock.Stamp(o.clk.Now())
	result, _ := json.Marshal(resp)
	moved, err := entitystate.Transition(ctx, tx, o.clk, entitystate.Change{EntityType: ReversalEntity, EntityID: rev.ReversalID,
		From: []string{ReversalRequested}, To: status,
		EventType: map[string]string{ReversalCompleted: EventReversalCompleted, ReversalNoDebit: EventReversalNoDebit}[status],
		Actor:     "ZC", Payload: map[string]any{"txid": rev.TxID, "reversals": resp.Reversals},
		Set: []entitystate.Assign{{Column: "bank_result", Value: string(result)}, {Column: "updated_at", Value: now}}})
	if err != nil {
		return err
	}
	if !moved.Applied {
		return nil
	}
	ev, proof := finality.ReversalCompleted, map[string]any{"proof_type": ProofExtRefund, "issuer_bank_id": rev.PayerBankID,
		"proof_id": rev.RequestID, "recorded_at": now, "reversals": resp.Reversals, "bank_result": resp.Result}
	if status == ReversalNoDebit {
		ev, proof = finality.NoDebitRecordedProofSubmitted, map[string]any{"proof_type": ProofNoDebitRecorded,
			"issuer_bank_id": rev.PayerBankID, "proof_id": rev.RequestID, "recorded_at": now, "bank_result": resp.Result}
	}
	res, err := o.lanes.RecordInTx(ctx, tx, lane.Record{TxID: rev.TxID, State: lane.FailedExecution, EventType: ev,
		Payload: map[string]any{"reversal_id": rev.ReversalID, "proof": proof, "amount": bankapi.Amount{Value: rev.Amount, Currency: rev.Currency}}})
	if err != nil {
		return err
	}
	if !res.Applied {
		return domainerr.New("INVARIANT_VIOLATION", "reversed transfer left FAILED_EXECUTION", map[string]any{"txid": rev.TxID, "state": string(res.State)})
	}
	if _, err := tx.ExecContext(ctx, `UPDATE OrchestratorQueue SET status = 'DONE', updated_at = ? WHERE item_id = ? AND status = 'READY'`,
		now, itemID(KindRefund, rev.TxID)); err != nil {
		return wrapDB("finish refund item", err)
	}
	if err := o.closeCasesInTx(ctx, tx, rev.TxID); err != nil {
		return err
	}
	o.log.InfoContext(ctx, "orchestrator.reversal_completed", "txid", rev.TxID, "status", status, "reversals", len(resp.Reversals))
	return nil
}

// closeCasesInTx resolves every unresolved Case linked to txid whose
// linked transfers are all reversed; a Case still bundling transfers that
// wait for theirs moves to IN_PROGRESS.
func (o *Orchestrator) closeCasesInTx(ctx context.Context, tx *store.Tx, txid string) error {
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT c.case_id, c.state FROM CaseRelatedTransactions l
		JOIN Cases c ON c.case_id = l.case_id WHERE l.link_key = ? AND c.state <> ? ORDER BY c.case_id`, txid, cases.StateResolved)
	if err != nil {
		return wrapDB("cases of reversal", err)
	}
	type open struct{ id, state string }
	var list []open
	for rows.Next() {
		var c open
		if err := rows.Scan(&c.id, &c.state); err != nil {
			rows.Close()
			return wrapDB("cases of reversal", err)
		}
		list = append(list, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return wrapDB("cases of reversal", err)
	}
	for _, c := range list {
		var waiting int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM CaseRelatedTransactions l
			WHERE l.case_id = ? AND NOT EXISTS (SELECT 1 FROM ReversalRecords r WHERE r.txid = l.link_key AND r.status IN (?, ?))`,
			c.id, ReversalCompleted, ReversalNoDebit).Scan(&waiting); err != nil {
			return wrapDB("case links", err)
		}
		target := cases.StateResolved
		if waiting > 0 {
			if c.state != cases.StateOpen {
				continue
			}
			target = cases.StateInProgress
		}
		if _, err := o.cases.SetState(ctx, tx, c.id, target, "ZC", caseReasonReversed); err != nil {
			return err
		}
	}
	return nil
}

// Reversal reads the reversal of txid (NOT_FOUND when none was decided).
func (o *Orchestrator) Reversal(ctx context.Context, txid string) (rev Reversal, err error) {
	err = o.db.Read(ctx, func(tx *store.Tx) error {
		rev, err = readReversal(ctx, tx, txid)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return Reversal{}, domainerr.New("NOT_FOUND", "no reversal for this transfer", map[string]any{"txid": txid})
	}
	return rev, err
}

func readReversal(ctx context.Context, tx *store.Tx, txid string) (Reversal, error) {
	var r Reversal
	var evidence, note, result sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT reversal_id, txid, payer_bank_id, amount_value, amount_currency, status, request_id,
		proof_source, evidence_ref, requested_by, note, bank_result, created_at, updated_at FROM ReversalRecords WHERE txid = ?`, txid).
		Scan(&r.ReversalID, &r.TxID, &r.PayerBankID, &r.Amount, &r.Currency, &r.Status, &r.RequestID, &r.ProofSource,
			&evidence, &r.RequestedBy, &note, &result, &r.CreatedAt, &r.UpdatedAt)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Reversal{}, err
		}
		return Reversal{}, wrapDB("read reversal", err)
	}
	r.EvidenceRef, r.Note = evidence.String, note.String
	if result.Valid {
		var resp bankapi.CompensateResponse
		if json.Unmarshal([]byte(result.String), &resp) == nil {
			r.Reversals = resp.Reversals
		}
	}
	return r, nil
}
