package fx

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/uuid"
)

// Quote is one FxQuotes row: an FXP's directional rate with its validity.
type Quote struct {
	QuoteID      string      `json:"quote_id"`
	FxpBankID    string      `json:"fxp_bank_id"`
	FromCurrency string      `json:"from_currency"`
	ToCurrency   string      `json:"to_currency"`
	Rate         int64       `json:"rate"`
	MinAmount    int64       `json:"min_amount"`
	MaxAmount    *int64      `json:"max_amount,omitempty"`
	ValidFrom    string      `json:"valid_from"`
	ValidTo      string      `json:"valid_to"`
	Status       QuoteStatus `json:"status"`
	CreatedAt    string      `json:"created_at"`
	UpdatedAt    string      `json:"updated_at"`
	Version      int64       `json:"version"`
}

// RateRequest is PUT /api/fx/rates (001 §17.2).
type RateRequest struct {
	FxpBankID    string `json:"fxp_bank_id"`
	FromCurrency string `json:"from_currency"`
	ToCurrency   string `json:"to_currency"`
	Rate         int64  `json:"rate"`
	MinAmount    int64  `json:"min_amount,omitempty"`
	MaxAmount    *int64 `json:"max_amount,omitempty"`
	ValidFrom    string `json:"valid_from,omitempty"`
	ValidTo      string `json:"valid_to"`
}

// ValidCurrency reports whether c has the shape of an ISO 4217 code.
func ValidCurrency(c string) bool { return bankapi.ValidCurrency(c) }

func invalidRate(field, why string, v any) error {
	return domainerr.New("INVALID_FX_RATE", why, map[string]any{"field": field, "value": v})
}

func parseTime(field, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, invalidRate(field, field+" must be RFC3339", s)
	}
	return t.UTC(), nil
}

