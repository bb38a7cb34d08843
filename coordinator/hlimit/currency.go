package hlimit

import (
	"context"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// SetCurrencyLimit sets bank's H limit in a currency other than JPY
// (ParticipantCurrencyLimits, created at h_used 0 when absent) inside tx.
// A limit below what is in use now is H_LIMIT_EXCEEDED and changes
// nothing (the guarded UPDATE keeps h_used <= h_limit); JPY lives in
// Participants.h_limit and is INVALID_CURRENCY here. The bank must be a
// participant (PARTICIPANT_NOT_FOUND).
func SetCurrencyLimit(ctx context.Context, tx *store.Tx, bankID, currency string, limit int64) error {
	if currency == JPY || len(currency) != 3 {
		return domainerr.New("INVALID_CURRENCY", "a currency limit is for a 3-letter currency other than JPY",
			map[string]any{"field": "currency", "value": currency})
	}
	if limit < 0 {
		return domainerr.New("INVALID_AMOUNT", "h_limit cannot be negative", map[string]any{"field": "h_limit", "value": limit})
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM Participants WHERE bank_id = ?`, bankID).Scan(&n); err != nil {
		return fmt.Errorf("hlimit: read participant %s: %w", bankID, err)
	}
	if n == 0 {
		return domainerr.New("PARTICIPANT_NOT_FOUND", "no participant "+bankID, map[string]any{"bank_id": bankID})
	}
	if _, err := store.Insert(ctx, tx, "ParticipantCurrencyLimits", []string{"bank_id", "currency", "h_limit", "h_used"},
		bankID, currency, 0, 0); err != nil {
		return fmt.Errorf("hlimit: create limit %s %s: %w", bankID, currency, err)
	}
	ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE ParticipantCurrencyLimits SET h_limit = ?
		WHERE bank_id = ? AND currency = ? AND h_used <= ?`, limit, bankID, currency, limit))
	if err != nil {
		return fmt.Errorf("hlimit: set limit %s %s: %w", bankID, currency, err)
	}
	if !ok {
		return domainerr.New("H_LIMIT_EXCEEDED", "the new limit is below the H in use", map[string]any{"bank_id": bankID, "currency": currency, "h_limit": limit})
	}
	return nil
}

// SetCurrencyLimitDB is SetCurrencyLimit in its own write transaction.
func SetCurrencyLimitDB(ctx context.Context, db *store.DB, bankID, currency string, limit int64) error {
	return db.Write(ctx, func(tx *store.Tx) error { return SetCurrencyLimit(ctx, tx, bankID, currency, limit) })
}
