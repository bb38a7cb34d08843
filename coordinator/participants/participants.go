package participants

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/ident"
	"github.com/zcgw/zcgw/coordinator/params"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

// Participation modes (Participants.participation_mode).
const (
	ModeFull        = "FULL"
	ModeReceiveOnly = "RECEIVE_ONLY"
	ModeSendOnly    = "SEND_ONLY"
)

// DefaultHVThreshold is PR-HV-THRESHOLD's default (spec 003 Participants,
// 002 §12.9): 100,000,000 JPY. A transfer strictly above the payer's
// threshold escalates to HIGH_VALUE. The value in force is the parameter
// ledger's (coordinator/params); a participant's hv_threshold overrides it.
const DefaultHVThreshold = params.DefaultHVThreshold

// Participant is one Participants row as administered here (h_used and the
// daily total are read-only here).
type Participant struct {
	BankID            string `json:"bank_id"`
	BankName          string `json:"bank_name"`
	IngressBaseURL    string `json:"ingress_base_url"` // "" means "/bank/{bank_id}"
	HLimit            int64  `json:"h_limit"`
	HUsed             int64  `json:"h_used"` // read-only
	IsActive          bool   `json:"is_active"`
	ParticipationMode string `json:"participation_mode"` // FULL (default) | RECEIVE_ONLY | SEND_ONLY
	TxAmountLimit     *int64 `json:"tx_amount_limit"`    // nil: no per-transfer limit
	DailyAmountLimit  *int64 `json:"daily_amount_limit"` // nil: no daily limit
	DailyAmountUsed   int64  `json:"daily_amount_used"`  // read-only
	HVThreshold       *int64 `json:"hv_threshold"`       // nil: DefaultHVThreshold
	// WindowStart/WindowEnd are the operating window, 'HH:MM' JST; both
	// empty means always open.
	WindowStart  string `json:"operating_window_start,omitempty"`
	WindowEnd    string `json:"operating_window_end,omitempty"`
	RegisteredAt string `json:"registered_at"`
}

// EffectiveHVThreshold is the participant's hv_threshold, or
// DefaultHVThreshold when it has none.
func (p Participant) EffectiveHVThreshold() int64 { return p.HVThresholdOr(DefaultHVThreshold) }

// HVThresholdOr is the participant's hv_threshold, or fallback (the
// PR-HV-THRESHOLD in force) when it has none.
func (p Participant) HVThresholdOr(fallback int64) int64 {
	if p.HVThreshold != nil {
		return *p.HVThreshold
	}
	return fallback
}

// WindowOpen reports whether the operating window is open at t (JST
// minutes of day). No window, or start == end, is always open; start > end
// wraps past midnight; the window is [start, end).
func (p Participant) WindowOpen(t time.Time) bool {
	if p.WindowStart == "" && p.WindowEnd == "" {
		return true
	}
	s, err1 := ParseHHMM(p.WindowStart)
	e, err2 := ParseHHMM(p.WindowEnd)
	if err1 != nil || err2 != nil || s == e {
		return true
	}
	m := clock.MinutesOfDay(t)
	if s < e {
		return m >= s && m < e
	}
	return m >= s || m < e
}

// NextWindowOpen returns the first instant at or after t when the window is
// open (t itself when it is open now).
func (p Participant) NextWindowOpen(t time.Time) time.Time {
	if p.WindowOpen(t) {
		return t
	}
	s, _ := ParseHHMM(p.WindowStart)
	jt := t.In(clock.JST)
	open := time.Date(jt.Year(), jt.Month(), jt.Day(), s/60, s%60, 0, 0, clock.JST)
	if !open.After(t) {
		open = open.Add(24 * time.Hour)
	}
	return open
}

// ParseHHMM parses 'HH:MM' (00:00-23:59) into minutes of day.
func ParseHHMM(s string) (int, error) {
	h, m, ok := strings.Cut(s, ":")
	if !ok || len(h) != 2 || len(m) != 2 {
		return 0, fmt.Errorf("operating window %q: want HH:MM", s)
	}
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil || hh < 0 || hh > 23 || mm < 0 || mm > 59 {
		return 0, fmt.Errorf("operating window %q: want HH:MM in 00:00-23:59", s)
	}
	return hh*60 + mm, nil
}

func invalid(field, msg string, v any) error {
	return domainerr.New("INVALID_REQUEST", "participant: "+field+": "+msg, map[string]any{"field": field, "value": v})
}

