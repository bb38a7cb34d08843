package adapter

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
)

// TransferPort is how the bank's customer channel reaches ZC: the
// transfer it submits (POST /api/transfers) and reads back (GET
// /api/transactions/{txid}), with the bank's own credentials. The node
// wires it to its gateway; the wire types are the coordinator's.
type TransferPort interface {
	SubmitTransfer(ctx context.Context, bankID string, req orchestrator.PaymentInitiated, idempotencyKey string) (orchestrator.SubmitResult, error)
	// QueryTransfer answers ZC's QueryResponse for the bank, as ZC wrote
	// it (the gateway owns that type; the channel relays it).
	QueryTransfer(ctx context.Context, bankID, txid string) (json.RawMessage, error)
}

// CustomerTransferRequest is the body of POST /bank/{bank_id}/v1/me/transfers
// (spec 004). ZC names a payee account by its account_hash, which the
// payer bank cannot derive from an account number of another bank:
// payee_account_hash is required, payee_account_id alone is refused.
type CustomerTransferRequest struct {
	Amount           bankapi.Amount `json:"amount"`
	PayeeBankID      string         `json:"payee_bank_id"`
	PayeeAccountHash string         `json:"payee_account_hash"`
	PayeeAccountID   string         `json:"payee_account_id,omitempty"`
	Lane             string         `json:"lane"`
	Purpose          string         `json:"purpose,omitempty"`
	IdempotencyKey   string         `json:"idempotency_key"`
	PayerAccountID   string         `json:"payer_account_id,omitempty"`
}

// CustomerTransferSchemaVersion is the PaymentInitiated schema version the
// customer channel sends.
const CustomerTransferSchemaVersion = "1.1"

// SubmitCustomerTransfer sends a customer's transfer to ZC from one of its
// accounts (payer_account_id, or its only account). The key ZC keeps is
// the customer's key scoped by the customer ("{customer_id}:{key}"), so
// the same key of two customers are two transfers and a retry of one is
// a replay.
func (a *Adapter) SubmitCustomerTransfer(ctx context.Context, customerID string, req CustomerTransferRequest) (orchestrator.SubmitResult, error) {
	switch {
	case req.IdempotencyKey == "":
		return orchestrator.SubmitResult{}, domainerr.New("MISSING_FIELD", "idempotency_key is required", map[string]any{"field": "idempotency_key"})
	case req.PayeeAccountHash == "" && req.PayeeAccountID != "":
		return orchestrator.SubmitResult{}, domainerr.New("INVALID_REQUEST",
			"payee_account_hash is required: ZC names the payee account by its hash, which the payer bank cannot derive from payee_account_id",
			map[string]any{"field": "payee_account_hash"})
	case req.PayeeAccountHash == "":
		return orchestrator.SubmitResult{}, domainerr.New("MISSING_FIELD", "payee_account_hash is required", map[string]any{"field": "payee_account_hash"})
	case req.PayeeBankID == "":
		return orchestrator.SubmitResult{}, domainerr.New("MISSING_FIELD", "payee_bank_id is required", map[string]any{"field": "payee_bank_id"})
	}
	if a.xfers == nil {
		return orchestrator.SubmitResult{}, domainerr.New("BANK_ERROR", "the customer channel has no link to ZC", nil)
	}
	var payer string
	err := a.db.Read(ctx, func(tx *store.Tx) error {
		if req.PayerAccountID != "" {
			var err error
			payer, err = a.customerAccountTx(ctx, tx, customerID, req.PayerAccountID)
			return err
		}
		hashes, err := queryStrings(ctx, tx, `SELECT account_hash FROM AdapterCustomerAccounts WHERE customer_id = ?`, customerID)
		if err != nil {
			return fmt.Errorf("adapter: customer accounts: %w", err)
		}
		if len(hashes) != 1 {
			return domainerr.New("MISSING_FIELD", "payer_account_id is required (the customer holds several accounts, or none)",
				map[string]any{"field": "payer_account_id", "accounts": len(hashes)})
		}
		payer = hashes[0]
		return nil
	})
	if err != nil {
		return orchestrator.SubmitResult{}, err
	}
	key := customerID + ":" + req.IdempotencyKey
	pi := orchestrator.PaymentInitiated{Lane: req.Lane, Amount: req.Amount, Purpose: req.Purpose,
		Payer: orchestrator.Party{BankID: a.bank, AccountHash: payer}, Payee: orchestrator.Party{BankID: req.PayeeBankID, AccountHash: req.PayeeAccountHash},
		ParticipantRef: "CUST-" + key, SchemaVersion: CustomerTransferSchemaVersion}
	res, err := a.xfers.SubmitTransfer(ctx, a.bank, pi, key)
	if err != nil {
		return orchestrator.SubmitResult{}, err
	}
	err = a.db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO AdapterCustomerTransfers (txid, customer_id, idempotency_key, created_at)
			VALUES (?, ?, ?, ?) ON CONFLICT (txid) DO NOTHING`, res.TxID, customerID, req.IdempotencyKey, a.now())
		if err != nil {
			return fmt.Errorf("adapter: record customer transfer %s: %w", res.TxID, err)
		}
		return nil
	})
	if err != nil {
		return orchestrator.SubmitResult{}, err
	}
	a.log.InfoContext(ctx, "adapter.customer_transfer", "txid", res.TxID, "lane", res.Lane, "amount", req.Amount.Value)
	return res, nil
}

// CustomerTransfer reads a transfer the customer sent (ZC's view as the
// payer bank sees it); another customer's is NOT_FOUND.
func (a *Adapter) CustomerTransfer(ctx context.Context, customerID, txid string) (json.RawMessage, error) {
	err := a.db.Read(ctx, func(tx *store.Tx) error {
		var owner string
		err := tx.QueryRowContext(ctx, `SELECT customer_id FROM AdapterCustomerTransfers WHERE txid = ?`, txid).Scan(&owner)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && owner != customerID) {
			return domainerr.New("TX_NOT_FOUND", "no transfer of this customer with this txid", map[string]any{"txid": txid})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if a.xfers == nil {
		return nil, domainerr.New("BANK_ERROR", "the customer channel has no link to ZC", nil)
	}
	return a.xfers.QueryTransfer(ctx, a.bank, txid)
}
