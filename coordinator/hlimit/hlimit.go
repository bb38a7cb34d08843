package hlimit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/uuid"
	"github.com/zcgw/zcgw/coordinator/zclog"
)

// JPY is the currency whose H lives in Participants.h_limit/h_used.
const JPY = "JPY"

// Reservation modes (HReservations.mode).
const (
	ModeReserved = "RESERVED"
	ModeLocked   = "LOCKED"
)

// H runs the H model with an injected clock.
type H struct {
	clk clock.Clock
	log *slog.Logger
}

// New returns an H reading time from clk and logging to log (nil: discard).
func New(clk clock.Clock, log *slog.Logger) *H {
	return &H{clk: clk, log: zclog.OrDiscard(log)}
}

// ReserveRequest asks for amount of bank's H in currency for txid.
type ReserveRequest struct {
	// ReservationID names the reservation; empty generates "HRES-<uuid>".
	// Reserving an existing ID with the same request returns it unchanged
	// (no second charge); with a different request it is refused.
	ReservationID string
	TxID          string
	BankID        string
	Currency      string // empty means JPY
	Amount        int64  // minor units, > 0
	Mode          string // RESERVED (default) or LOCKED
}

// Reservation is one HReservations row.
type Reservation struct {
	ID         string
	TxID       string
	BankID     string
	Currency   string
	Amount     int64
	Mode       string
	Released   bool
	CreatedAt  string
	ReleasedAt string
}

// counter names the table holding a currency's h_limit/h_used and the
// WHERE clause (with its arguments) selecting the participant's row.
func counter(bankID, currency string) (table, where string, args []any) {
	if currency == JPY {
		return "Participants", "bank_id = ?", []any{bankID}
	}
	return "ParticipantCurrencyLimits", "bank_id = ? AND currency = ?", []any{bankID, currency}
}

