package hlimit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Daily is a participant's daily amount use after a consumption.
type Daily struct {
	BusinessDate string // JST YYYY-MM-DD the total belongs to
	Used         int64
	Limit        *int64 // nil: no daily limit
}

// ConsumeDaily adds amount to the sending participant's daily total inside
// tx. The total resets lazily: the first consumption of a new JST business
// date zeroes it (a guarded UPDATE on daily_amount_last_reset_date), so no
// cron has to run at midnight. The addition is one guarded UPDATE
// (daily_amount_used + amount <= daily_amount_limit, or no limit); over
// the limit it returns DAILY_LIMIT_EXCEEDED (returned directly as 422 per
// spec 004) and leaves the total unchanged.
func (h *H) ConsumeDaily(ctx context.Context, tx *store.Tx, bankID string, amount int64) (Daily, error) {
	if amount <= 0 {
		return Daily{}, domainerr.New("INVALID_AMOUNT", "daily amount must be positive",
			map[string]any{"amount": amount, "bank_id": bankID})
	}
	date := clock.BusinessDate(h.clk.Now())
	// One statement: the lazy reset and the guarded addition together,
	// the total read back by RETURNING. Every right-hand side sees the
	// row as it was, so both CASEs test the stored reset date.
	var d Daily
	var limit sql.NullInt64
	var stored sql.NullString
	err := tx.QueryRowContext(ctx,
		`UPDATE Participants SET
		   daily_amount_used = CASE WHEN daily_amount_last_reset_date IS NULL OR daily_amount_last_reset_date < ? THEN 0 ELSE daily_amount_used END + ?,
		   daily_amount_last_reset_date = CASE WHEN daily_amount_last_reset_date IS NULL OR daily_amount_last_reset_date < ? THEN ? ELSE daily_amount_last_reset_date END
		 WHERE bank_id = ? AND (daily_amount_limit IS NULL OR
		   CASE WHEN daily_amount_last_reset_date IS NULL OR daily_amount_last_reset_date < ? THEN 0 ELSE daily_amount_used END + ? <= daily_amount_limit)
		 RETURNING daily_amount_used, daily_amount_limit, daily_amount_last_reset_date`,
		date, amount, date, date, bankID, date, amount).Scan(&d.Used, &limit, &stored)
	if err == nil {
		if limit.Valid {
			d.Limit = &limit.Int64
		}
		d.BusinessDate = stored.String
		return d, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Daily{}, fmt.Errorf("hlimit: consume daily %s: %w", bankID, err)
	}
	// Nothing updated: no such participant, or over the limit. The reset
	// still applies, and the refusal reports the total as it then is.
	if err := resetDaily(ctx, tx, bankID, date); err != nil {
		return Daily{}, err
	}
	d, err = readDaily(ctx, tx, bankID)
	if err != nil {
		return Daily{}, err
	}
	h.log.InfoContext(ctx, "hlimit.daily_refused", "bank_id", bankID, "requested", amount,
		"used", d.Used, "business_date", d.BusinessDate)
	if d.Limit == nil { // the limit was lifted between the statements: cannot happen inside the writer's transaction
		return Daily{}, domainerr.New("INVARIANT_VIOLATION", "daily consumption refused without a daily limit", map[string]any{"bank_id": bankID})
	}
	return Daily{}, domainerr.New("DAILY_LIMIT_EXCEEDED", "daily amount limit exceeded",
		map[string]any{"bank_id": bankID, "business_date": d.BusinessDate, "requested": amount,
			"used": d.Used, "limit": *d.Limit})
}

// DailyDateKey is the payload field of a transfer's first FinalityLog
// entry that records the JST business date whose daily total its amount
// was counted in (ConsumeDaily's Daily.BusinessDate).
const DailyDateKey = "daily_business_date"

