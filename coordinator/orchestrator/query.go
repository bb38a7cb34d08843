package orchestrator

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

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
		if err := readChains(ctx, tx, &v, r.UpdatedAt); err != nil {
			return err
		}
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

// readChains fills v.Chains, v.Watermark and v.ReadModelLag. The chains
// are every hash chain carrying facts of the transfer (001 §13.6): its own
// TX:<txid>, the GT:<gtid> of a GTID leg, and the DNS:<cycle> chain of the
// DNS cycle it was handed to (gtid = cycle id, txid NULL); a participating
// chain with no entry yet is 0. The lag is the spec's read-model lag: the
// TX chain's tip MAX(occurred_at) minus the derived row's updated_at,
// never negative (a row that has seen its newest entry is caught up, so a
// finished transfer stays GREEN however old it is).
func readChains(ctx context.Context, tx *store.Tx, v *View, updatedAt string) error {
	var seq sql.NullInt64
	var tip sql.NullString
	if err := tx.QueryRowContext(ctx, `SELECT MAX(event_seq), MAX(occurred_at) FROM FinalityLog WHERE txid = ?`, v.TxID).Scan(&seq, &tip); err != nil {
		return wrapDB("watermark", err)
	}
	v.Chains = []Chain{{Key: "TX:" + v.TxID, MaxSeq: seq.Int64}}
	lag, err := readModelLag(tip.String, updatedAt)
	if err != nil {
		return err
	}
	v.ReadModelLag = lag
	rows, err := tx.QueryContext(ctx, `SELECT 'GT:' || g.gtid, COALESCE((SELECT MAX(f.event_seq) FROM FinalityLog f
			WHERE f.gtid = g.gtid AND f.txid IS NULL), 0)
		FROM (SELECT DISTINCT gtid FROM GtidLegs WHERE txid = ?1) g
		UNION ALL
		SELECT 'DNS:' || t.dns_cycle_id, COALESCE((SELECT MAX(f.event_seq) FROM FinalityLog f
			WHERE f.gtid = t.dns_cycle_id AND f.txid IS NULL), 0)
		FROM Transactions t WHERE t.txid = ?1 AND t.dns_cycle_id IS NOT NULL AND t.dns_cycle_id <> ''
		ORDER BY 1`, v.TxID)
	if err != nil {
		return wrapDB("watermark chains", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c Chain
		if err := rows.Scan(&c.Key, &c.MaxSeq); err != nil {
			return wrapDB("watermark chains", err)
		}
		v.Chains = append(v.Chains, c)
	}
	if err := rows.Err(); err != nil {
		return wrapDB("watermark chains", err)
	}
	for _, c := range v.Chains {
		v.Watermark = max(v.Watermark, c.MaxSeq)
	}
	return nil
}

// readModelLag is tip - updatedAt, or 0 when the row is at or past the tip
// (or the chain has no entry yet).
func readModelLag(tip, updatedAt string) (time.Duration, error) {
	if tip == "" {
		return 0, nil
	}
	t, err := clock.ParseStamp(tip)
	if err != nil {
		return 0, fmt.Errorf("orchestrator: FinalityLog occurred_at %q: %w", tip, err)
	}
	u, err := clock.ParseStamp(updatedAt)
	if err != nil {
		return 0, fmt.Errorf("orchestrator: Transactions.updated_at %q: %w", updatedAt, err)
	}
	return max(t.Sub(u), 0), nil
}