// ReserveH reserves req.Amount of the bank's H inside tx: one guarded
// UPDATE (h_used + amount <= h_limit) on Participants for JPY or on
// ParticipantCurrencyLimits otherwise, then the HReservations row. Over
// the limit it returns H_LIMIT_EXCEEDED and writes nothing; an unknown
// participant (or a currency it has no limit row for) is
// PARTICIPANT_NOT_FOUND / H_LIMIT_EXCEEDED.
func (h *H) ReserveH(ctx context.Context, tx *store.Tx, req ReserveRequest) (Reservation, error) {
	if req.Currency == "" {
		req.Currency = JPY
	}
	if req.Mode == "" {
		req.Mode = ModeReserved
	}
	switch {
	case req.Amount <= 0:
		return Reservation{}, domainerr.New("INVALID_AMOUNT", "H reservation amount must be positive",
			map[string]any{"amount": req.Amount, "txid": req.TxID})
	case req.TxID == "":
		return Reservation{}, domainerr.New("MISSING_FIELD", "H reservation needs a txid", map[string]any{"field": "txid"})
	case req.BankID == "":
		return Reservation{}, domainerr.New("MISSING_FIELD", "H reservation needs a bank_id", map[string]any{"field": "bank_id"})
	case req.Mode != ModeReserved && req.Mode != ModeLocked:
		return Reservation{}, domainerr.New("INVALID_REQUEST", "H reservation mode must be RESERVED or LOCKED",
			map[string]any{"mode": req.Mode})
	}
	if req.ReservationID == "" {
		req.ReservationID = "HRES-" + uuid.New()
	} else if existing, err := get(ctx, tx, req.ReservationID); err == nil {
		if existing.TxID != req.TxID || existing.BankID != req.BankID || existing.Currency != req.Currency ||
			existing.Amount != req.Amount || existing.Mode != req.Mode {
			return Reservation{}, domainerr.New("IDEMPOTENCY_KEY_CONFLICT", "reservation id reused for a different reservation",
				map[string]any{"reservation_id": req.ReservationID, "txid": req.TxID})
		}
		return existing, nil
	} else if !errors.Is(err, sql.ErrNoRows) {
		return Reservation{}, err
	}

	table, where, args := counter(req.BankID, req.Currency)
	ok, err := store.Applied(tx.ExecContext(ctx,
		"UPDATE "+table+" SET h_used = h_used + ? WHERE "+where+" AND h_used + ? <= h_limit",
		append(append([]any{req.Amount}, args...), req.Amount)...))
	if err != nil {
		return Reservation{}, fmt.Errorf("hlimit: reserve %s for %s: %w", req.BankID, req.TxID, err)
	}
	if !ok {
		return Reservation{}, h.refusal(ctx, tx, req)
	}
	now := clock.Stamp(h.clk.Now())
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO HReservations (reservation_id, txid, bank_id, amount, mode, is_released, created_at, currency)
		 VALUES (?, ?, ?, ?, ?, 0, ?, ?)`,
		req.ReservationID, req.TxID, req.BankID, req.Amount, req.Mode, now, req.Currency); err != nil {
		return Reservation{}, fmt.Errorf("hlimit: record reservation %s: %w", req.ReservationID, err)
	}
	h.log.DebugContext(ctx, "hlimit.reserved", "txid", req.TxID, "bank_id", req.BankID,
		"currency", req.Currency, "amount", req.Amount, "reservation_id", req.ReservationID)
	return Reservation{ID: req.ReservationID, TxID: req.TxID, BankID: req.BankID, Currency: req.Currency,
		Amount: req.Amount, Mode: req.Mode, CreatedAt: now}, nil
}

// refusal explains why the guarded UPDATE of ReserveH changed no row.
func (h *H) refusal(ctx context.Context, tx *store.Tx, req ReserveRequest) error {
	var known int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM Participants WHERE bank_id = ?", req.BankID).Scan(&known); err != nil {
		return fmt.Errorf("hlimit: reserve %s: %w", req.BankID, err)
	}
	if known == 0 {
		return domainerr.New("PARTICIPANT_NOT_FOUND", "no participant "+req.BankID,
			map[string]any{"bank_id": req.BankID, "txid": req.TxID})
	}
	table, where, args := counter(req.BankID, req.Currency)
	var limit, used int64
	err := tx.QueryRowContext(ctx, "SELECT h_limit, h_used FROM "+table+" WHERE "+where, args...).Scan(&limit, &used)
	if errors.Is(err, sql.ErrNoRows) {
		limit, used = 0, 0 // no limit row for this currency: no H at all
	} else if err != nil {
		return fmt.Errorf("hlimit: reserve %s: %w", req.BankID, err)
	}
	h.log.InfoContext(ctx, "hlimit.refused", "txid", req.TxID, "bank_id", req.BankID,
		"currency", req.Currency, "requested", req.Amount, "available", limit-used)
	return domainerr.New("H_LIMIT_EXCEEDED", "H reservation exceeds h_limit",
		map[string]any{"txid": req.TxID, "bank_id": req.BankID, "currency": req.Currency,
			"requested": req.Amount, "available": limit - used, "h_limit": limit})
}

// ReleaseH releases one reservation inside tx: the reservation row is
// flipped with a guarded UPDATE (is_released = 0 -> 1), and only when that
// applied is the counter decreased, so a release is counted exactly once
// however many callers race it. It reports whether this call released it
// (false: it was already released). An unknown reservation is an
// INVARIANT_VIOLATION; so is a counter that would go negative.
func (h *H) ReleaseH(ctx context.Context, tx *store.Tx, reservationID string) (bool, error) {
	r, err := get(ctx, tx, reservationID)
	if errors.Is(err, sql.ErrNoRows) {
		return false, domainerr.New("INVARIANT_VIOLATION", "release of an unknown H reservation",
			map[string]any{"reservation_id": reservationID})
	}
	if err != nil {
		return false, err
	}
	return h.release(ctx, tx, r)
}

func (h *H) release(ctx context.Context, tx *store.Tx, r Reservation) (bool, error) {
	now := clock.Stamp(h.clk.Now())
	ok, err := store.Applied(tx.ExecContext(ctx,
		"UPDATE HReservations SET is_released = 1, released_at = ? WHERE reservation_id = ? AND is_released = 0",
		now, r.ID))
	if err != nil {
		return false, fmt.Errorf("hlimit: release %s: %w", r.ID, err)
	}
	if !ok {
		return false, nil
	}
	table, where, args := counter(r.BankID, r.Currency)
	ok, err = store.Applied(tx.ExecContext(ctx,
		"UPDATE "+table+" SET h_used = h_used - ? WHERE "+where+" AND h_used >= ?",
		append(append([]any{r.Amount}, args...), r.Amount)...))
	if err != nil {
		return false, fmt.Errorf("hlimit: release %s: %w", r.ID, err)
	}
	if !ok {
		return false, domainerr.New("INVARIANT_VIOLATION", "h_used is below an unreleased reservation",
			map[string]any{"reservation_id": r.ID, "bank_id": r.BankID, "currency": r.Currency, "amount": r.Amount})
	}
	h.log.DebugContext(ctx, "hlimit.released", "txid", r.TxID, "bank_id", r.BankID,
		"currency", r.Currency, "amount", r.Amount, "reservation_id", r.ID)
	return true, nil
}

// ReleaseForTx releases every unreleased reservation of txid inside the
// caller's transaction (a lane's cancel calls it after its state guard
// held) and returns the reservations this call released. Calling it again
// releases nothing.
func (h *H) ReleaseForTx(ctx context.Context, tx *store.Tx, txid string) ([]Reservation, error) {
	open, err := list(ctx, tx, "txid = ? AND is_released = 0", txid)
	if err != nil {
		return nil, err
	}
	var released []Reservation
	for _, r := range open {
		ok, err := h.release(ctx, tx, r)
		if err != nil {
			return nil, err
		}
		if ok {
			r.Released = true
			released = append(released, r)
		}
	}
	return released, nil
}

// Reservations returns every reservation of txid, oldest first.
func Reservations(ctx context.Context, tx *store.Tx, txid string) ([]Reservation, error) {
	return list(ctx, tx, "txid = ?", txid)
}

const columns = "reservation_id, txid, bank_id, currency, amount, mode, is_released, created_at, COALESCE(released_at, '')"

func scan(s interface{ Scan(...any) error }) (Reservation, error) {
	var r Reservation
	var released int
	err := s.Scan(&r.ID, &r.TxID, &r.BankID, &r.Currency, &r.Amount, &r.Mode, &released, &r.CreatedAt, &r.ReleasedAt)
	r.Released = released != 0
	return r, err
}

func get(ctx context.Context, tx *store.Tx, id string) (Reservation, error) {
	r, err := scan(tx.QueryRowContext(ctx, "SELECT "+columns+" FROM HReservations WHERE reservation_id = ?", id))
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("hlimit: read reservation %s: %w", id, err)
	}
	return r, err
}

func list(ctx context.Context, tx *store.Tx, where string, args ...any) ([]Reservation, error) {
	rows, err := tx.QueryContext(ctx, "SELECT "+columns+" FROM HReservations WHERE "+where+" ORDER BY created_at, reservation_id", args...)
	if err != nil {
		return nil, fmt.Errorf("hlimit: list reservations: %w", err)
	}
	defer rows.Close()
	var out []Reservation
	for rows.Next() {
		r, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("hlimit: list reservations: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("hlimit: list reservations: %w", err)
	}
	return out, nil
}

// Usage is a participant's H in one currency.
type Usage struct {
	Limit int64
	Used  int64
}

// Available is Limit - Used.
func (u Usage) Available() int64 { return u.Limit - u.Used }

// UsageOf reads bank's H limit and use in currency (empty: JPY). A
// currency with no limit row has zero limit.
func UsageOf(ctx context.Context, tx *store.Tx, bankID, currency string) (Usage, error) {
	if currency == "" {
		currency = JPY
	}
	table, where, args := counter(bankID, currency)
	var u Usage
	err := tx.QueryRowContext(ctx, "SELECT h_limit, h_used FROM "+table+" WHERE "+where, args...).Scan(&u.Limit, &u.Used)
	if errors.Is(err, sql.ErrNoRows) {
		if currency == JPY {
			return Usage{}, domainerr.New("PARTICIPANT_NOT_FOUND", "no participant "+bankID, map[string]any{"bank_id": bankID})
		}
		return Usage{}, nil
	}
	if err != nil {
		return Usage{}, fmt.Errorf("hlimit: usage of %s %s: %w", bankID, currency, err)
	}
	return u, nil
}

// ReserveDB is ReserveH in its own write transaction.
func (h *H) ReserveDB(ctx context.Context, db *store.DB, req ReserveRequest) (r Reservation, err error) {
	err = db.Write(ctx, func(tx *store.Tx) error {
		var e error
		r, e = h.ReserveH(ctx, tx, req)
		return e
	})
	return r, err
}

// ReleaseDB is ReleaseH in its own write transaction.
func (h *H) ReleaseDB(ctx context.Context, db *store.DB, reservationID string) (ok bool, err error) {
	err = db.Write(ctx, func(tx *store.Tx) error {
		var e error
		ok, e = h.ReleaseH(ctx, tx, reservationID)
		return e
	})
	return ok, err
}