// GiveBackDailyForTx returns a cancelled transfer's amount to its payer's
// daily total, inside the cancel's transaction: a transfer that moved no
// money does not use up the day's limit. It gives back only when the
// transfer's first entry records the business date it was counted in
// (DailyDateKey), the total still belongs to that date (after the reset
// nothing of that day is counted any more) and the total holds at least
// the amount. It returns the amount given back, 0 when nothing was. The
// lane cancel primitive calls it once, after its state guard applied, so a
// transfer is never given back twice.
func (h *H) GiveBackDailyForTx(ctx context.Context, tx *store.Tx, txid string) (int64, error) {
	var bankID string
	var amount int64
	var date sql.NullString
	err := tx.QueryRowContext(ctx,
		`SELECT t.payer_bank_id, t.amount_value,
		        (SELECT json_extract(f.payload_json, '$.`+DailyDateKey+`') FROM FinalityLog f
		          WHERE f.txid = t.txid ORDER BY f.event_seq LIMIT 1)
		   FROM Transactions t WHERE t.txid = ?`, txid).Scan(&bankID, &amount, &date)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, domainerr.New("TX_NOT_FOUND", "no such transaction", map[string]any{"txid": txid})
	}
	if err != nil {
		return 0, fmt.Errorf("hlimit: give back daily of %s: %w", txid, err)
	}
	if !date.Valid || date.String == "" {
		return 0, nil // never counted against a daily total
	}
	ok, err := store.Applied(tx.ExecContext(ctx,
		`UPDATE Participants SET daily_amount_used = daily_amount_used - ?
		 WHERE bank_id = ? AND daily_amount_last_reset_date = ? AND daily_amount_used >= ?`,
		amount, bankID, date.String, amount))
	if err != nil {
		return 0, fmt.Errorf("hlimit: give back daily of %s: %w", txid, err)
	}
	if !ok {
		return 0, nil
	}
	h.log.InfoContext(ctx, "hlimit.daily_given_back", "txid", txid, "bank_id", bankID, "amount", amount, "business_date", date.String)
	return amount, nil
}

// DailyOf returns the participant's daily total as of now, applying the
// lazy reset first (so a new business date reads 0).
func (h *H) DailyOf(ctx context.Context, tx *store.Tx, bankID string) (Daily, error) {
	if err := resetDaily(ctx, tx, bankID, clock.BusinessDate(h.clk.Now())); err != nil {
		return Daily{}, err
	}
	return readDaily(ctx, tx, bankID)
}

// CheckTxAmount refuses an amount above the participant's per-transfer
// limit with AMOUNT_EXCEEDS_TX_LIMIT (422 per spec 004).
func CheckTxAmount(ctx context.Context, tx *store.Tx, bankID string, amount int64) error {
	var limit sql.NullInt64
	err := tx.QueryRowContext(ctx, "SELECT tx_amount_limit FROM Participants WHERE bank_id = ?", bankID).Scan(&limit)
	if errors.Is(err, sql.ErrNoRows) {
		return domainerr.New("PARTICIPANT_NOT_FOUND", "no participant "+bankID, map[string]any{"bank_id": bankID})
	}
	if err != nil {
		return fmt.Errorf("hlimit: tx amount limit of %s: %w", bankID, err)
	}
	if limit.Valid && amount > limit.Int64 {
		return domainerr.New("AMOUNT_EXCEEDS_TX_LIMIT", "amount exceeds the per-transfer limit",
			map[string]any{"bank_id": bankID, "amount": amount, "limit": limit.Int64})
	}
	return nil
}

// resetDaily zeroes the daily total when the stored reset date is before
// date. The guard makes racing resets apply once; an earlier date (a clock
// set back) never resets.
func resetDaily(ctx context.Context, tx *store.Tx, bankID, date string) error {
	if _, err := tx.ExecContext(ctx,
		`UPDATE Participants SET daily_amount_used = 0, daily_amount_last_reset_date = ?
		 WHERE bank_id = ? AND (daily_amount_last_reset_date IS NULL OR daily_amount_last_reset_date < ?)`,
		date, bankID, date); err != nil {
		return fmt.Errorf("hlimit: reset daily %s: %w", bankID, err)
	}
	return nil
}

func readDaily(ctx context.Context, tx *store.Tx, bankID string) (Daily, error) {
	var d Daily
	var limit sql.NullInt64
	var date sql.NullString
	err := tx.QueryRowContext(ctx,
		"SELECT daily_amount_used, daily_amount_limit, daily_amount_last_reset_date FROM Participants WHERE bank_id = ?",
		bankID).Scan(&d.Used, &limit, &date)
	if errors.Is(err, sql.ErrNoRows) {
		return Daily{}, domainerr.New("PARTICIPANT_NOT_FOUND", "no participant "+bankID, map[string]any{"bank_id": bankID})
	}
	if err != nil {
		return Daily{}, fmt.Errorf("hlimit: read daily %s: %w", bankID, err)
	}
	if limit.Valid {
		d.Limit = &limit.Int64
	}
	d.BusinessDate = date.String
	return d, nil
}