// PutRate upserts the FXP's quote for one direction (001 §17.2 PUT
// /api/fx/rates): an ACTIVE quote of the same FXP and pair is updated in
// place (guarded by its version), otherwise a new one is inserted. The FXP
// must be an active participant with is_fx_provider = 1 and an H limit
// row (ParticipantCurrencyLimits, or JPY) in both currencies: what it
// quotes it must be able to pay.
func (f *FX) PutRate(ctx context.Context, req RateRequest) (Quote, error) {
	switch {
	case !ValidCurrency(req.FromCurrency):
		return Quote{}, invalidRate("from_currency", "from_currency must be an ISO 4217 code", req.FromCurrency)
	case !ValidCurrency(req.ToCurrency):
		return Quote{}, invalidRate("to_currency", "to_currency must be an ISO 4217 code", req.ToCurrency)
	case req.FromCurrency == req.ToCurrency:
		return Quote{}, invalidRate("to_currency", "from_currency and to_currency must differ", req.ToCurrency)
	case req.Rate <= 0:
		return Quote{}, invalidRate("rate", "rate must be a positive integer (x 1e8)", req.Rate)
	case req.MinAmount < 0:
		return Quote{}, invalidRate("min_amount", "min_amount cannot be negative", req.MinAmount)
	case req.MaxAmount != nil && *req.MaxAmount < req.MinAmount:
		return Quote{}, invalidRate("max_amount", "max_amount is below min_amount", *req.MaxAmount)
	}
	now := f.now()
	validTo, err := parseTime("valid_to", req.ValidTo)
	if err != nil {
		return Quote{}, err
	}
	validFrom := now
	if req.ValidFrom != "" {
		if validFrom, err = parseTime("valid_from", req.ValidFrom); err != nil {
			return Quote{}, err
		}
	}
	if !validTo.After(validFrom) || !validTo.After(now) {
		return Quote{}, invalidRate("valid_to", "valid_to must be after valid_from and in the future", req.ValidTo)
	}
	var q Quote
	err = f.db.Write(ctx, func(tx *store.Tx) error {
		// One upsert per FXP at a time: the provider's row is locked
		// (PostgreSQL; SQLite's write transaction is exclusive), so two
		// racing first quotes of a pair cannot both insert.
		var locked string
		if err := tx.QueryRowContext(ctx, `SELECT bank_id FROM Participants WHERE bank_id = ?`+tx.ForUpdate(), req.FxpBankID).Scan(&locked); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("fx: lock provider %s: %w", req.FxpBankID, err)
		}
		if err := checkProvider(ctx, tx, req.FxpBankID, req.FromCurrency, req.ToCurrency); err != nil {
			return err
		}
		stamp := clock.Stamp(now)
		var id string
		var version int64
		err := tx.QueryRowContext(ctx, `SELECT quote_id, version FROM FxQuotes WHERE fxp_bank_id = ? AND from_currency = ?
			AND to_currency = ? AND status = ?`, req.FxpBankID, req.FromCurrency, req.ToCurrency, string(QuoteActive)).Scan(&id, &version)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			id = "FXQ-" + uuid.NewV7(now)
			if _, err := tx.ExecContext(ctx, `INSERT INTO FxQuotes (quote_id, fxp_bank_id, from_currency, to_currency, rate,
				min_amount, max_amount, valid_from, valid_to, status, created_at, updated_at, version)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)`, id, req.FxpBankID, req.FromCurrency, req.ToCurrency, req.Rate,
				req.MinAmount, req.MaxAmount, clock.Stamp(validFrom), clock.Stamp(validTo), string(QuoteActive), stamp, stamp); err != nil {
				return fmt.Errorf("fx: insert quote: %w", err)
			}
		case err != nil:
			return fmt.Errorf("fx: read quote: %w", err)
		default:
			ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE FxQuotes SET rate = ?, min_amount = ?, max_amount = ?, valid_from = ?,
				valid_to = ?, updated_at = ?, version = version + 1 WHERE quote_id = ? AND status = ? AND version = ?`,
				req.Rate, req.MinAmount, req.MaxAmount, clock.Stamp(validFrom), clock.Stamp(validTo), stamp, id, string(QuoteActive), version))
			if err != nil {
				return fmt.Errorf("fx: update quote %s: %w", id, err)
			}
			if !ok {
				return domainerr.New("STATE_GUARD", "quote changed concurrently; retry", map[string]any{"quote_id": id})
			}
		}
		q, err = getQuote(ctx, tx, id)
		return err
	})
	if err != nil {
		return Quote{}, err
	}
	f.log.InfoContext(ctx, "fx.rate_put", "quote_id", q.QuoteID, "fxp_bank_id", q.FxpBankID, "from", q.FromCurrency,
		"to", q.ToCurrency, "rate", q.Rate, "valid_to", q.ValidTo)
	return q, nil
}

// checkProvider refuses a quote from a participant that is unknown
// (PARTICIPANT_NOT_FOUND), inactive (STATE_GUARD), not an FX provider
// (UNAUTHORIZED) or without an H limit in one of the currencies
// (INVALID_FX_RATE: the FXP does not deal in that currency).
func checkProvider(ctx context.Context, tx *store.Tx, bankID string, currencies ...string) error {
	p, err := participants.GetInTx(ctx, tx, bankID)
	if err != nil {
		return err
	}
	var provider int
	if err := tx.QueryRowContext(ctx, `SELECT is_fx_provider FROM Participants WHERE bank_id = ?`, bankID).Scan(&provider); err != nil {
		return fmt.Errorf("fx: read is_fx_provider: %w", err)
	}
	switch {
	case !p.IsActive:
		return domainerr.New("STATE_GUARD", "FX provider is not active", map[string]any{"fxp_bank_id": bankID})
	case provider != 1:
		return domainerr.New("UNAUTHORIZED", "participant is not an FX provider", map[string]any{"fxp_bank_id": bankID})
	}
	for _, c := range currencies {
		if c == "JPY" {
			continue
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM ParticipantCurrencyLimits WHERE bank_id = ? AND currency = ?`,
			bankID, c).Scan(&n); err != nil {
			return fmt.Errorf("fx: read currency limit: %w", err)
		}
		if n == 0 {
			return domainerr.New("INVALID_FX_RATE", "FX provider has no H limit in "+c+" (ParticipantCurrencyLimits): it does not deal in it",
				map[string]any{"fxp_bank_id": bankID, "currency": c})
		}
	}
	return nil
}

