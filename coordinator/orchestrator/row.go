package orchestrator

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
)

// txRow is a Transactions row joined with its orchestration progress.
type txRow struct {
	TxID, Lane, Owner         string
	State                     lane.TxState
	Version                   int64
	Amount                    int64
	Currency                  string
	PayerBank, PayerAcct      string
	PayeeBank, PayeeAcct      string
	ReasonCode                string
	DecisionProofRef          string
	PayerProof, PayeeProof    string
	ExtStatus                 string
	CaseID                    string
	PendingSince, UpdatedAt   string
	CreatedAt                 string
	Authority, Name, BankRes  string
	ExecFailures              int
	CreditNotified, DebitDone bool
	ExpiresAt, RequestJSON    string
	PSPRRef                   string
	EdiRef                    string // Transactions.edi_ref: remittance information for execute-credit
}

func (r txRow) amount() bankapi.Amount { return bankapi.Amount{Value: r.Amount, Currency: r.Currency} }

// payerProofType is proof_type of the stored payer bank_proof_ref.
func (r txRow) payerProofType() string {
	var p bankapi.BankProofRef
	if r.PayerProof == "" || json.Unmarshal([]byte(r.PayerProof), &p) != nil {
		return ""
	}
	return p.ProofType
}

const rowSelect = `SELECT t.txid, t.lane, t.owner, t.state, t.version, t.amount_value, t.amount_currency,
	t.payer_bank_id, t.payer_account_hash, t.payee_bank_id, COALESCE(t.payee_account_hash, ''),
	COALESCE(t.reason_code, ''), COALESCE(t.decision_proof_ref, ''), COALESCE(t.payer_bank_proof_ref, ''),
	COALESCE(t.payee_bank_proof_ref, ''), COALESCE(t.external_settlement_status, 'NONE'), COALESCE(t.case_id, ''),
	COALESCE(t.pending_since, t.updated_at), t.updated_at, t.created_at,
	COALESCE(p.authority_result, ''), COALESCE(p.name_result, ''), COALESCE(p.bank_reservation_ref, ''),
	COALESCE(p.exec_failures, 0), p.credit_notified_at IS NOT NULL, p.debit_settled_at IS NOT NULL,
	COALESCE(t.expires_at, ''), COALESCE(p.request_json, ''), COALESCE(t.pspr_ref, ''),
	COALESCE(t.edi_ref, '')
	FROM Transactions t LEFT JOIN OrchestratorTransfers p ON p.txid = t.txid WHERE t.txid = ?`

func readTx(ctx context.Context, tx *store.Tx, txid string) (txRow, error) {
	var r txRow
	var state string
	err := tx.QueryRowContext(ctx, rowSelect, txid).Scan(&r.TxID, &r.Lane, &r.Owner, &state, &r.Version, &r.Amount, &r.Currency,
		&r.PayerBank, &r.PayerAcct, &r.PayeeBank, &r.PayeeAcct, &r.ReasonCode, &r.DecisionProofRef, &r.PayerProof,
		&r.PayeeProof, &r.ExtStatus, &r.CaseID, &r.PendingSince, &r.UpdatedAt, &r.CreatedAt,
		&r.Authority, &r.Name, &r.BankRes, &r.ExecFailures, &r.CreditNotified, &r.DebitDone, &r.ExpiresAt, &r.RequestJSON, &r.PSPRRef, &r.EdiRef)
	if errors.Is(err, sql.ErrNoRows) {
		return r, domainerr.New("TX_NOT_FOUND", "transaction not found", map[string]any{"txid": txid})
	}
	if err != nil {
		return r, wrapDB("read "+txid, err)
	}
	r.State = lane.TxState(state)
	return r, nil
}

func (o *Orchestrator) load(ctx context.Context, txid string) (r txRow, err error) {
	err = o.db.Read(ctx, func(tx *store.Tx) error {
		r, err = readTx(ctx, tx, txid)
		return err
	})
	return r, err
}

// hintRow hands the primitives of tx the guarded columns of r as this
// step loaded them, so its first transition does not read the row again
// (lane.HintRow: verified by the CAS, a stale one costs a read).
func hintRow(tx *store.Tx, r txRow) { lane.HintRow(tx, r.TxID, r.State, r.Version, r.Owner) }

// setProgress updates OrchestratorTransfers columns of txid inside tx.
func setProgress(ctx context.Context, tx *store.Tx, txid, now string, sets string, args ...any) error {
	args = append(args, now, txid)
	_, err := tx.ExecContext(ctx, `UPDATE OrchestratorTransfers SET `+sets+`, updated_at = ? WHERE txid = ?`, args...)
	return wrapDB("progress", err)
}