// Validate checks a participant before it is stored.
func (p Participant) Validate() error {
	if p.BankID == "" {
		return domainerr.New("MISSING_FIELD", "participant: bank_id is required", map[string]any{"field": "bank_id"})
	}
	if err := ident.Check(ident.BankID, "bank_id", p.BankID); err != nil {
		return err
	}
	if p.BankName == "" {
		return domainerr.New("MISSING_FIELD", "participant: bank_name is required", map[string]any{"field": "bank_name"})
	}
	switch p.ParticipationMode {
	case "", ModeFull, ModeReceiveOnly, ModeSendOnly:
	default:
		return invalid("participation_mode", "want FULL, RECEIVE_ONLY or SEND_ONLY", p.ParticipationMode)
	}
	if p.HLimit < 0 {
		return invalid("h_limit", "must not be negative", p.HLimit)
	}
	for _, l := range []struct {
		f string
		v *int64
	}{{"tx_amount_limit", p.TxAmountLimit}, {"daily_amount_limit", p.DailyAmountLimit}, {"hv_threshold", p.HVThreshold}} {
		if l.v != nil && *l.v <= 0 {
			return invalid(l.f, "must be positive (omit it for no limit)", *l.v)
		}
	}
	if (p.WindowStart == "") != (p.WindowEnd == "") {
		return invalid("operating_window", "give both start and end, or neither", p.WindowStart+"-"+p.WindowEnd)
	}
	if p.WindowStart != "" {
		if _, err := ParseHHMM(p.WindowStart); err != nil {
			return invalid("operating_window_start", err.Error(), p.WindowStart)
		}
		if _, err := ParseHHMM(p.WindowEnd); err != nil {
			return invalid("operating_window_end", err.Error(), p.WindowEnd)
		}
	}
	return nil
}

// Registry administers participants with an injected clock.
type Registry struct {
	db  *store.DB
	clk clock.Clock
}

// New returns a Registry on the coordinator database; clk nil means the
// system clock.
func New(db *store.DB, clk clock.Clock) *Registry {
	if clk == nil {
		clk = clock.System{}
	}
	return &Registry{db: db, clk: clk}
}

func nullInt(v *int64) any {
	if v == nil {
		return nil
	}
	return *v
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Create registers a new participant. An existing bank_id is
// INVALID_REQUEST (use Update). Returns the row as stored.
func (r *Registry) Create(ctx context.Context, p Participant) (Participant, error) {
	if err := p.Validate(); err != nil {
		return Participant{}, err
	}
	if p.ParticipationMode == "" {
		p.ParticipationMode = ModeFull
	}
	if p.IngressBaseURL == "" {
		p.IngressBaseURL = "/bank/" + p.BankID
	}
	var out Participant
	err := r.db.Write(ctx, func(tx *store.Tx) error {
		if err := (sysmode.Gate{}).CheckWritable(ctx, tx); err != nil {
			return err
		}
		ok, err := store.Insert(ctx, tx, "Participants", []string{"bank_id", "bank_name", "ingress_base_url", "h_limit",
			"is_active", "registered_at", "participation_mode", "tx_amount_limit", "daily_amount_limit", "hv_threshold",
			"operating_window_start", "operating_window_end"},
			p.BankID, p.BankName, p.IngressBaseURL, p.HLimit, boolInt(p.IsActive), clock.Stamp(r.clk.Now()), p.ParticipationMode,
			nullInt(p.TxAmountLimit), nullInt(p.DailyAmountLimit), nullInt(p.HVThreshold), nullStr(p.WindowStart), nullStr(p.WindowEnd))
		if err != nil {
			return fmt.Errorf("participants: create %s: %w", p.BankID, err)
		}
		if !ok {
			return domainerr.New("INVALID_REQUEST", "participant already exists (update it instead)", map[string]any{"bank_id": p.BankID})
		}
		out, err = GetInTx(ctx, tx, p.BankID)
		return err
	})
	return out, err
}

// Update replaces the administered fields of an existing participant
// (everything but h_used, the daily total and registered_at).
func (r *Registry) Update(ctx context.Context, p Participant) (Participant, error) {
	return r.update(ctx, p, false)
}

func eqInt(a, b *int64) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }

// limitsUnchanged refuses p when a limit differs from cur's.
func limitsUnchanged(cur, p Participant) error {
	for _, l := range []struct {
		field, param string
		same         bool
	}{
		{"h_limit", string(params.HLimit), cur.HLimit == p.HLimit},
		{"tx_amount_limit", string(params.TxAmountLimit), eqInt(cur.TxAmountLimit, p.TxAmountLimit)},
		{"daily_amount_limit", string(params.DailyAmountLimit), eqInt(cur.DailyAmountLimit, p.DailyAmountLimit)},
		{"hv_threshold", string(params.HVThreshold), eqInt(cur.HVThreshold, p.HVThreshold)},
	} {
		if !l.same {
			return domainerr.New("INVALID_REQUEST", "participant: "+l.field+" is the PR-* value "+l.param+
				": change it through the parameter ledger (POST /internal/params/"+l.param+" with bank_id and evidence_ref; zcgw params set --bank)",
				map[string]any{"field": l.field, "parameter": l.param, "bank_id": p.BankID})
		}
	}
	return nil
}

