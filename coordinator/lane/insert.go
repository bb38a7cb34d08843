package lane

import (
	"context"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Lanes of Transactions.lane (spec 003).
var laneValues = map[string]bool{
	"EXPRESS": true, "STANDARD": true, "BULK": true, "DEFERRED": true, "RTP": true,
	"HTLC": true, "HIGH_VALUE": true, "GTID": true, "DIRECT_DEBIT": true,
}

// NewTx is a transaction to create.
type NewTx struct {
	TxID             string
	Lane             string
	State            TxState // entry state; "" means RECEIVED
	AmountValue      int64   // minor units, > 0
	Currency         string  // ISO 4217; "" means JPY
	PayerBankID      string
	PayerAccountHash string
	PayeeBankID      string
	PayeeAccountHash string
	IdempotencyKey   string
	ExpiresAt        string // RFC3339, optional
	// ExtraColumns sets further columns on the new row (purpose, pspr_ref,
	// ...); state, owner, version and the timestamps are refused.
	ExtraColumns map[string]any
	EventType    finality.EventType // "" means PaymentInitiated
	Payload      any
	SideUpdates  SideUpdates
}

// InsertResult reports whether the row was created. Inserted is false
// (and nothing was written) when the txid or the idempotency key exists.
type InsertResult struct {
	Inserted bool
	Entry    finality.Entry
}

// InsertTxWithLog creates n in its own write transaction.
func (l *Lanes) InsertTxWithLog(ctx context.Context, n NewTx) (InsertResult, error) {
	var res InsertResult
	err := l.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		res, err = l.InsertTxInTx(ctx, tx, n)
		return err
	})
	if err != nil {
		return InsertResult{}, err
	}
	return res, nil
}

// InsertTxInTx creates n inside the caller's write transaction: an
// INSERT OR IGNORE of the row with owner 'ZC' and version 0, then — only
// if the row was inserted — the FinalityLog entry (state_from NULL) and
// the side updates.
func (l *Lanes) InsertTxInTx(ctx context.Context, tx *store.Tx, n NewTx) (InsertResult, error) {
	cols, args, err := newTxRow(&n, l.now())
	if err != nil {
		return InsertResult{}, err
	}
	if err := l.gate.CheckWritable(ctx, tx); err != nil {
		return InsertResult{}, err
	}
	ok, err := store.Insert(ctx, tx, "Transactions", cols, args...)
	if err != nil || !ok {
		return InsertResult{}, err
	}
	if err := l.fault(ctx, tx, n.TxID); err != nil {
		return InsertResult{}, err
	}
	entry, err := l.log.Append(ctx, tx, finality.Event{TxID: n.TxID, Type: n.EventType, StateTo: string(n.State), Payload: n.Payload})
	if err != nil {
		return InsertResult{}, err
	}
	if n.SideUpdates != nil {
		if err := n.SideUpdates(ctx, tx); err != nil {
			return InsertResult{}, err
		}
	}
	return InsertResult{Inserted: true, Entry: entry}, nil
}

// newTxRow applies n's defaults, checks it and returns the Transactions
// columns and values of its new row (owner 'ZC', version 0, stamped now).
func newTxRow(n *NewTx, now string) (cols []string, args []any, err error) {
	if n.State == "" {
		n.State = Received
	}
	if n.Currency == "" {
		n.Currency = "JPY"
	}
	if n.EventType == "" {
		n.EventType = finality.PaymentInitiated
	}
	for field, v := range map[string]string{"txid": n.TxID, "lane": n.Lane, "payer_bank_id": n.PayerBankID,
		"payer_account_hash": n.PayerAccountHash, "payee_bank_id": n.PayeeBankID, "idempotency_key": n.IdempotencyKey} {
		if v == "" {
			return nil, nil, missing(field)
		}
	}
	if n.TxID == finality.GlobalChain {
		return nil, nil, domainerr.New("INVALID_REQUEST", "txid 'GLOBAL' is reserved", nil)
	}
	if !laneValues[n.Lane] {
		return nil, nil, domainerr.New("INVALID_LANE", "unknown lane", map[string]any{"lane": n.Lane})
	}
	if n.AmountValue <= 0 {
		return nil, nil, domainerr.New("INVALID_AMOUNT", "amount must be a positive number of minor units", map[string]any{"amount_value": n.AmountValue})
	}
	if !isCurrencyCode(n.Currency) {
		return nil, nil, domainerr.New("INVALID_CURRENCY", "currency must be a 3-letter ISO 4217 code", map[string]any{"currency": n.Currency})
	}
	if !EntryStates[n.State] || (n.State == DecidedToSettle) != (n.Lane == "GTID") {
		return nil, nil, domainerr.New("IMPOSSIBLE_TRANSITION", "not an entry state for this lane",
			map[string]any{"txid": n.TxID, "lane": n.Lane, "to": string(n.State)})
	}
	extra, err := checkColumns(n.ExtraColumns)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range extra {
		if c == "amount_currency" || c == "payee_account_hash" || c == "expires_at" {
			return nil, nil, domainerr.New("INVALID_REQUEST", "set this column through its NewTx field", map[string]any{"column": c})
		}
	}
	cols = []string{"txid", "lane", "state", "amount_value", "amount_currency", "payer_bank_id", "payer_account_hash",
		"payee_bank_id", "payee_account_hash", "idempotency_key", "expires_at", "version", "owner",
		"created_at", "updated_at", "pending_since"}
	args = []any{n.TxID, n.Lane, string(n.State), n.AmountValue, n.Currency, n.PayerBankID, n.PayerAccountHash,
		n.PayeeBankID, nullable(n.PayeeAccountHash), n.IdempotencyKey, nullable(n.ExpiresAt), 0, OwnerZC, now, now, now}
	for _, c := range extra {
		cols = append(cols, c)
		args = append(args, n.ExtraColumns[c])
	}
	return cols, args, nil
}

func isCurrencyCode(s string) bool {
	if len(s) != 3 {
		return false
	}
	for _, c := range s {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
