package orchestrator

import (
	"context"
	"database/sql"
	"errors"

	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

func (o *Orchestrator) query(ctx context.Context, txid string) (View, error) {
	var v View
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		r, err := readTx(ctx, tx, txid)
		if err != nil {
			return err
		}
		v = View{TxID: r.TxID, Lane: r.Lane, State: string(r.State), ReasonCode: r.ReasonCode, Amount: r.amount(),
			PayerBankID: r.PayerBank, PayeeBankID: r.PayeeBank, Owner: r.Owner, Version: r.Version,
			ExternalSettlementStatus: r.ExtStatus, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
			AsOf: clock.Stamp(o.clk.Now())}
		v.Decision = decisionOf(r)
		v.Execution = Execution{A: "NONE", B: "NONE", PayerBankProofRef: r.PayerProof, PayeeBankProofRef: r.PayeeProof}
		if r.PayerProof != "" {
			v.Execution.A = "OK"
		} else if r.ReasonCode == ReasonExecDebitFailed {
			v.Execution.A = "NG"
		}
		if r.PayeeProof != "" {
			v.Execution.B = "OK"
		} else if r.ReasonCode == ReasonExecCreditFailed {
			v.Execution.B = "NG"
		}
		if r.CaseID != "" {
			v.Case.CaseID = r.CaseID
			if c, err := cases.Get(ctx, tx, r.CaseID); err == nil {
				v.Case.Status = c.State
			}
		}
		var seq sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(event_seq) FROM FinalityLog WHERE txid = ?`, txid).Scan(&seq); err != nil {
			return wrapDB("watermark", err)
		}
		v.Chains = []Chain{{Key: "TX:" + txid, MaxSeq: seq.Int64}}
		v.Watermark = seq.Int64
		var retryAt, status sql.NullString
		var attempts int
		err = tx.QueryRowContext(ctx, `SELECT status, attempts, next_attempt_at FROM OrchestratorQueue
			WHERE txid = ? AND kind = ?`, txid, KindDrive).Scan(&status, &attempts, &retryAt)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return wrapDB("queue", err)
		}
		retrying := status.String == StatusReady && attempts > 0
		if retrying {
			v.NextRetryAt = retryAt.String
		}
		mode, err := sysmode.ReadStatus(ctx, tx)
		if err != nil {
			return err
		}
		v.NextActionHint = hint(r, retrying || !mode.Writable(), status.String == StatusAcked)
		return nil
	})
	return v, err
}

func decisionOf(r txRow) Decision {
	switch r.State {
	case lane.DecidedCancel, lane.Cancelled:
		return Decision{Status: string(lane.DecidedCancel)}
	case lane.DecidedToSettle, lane.PayerExecConfirmed, lane.PayeeExecConfirmed, lane.Settled, lane.Suspended, lane.FailedExecution:
		return Decision{Status: string(lane.DecidedToSettle), DecisionProofRef: r.DecisionProofRef}
	}
	return Decision{Status: "NONE"}
}

// hint maps a transfer to the closed next_action_hint set: OPEN_CASE when
// it needs a person (failed, refused by a bank after the decision, or its
// work was escalated), CONTACT_PAYER_BANK when it was cancelled (the payer
// bank explains why), RETRY_LATER while a retry is scheduled, a bank is
// unreachable or the system is read-only, WAIT otherwise.
func hint(r txRow, retrying, acked bool) string {
	switch {
	case r.State == lane.FailedExecution, acked, Family(r.ReasonCode) == FamilyEvent && r.State == lane.Suspended:
		return HintOpenCase
	case r.State == lane.Cancelled || r.State == lane.DecidedCancel:
		return HintContactPayerBank
	case retrying, r.ReasonCode == ReasonSuspendAdapterDown:
		return HintRetryLater
	}
	return HintWait
}