func (r *Registry) update(ctx context.Context, p Participant, keepLimits bool) (Participant, error) {
	if err := p.Validate(); err != nil {
		return Participant{}, err
	}
	if p.ParticipationMode == "" {
		p.ParticipationMode = ModeFull
	}
	if p.IngressBaseURL == "" {
		p.IngressBaseURL = "/bank/" + p.BankID
	}
	var out Participant
	err := r.db.Write(ctx, func(tx *store.Tx) error {
		if err := (sysmode.Gate{}).CheckWritable(ctx, tx); err != nil {
			return err
		}
		if keepLimits {
			cur, err := GetInTx(ctx, tx, p.BankID)
			if err != nil {
				return err
			}
			if err := limitsUnchanged(cur, p); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `UPDATE Participants SET bank_name = ?, ingress_base_url = ?, h_limit = ?, is_active = ?,
			participation_mode = ?, tx_amount_limit = ?, daily_amount_limit = ?, hv_threshold = ?,
			operating_window_start = ?, operating_window_end = ? WHERE bank_id = ?`,
			p.BankName, p.IngressBaseURL, p.HLimit, boolInt(p.IsActive), p.ParticipationMode, nullInt(p.TxAmountLimit),
			nullInt(p.DailyAmountLimit), nullInt(p.HVThreshold), nullStr(p.WindowStart), nullStr(p.WindowEnd), p.BankID)
		ok, err := store.Applied(res, err)
		if err != nil {
			return fmt.Errorf("participants: update %s: %w", p.BankID, err)
		}
		if !ok {
			return notFound(p.BankID)
		}
		out, err = GetInTx(ctx, tx, p.BankID)
		return err
	})
	return out, err
}

// UpdateProfile is the operator's update through the API: Update, except
// that the limits (h_limit, tx_amount_limit, daily_amount_limit,
// hv_threshold) are PR-* values that change only through the parameter
// ledger (coordinator/params, with evidence_ref). A body whose limits
// differ from the stored ones is refused (INVALID_REQUEST naming the field
// and its parameter); the comparison and the update are one transaction,
// so a limit changed meanwhile is never overwritten.
func (r *Registry) UpdateProfile(ctx context.Context, p Participant) (Participant, error) {
	return r.update(ctx, p, true)
}

// Get reads one participant; a missing one is PARTICIPANT_NOT_FOUND.
func (r *Registry) Get(ctx context.Context, bankID string) (p Participant, err error) {
	err = r.db.Read(ctx, func(tx *store.Tx) error {
		p, err = GetInTx(ctx, tx, bankID)
		return err
	})
	return p, err
}

// List reads every participant, by bank_id.
func (r *Registry) List(ctx context.Context) (out []Participant, err error) {
	err = r.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, selectCols+` ORDER BY bank_id`)
		if err != nil {
			return fmt.Errorf("participants: list: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			p, err := scan(rows)
			if err != nil {
				return err
			}
			out = append(out, p)
		}
		return rows.Err()
	})
	return out, err
}

func notFound(bankID string) error {
	return domainerr.New("PARTICIPANT_NOT_FOUND", "no participant with this bank_id", map[string]any{"bank_id": bankID})
}

const selectCols = `SELECT bank_id, bank_name, ingress_base_url, h_limit, h_used, is_active, participation_mode,
	tx_amount_limit, daily_amount_limit, daily_amount_used, hv_threshold, operating_window_start, operating_window_end,
	registered_at FROM Participants`

type scanner interface{ Scan(...any) error }

func scan(s scanner) (Participant, error) {
	var p Participant
	var active int
	var tl, dl, hv sql.NullInt64
	var ws, we sql.NullString
	if err := s.Scan(&p.BankID, &p.BankName, &p.IngressBaseURL, &p.HLimit, &p.HUsed, &active, &p.ParticipationMode,
		&tl, &dl, &p.DailyAmountUsed, &hv, &ws, &we, &p.RegisteredAt); err != nil {
		return p, err
	}
	p.IsActive = active == 1
	p.TxAmountLimit, p.DailyAmountLimit, p.HVThreshold = ptr(tl), ptr(dl), ptr(hv)
	p.WindowStart, p.WindowEnd = ws.String, we.String
	return p, nil
}

func ptr(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	v := n.Int64
	return &v
}

// GetInTx reads one participant inside tx; a missing one is
// PARTICIPANT_NOT_FOUND.
func GetInTx(ctx context.Context, tx *store.Tx, bankID string) (Participant, error) {
	p, err := scan(tx.QueryRowContext(ctx, selectCols+` WHERE bank_id = ?`, bankID))
	if errors.Is(err, sql.ErrNoRows) {
		return p, notFound(bankID)
	}
	if err != nil {
		return p, fmt.Errorf("participants: read %s: %w", bankID, err)
	}
	return p, nil
}
