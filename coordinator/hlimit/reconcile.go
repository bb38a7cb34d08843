package hlimit

import (
	"context"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/store"
)

// Mismatch is a counter whose h_used differs from the sum of the
// unreleased reservations it should materialize.
type Mismatch struct {
	BankID     string
	Currency   string
	HUsed      int64 // the counter (0 when no counter row exists)
	Unreleased int64 // SUM(amount) of unreleased HReservations
	NoCounter  bool  // reservations exist for a (bank, currency) without a counter row
}

// Reconcile compares every H counter with the sum of its unreleased
// reservations (spec 003: h_used is a materialized counter checked by
// reconciliation) and returns the disagreements, ordered by bank and
// currency. An empty result means the H model is consistent.
func Reconcile(ctx context.Context, tx *store.Tx) ([]Mismatch, error) {
	const q = `
SELECT bank_id, currency, h_used, unreleased, no_counter FROM (
  SELECT p.bank_id AS bank_id, 'JPY' AS currency, p.h_used AS h_used,
         COALESCE((SELECT SUM(r.amount) FROM HReservations r
                   WHERE r.bank_id = p.bank_id AND r.currency = 'JPY' AND r.is_released = 0), 0) AS unreleased,
         0 AS no_counter
  FROM Participants p
  UNION ALL
  SELECT c.bank_id, c.currency, c.h_used,
         COALESCE((SELECT SUM(r.amount) FROM HReservations r
                   WHERE r.bank_id = c.bank_id AND r.currency = c.currency AND r.is_released = 0), 0),
         0
  FROM ParticipantCurrencyLimits c
  WHERE c.currency <> 'JPY'
  UNION ALL
  SELECT r.bank_id, r.currency, 0, SUM(r.amount), 1
  FROM HReservations r
  WHERE r.is_released = 0
    AND ((r.currency = 'JPY' AND NOT EXISTS (SELECT 1 FROM Participants p WHERE p.bank_id = r.bank_id))
      OR (r.currency <> 'JPY' AND NOT EXISTS (SELECT 1 FROM ParticipantCurrencyLimits c
                                               WHERE c.bank_id = r.bank_id AND c.currency = r.currency)))
  GROUP BY r.bank_id, r.currency
) AS m WHERE h_used <> unreleased OR no_counter = 1
ORDER BY bank_id, currency`
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("hlimit: reconcile: %w", err)
	}
	defer rows.Close()
	var out []Mismatch
	for rows.Next() {
		var m Mismatch
		var noCounter int
		if err := rows.Scan(&m.BankID, &m.Currency, &m.HUsed, &m.Unreleased, &noCounter); err != nil {
			return nil, fmt.Errorf("hlimit: reconcile: %w", err)
		}
		m.NoCounter = noCounter != 0
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("hlimit: reconcile: %w", err)
	}
	return out, nil
}

// ReconcileDB is Reconcile on a read snapshot.
func ReconcileDB(ctx context.Context, db *store.DB) (out []Mismatch, err error) {
	err = db.Read(ctx, func(tx *store.Tx) error {
		var e error
		out, e = Reconcile(ctx, tx)
		return e
	})
	return out, err
}