// WithdrawRate withdraws an ACTIVE quote (DELETE /api/fx/rates/{id}); a
// quote that is not ACTIVE (withdrawn, unknown) is NOT_FOUND (404).
func (f *FX) WithdrawRate(ctx context.Context, quoteID string) error {
	err := f.db.Write(ctx, func(tx *store.Tx) error {
		ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE FxQuotes SET status = ?, updated_at = ?, version = version + 1
			WHERE quote_id = ? AND status = ?`, string(QuoteWithdrawn), clock.Stamp(f.now()), quoteID, string(QuoteActive)))
		if err != nil {
			return fmt.Errorf("fx: withdraw %s: %w", quoteID, err)
		}
		if !ok {
			return domainerr.New("NOT_FOUND", "no ACTIVE quote with this id", map[string]any{"quote_id": quoteID})
		}
		return nil
	})
	if err == nil {
		f.log.InfoContext(ctx, "fx.rate_withdrawn", "quote_id", quoteID)
	}
	return err
}

const quoteCols = `quote_id, fxp_bank_id, from_currency, to_currency, rate, min_amount, max_amount, valid_from, valid_to,
	status, created_at, updated_at, version`

func scanQuote(s interface{ Scan(...any) error }) (Quote, error) {
	var q Quote
	var st string
	var maxAmt sql.NullInt64
	err := s.Scan(&q.QuoteID, &q.FxpBankID, &q.FromCurrency, &q.ToCurrency, &q.Rate, &q.MinAmount, &maxAmt,
		&q.ValidFrom, &q.ValidTo, &st, &q.CreatedAt, &q.UpdatedAt, &q.Version)
	if maxAmt.Valid {
		v := maxAmt.Int64
		q.MaxAmount = &v
	}
	q.Status = QuoteStatus(st)
	return q, err
}

func getQuote(ctx context.Context, tx *store.Tx, id string) (Quote, error) {
	q, err := scanQuote(tx.QueryRowContext(ctx, `SELECT `+quoteCols+` FROM FxQuotes WHERE quote_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Quote{}, domainerr.New("NOT_FOUND", "no quote with this id", map[string]any{"quote_id": id})
	}
	if err != nil {
		return Quote{}, fmt.Errorf("fx: read quote %s: %w", id, err)
	}
	return q, nil
}

// liveQuotes returns every quote usable at now: ACTIVE, valid_from <= now
// < valid_to, from an active FX provider. from or to "" matches any.
func liveQuotes(ctx context.Context, tx *store.Tx, now time.Time, from, to string) ([]Quote, error) {
	stamp := clock.Stamp(now)
	rows, err := tx.QueryContext(ctx, `SELECT `+quoteCols+` FROM FxQuotes q WHERE status = ? AND valid_from <= ? AND valid_to > ?
		AND (? = '' OR from_currency = ?) AND (? = '' OR to_currency = ?)
		AND EXISTS (SELECT 1 FROM Participants p WHERE p.bank_id = q.fxp_bank_id AND p.is_active = 1 AND p.is_fx_provider = 1)
		ORDER BY quote_id`, string(QuoteActive), stamp, stamp, from, from, to, to)
	if err != nil {
		return nil, fmt.Errorf("fx: list quotes: %w", err)
	}
	defer rows.Close()
	var out []Quote
	for rows.Next() {
		q, err := scanQuote(rows)
		if err != nil {
			return nil, fmt.Errorf("fx: scan quote: %w", err)
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

// Rates lists the live quotes of a pair (GET /api/fx/rates?from=&to=).
func (f *FX) Rates(ctx context.Context, from, to string) ([]Quote, error) {
	var out []Quote
	err := f.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		out, err = liveQuotes(ctx, tx, f.now(), from, to)
		return err
	})
	if out == nil {
		out = []Quote{}
	}
	return out, err
}

// QuoteByID reads one quote, whatever its status (NOT_FOUND when none).
func (f *FX) QuoteByID(ctx context.Context, id string) (Quote, error) {
	var q Quote
	err := f.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		q, err = getQuote(ctx, tx, id)
		return err
	})
	return q, err
}
