package orchestrator

import (
	"context"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
)

// A credit held by the payee bank's incoming-transfer filter (spec 004
// 着金フィルタ, docs/bank-api.md): execute-credit answers HELD with an
// approval_id; the transfer waits in SUSPENDED with
// SUSPEND_CREDIT_APPROVAL_PENDING (payer debited, H still reserved) until
// the payee bank decides and calls POST /internal/transfers/{txid}/
// resume-credit:
//
//   - approved: the transfer's drive is queued again; it sends
//     execute-credit once more (same request_id), the bank now posts the
//     credit, and the transfer settles (PayeeExecConfirmed, Settled);
//   - rejected: SUSPENDED -> FAILED_EXECUTION with CREDIT_APPROVAL_REJECTED
//     (H released), then the reversal path refunds the payer exactly once
//     (RequestRefund, evidence_ref "APPROVAL:{approval_id}").
//
// A transfer left waiting is moved to FAILED_EXECUTION by the timeout
// sweep like any other SUSPENDED transfer (PR-SUSPENDED-TIMEOUT).

// refusalPayload is the Suspended payload of a refused execution command:
// the bank's reason code and, when its error names one, the cause (an
// incoming-transfer filter's refusal is STATE_GUARD with cause
// FILTER_REJECTED or APPROVAL_REJECTED: the catalog has no code of its own
// for it).
func refusalPayload(callErr error) map[string]any {
	p := map[string]any{"bank_reason_code": domainerr.Code(callErr)}
	if de, ok := domainerr.As(callErr); ok {
		if c, ok := de.Details["cause"].(string); ok && c != "" {
			p["bank_cause"] = c
		}
	}
	return p
}

// creditHeld parks a transfer whose credit the payee bank holds for
// approval in SUSPENDED (from PAYER_EXEC_CONFIRMED). A transfer already
// SUSPENDED (a drive run again while the approval is pending) stays as it
// is.
func (o *Orchestrator) creditHeld(ctx context.Context, r txRow, approvalID string) error {
	if r.State == lane.Suspended {
		return nil
	}
	res, err := o.lanes.SuspendTx(ctx, lane.Suspend{TxID: r.TxID, From: r.State, To: lane.Suspended,
		ReasonCode: ReasonSuspendCreditApproval, Payload: map[string]any{"approval_id": approvalID, "payee_bank_id": r.PayeeBank},
		SideUpdates: o.gtidSuspendSide(r.Lane, r.TxID, ReasonSuspendCreditApproval)})
	if err == nil && res.Applied {
		o.log.InfoContext(ctx, "orchestrator.credit_held", "txid", r.TxID, "approval_id", approvalID, "payee_bank_id", r.PayeeBank)
	}
	return err
}

// ResumeCredit applies the payee bank's decision on a held credit (see
// the comment above). Refusals: MISSING_FIELD, TX_NOT_FOUND, NOT_FOUND
// (bank_id is not the transfer's payee: a non-party learns nothing),
// STATE_GUARD (the transfer is not waiting on its credit). A decision
// applied before answers the same outcome with Replayed true (a rejection
// asks for the refund again, which replays it).
func (o *Orchestrator) ResumeCredit(ctx context.Context, txid string, req bankapi.ResumeCreditRequest) (bankapi.ResumeCreditResponse, error) {
	for _, f := range []struct{ name, v string }{{"txid", txid}, {"bank_id", req.BankID}, {"approval_id", req.ApprovalID}, {"decided_by", req.DecidedBy}} {
		if f.v == "" {
			return bankapi.ResumeCreditResponse{}, domainerr.New("MISSING_FIELD", f.name+" is required", map[string]any{"field": f.name})
		}
	}
	out := bankapi.ResumeCreditResponse{TxID: txid, Result: bankapi.ResultResumed}
	if !req.Approved {
		out.Result = bankapi.ResultRejected
	}
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		r, err := readTx(ctx, tx, txid)
		if err != nil {
			return err
		}
		if r.PayeeBank != req.BankID {
			return domainerr.New("NOT_FOUND", "no such transfer for this bank", map[string]any{"txid": txid})
		}
		out.State = string(r.State)
		details := map[string]any{"txid": txid, "state": string(r.State), "approved": req.Approved}
		switch {
		case req.Approved && (r.State == lane.PayeeExecConfirmed || r.State == lane.Settled):
			out.Replayed = true
			return nil
		case !req.Approved && r.State == lane.FailedExecution && r.ReasonCode == ReasonCreditApprovalRejected:
			out.Replayed = true
			return nil
		case r.State != lane.Suspended || r.PayerProof == "" || r.Owner != lane.OwnerZC:
			return domainerr.New("STATE_GUARD", "the transfer is not waiting on its credit", details)
		}
		if req.Approved {
			return o.enqueue(ctx, tx, KindDrive, r.TxID, r.Lane, StatusReady, o.clk.Now())
		}
		res, err := o.lanes.TransitionInTx(ctx, tx, lane.Transition{TxID: r.TxID, From: lane.Suspended, To: lane.FailedExecution,
			EventType: finality.FailedExecution, SetColumns: map[string]any{"reason_code": ReasonCreditApprovalRejected},
			Payload: map[string]any{"reason_code": ReasonCreditApprovalRejected, "approval_id": req.ApprovalID,
				"decided_by": req.DecidedBy, "payee_bank_id": req.BankID}})
		if err != nil {
			return err
		}
		if !res.Applied {
			return errConflict
		}
		out.State = string(lane.FailedExecution)
		_, err = o.h.ReleaseForTx(ctx, tx, r.TxID)
		return err
	})
	if err == errConflict {
		return bankapi.ResumeCreditResponse{}, domainerr.New("CONCURRENCY_CONFLICT", "the transfer moved during the decision; ask again",
			map[string]any{"txid": txid})
	}
	if err != nil {
		return bankapi.ResumeCreditResponse{}, err
	}
	o.log.InfoContext(ctx, "orchestrator.credit_decided", "txid", txid, "approved", req.Approved, "approval_id", req.ApprovalID,
		"decided_by", req.DecidedBy, "replayed", out.Replayed)
	if req.Approved {
		return out, nil
	}
	// The refund: decided and sent now; a bank that cannot be reached
	// leaves it REQUESTED for the REFUND work item.
	if _, err := o.RequestRefund(ctx, RefundRequest{TxID: txid, RequestedBy: "BANK_" + req.BankID,
		EvidenceRef: "APPROVAL:" + req.ApprovalID, Note: "the payee side rejected the held credit"}); err != nil {
		return out, err
	}
	return out, nil
}
