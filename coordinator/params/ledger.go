package params

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/readcache"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

// Value is a parameter as the ledger holds it now: its declaration, its
// current value, and the last change (empty and IsDefault when nobody
// changed it).
type Value struct {
	Def
	BankID      string `json:"bank_id,omitempty"` // a bank's value (Participants)
	Value       int64  `json:"value"`
	Display     string `json:"display"` // Value as Format writes it
	IsDefault   bool   `json:"is_default"`
	Version     int64  `json:"version"` // 0: never changed
	EvidenceRef string `json:"evidence_ref,omitempty"`
	Reason      string `json:"reason,omitempty"`
	ChangedBy   string `json:"changed_by,omitempty"`
	ChangedAt   string `json:"changed_at,omitempty"` // RFC3339 UTC
	LogID       string `json:"log_id,omitempty"`     // the change's GLOBAL-chain entry
}

// DefaultValue is d as nobody changed it (a per-bank-only parameter shows
// "per bank").
func DefaultValue(d Def) Value {
	v := Value{Def: d, Value: d.Default, IsDefault: true, Display: d.Format(d.Default)}
	if d.BankOnly {
		v.Display = "per bank"
	}
	return v
}

// ShowTx reads one parameter inside tx (read or write transaction), once
// per transaction: the value is remembered in the Tx memo (the Submits
// and decisions a group commit carries read it once), and Ledger.Set,
// the one writer of ParameterLedger, forgets it (forgetMemos).
func ShowTx(ctx context.Context, tx *store.Tx, name Name) (v Value, err error) {
	d, err := Lookup(name)
	if err != nil {
		return Value{}, err
	}
	v = DefaultValue(d)
	if d.BankOnly {
		return v, nil
	}
	if m, ok := tx.Memo(showMemo(name)); ok {
		return m.(Value), nil
	}
	defer func() {
		if err == nil {
			tx.SetMemo(showMemo(name), v)
		}
	}()
	err = tx.QueryRowContext(ctx, `SELECT value, version, evidence_ref, reason, changed_by, changed_at, log_id
		FROM ParameterLedger WHERE name = ?`, string(name)).
		Scan(&v.Value, &v.Version, &v.EvidenceRef, &v.Reason, &v.ChangedBy, &v.ChangedAt, &v.LogID)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return Value{}, fmt.Errorf("params: read %s: %w", name, err)
	default:
		v.IsDefault = false
	}
	v.Display = d.Format(v.Value)
	return v, nil
}

// ShowBankTx reads bankID's value of a per-bank parameter inside tx, from
// its Participants column (IsDefault: the column is NULL, shown "none").
// The change history is on the GLOBAL chain.
func ShowBankTx(ctx context.Context, tx *store.Tx, name Name, bankID string) (Value, error) {
	d, err := bankDef(name)
	if err != nil {
		return Value{}, err
	}
	var col sql.NullInt64
	// d.BankColumn is one of the registry's literal column names.
	err = tx.QueryRowContext(ctx, `SELECT `+d.BankColumn+` FROM Participants WHERE bank_id = ?`, bankID).Scan(&col)
	if errors.Is(err, sql.ErrNoRows) {
		return Value{}, domainerr.New("PARTICIPANT_NOT_FOUND", "no participant with this bank_id", map[string]any{"bank_id": bankID})
	}
	if err != nil {
		return Value{}, fmt.Errorf("params: read %s of %s: %w", name, bankID, err)
	}
	v := Value{Def: d, BankID: bankID, Value: col.Int64, IsDefault: !col.Valid, Display: d.Format(col.Int64)}
	if !col.Valid {
		v.Display = "none"
	}
	return v, nil
}

// ShowBank is ShowBankTx in its own read transaction.
func ShowBank(ctx context.Context, db *store.DB, name Name, bankID string) (v Value, err error) {
	err = db.Read(ctx, func(tx *store.Tx) error {
		v, err = ShowBankTx(ctx, tx, name, bankID)
		return err
	})
	return v, err
}

// ListBank reads every per-bank parameter of bankID, sorted by name.
func ListBank(ctx context.Context, db *store.DB, bankID string) (vs []Value, err error) {
	err = db.Read(ctx, func(tx *store.Tx) error {
		vs = nil
		for _, d := range Defs() {
			if d.BankColumn == "" {
				continue
			}
			v, err := ShowBankTx(ctx, tx, d.Name, bankID)
			if err != nil {
				return err
			}
			vs = append(vs, v)
		}
		return nil
	})
	return vs, err
}

func bankDef(name Name) (Def, error) {
	d, err := Lookup(name)
	if err != nil {
		return Def{}, err
	}
	if d.BankColumn == "" {
		return Def{}, domainerr.New("INVALID_REQUEST", string(name)+" has no per-bank value (omit bank_id)",
			map[string]any{"field": "bank_id", "parameter": string(name)})
	}
	return d, nil
}

// ChangedTx returns, in one statement, the value of every parameter an
// operator changed (a parameter absent from the map has its default), for
// a reader that needs several parameters at once.
func ChangedTx(ctx context.Context, tx *store.Tx) (map[Name]int64, error) {
	if m, ok := tx.Memo(changedMemo); ok {
		return maps.Clone(m.(map[Name]int64)), nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT name, value FROM ParameterLedger`)
	if err != nil {
		return nil, fmt.Errorf("params: read the ledger: %w", err)
	}
	defer rows.Close()
	out := map[Name]int64{}
	for rows.Next() {
		var n string
		var v int64
		if err := rows.Scan(&n, &v); err != nil {
			return nil, fmt.Errorf("params: read the ledger: %w", err)
		}
		out[Name(n)] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("params: read the ledger: %w", err)
	}
	tx.SetMemo(changedMemo, maps.Clone(out))
	return out, nil
}

// The Tx memo keys of what ShowTx and ChangedTx read (once per
// transaction).
const changedMemo = "params.changed"

func showMemo(name Name) string { return "params.show:" + string(name) }

// forgetMemos drops what this transaction remembered of name: it was just
// written (a neighbour in the same group commit may have read it before).
func forgetMemos(tx *store.Tx, name Name) {
	tx.Forget(changedMemo)
	tx.Forget(showMemo(name))
}

// GetTx is the current value of name inside tx: the ledger's, or the
// default when nobody changed it.
func GetTx(ctx context.Context, tx *store.Tx, name Name) (int64, error) {
	v, err := ShowTx(ctx, tx, name)
	return v.Value, err
}

// DurationTx is GetTx of a duration parameter.
func DurationTx(ctx context.Context, tx *store.Tx, name Name) (time.Duration, error) {
	v, err := GetTx(ctx, tx, name)
	return time.Duration(v) * time.Second, err
}

// Get is GetTx in its own read transaction.
func Get(ctx context.Context, db *store.DB, name Name) (v int64, err error) {
	err = db.Read(ctx, func(tx *store.Tx) error {
		v, err = GetTx(ctx, tx, name)
		return err
	})
	return v, err
}

// Duration is DurationTx in its own read transaction.
func Duration(ctx context.Context, db *store.DB, name Name) (time.Duration, error) {
	v, err := Get(ctx, db, name)
	return time.Duration(v) * time.Second, err
}

// Show is ShowTx in its own read transaction.
func Show(ctx context.Context, db *store.DB, name Name) (v Value, err error) {
	err = db.Read(ctx, func(tx *store.Tx) error {
		v, err = ShowTx(ctx, tx, name)
		return err
	})
	return v, err
}

// ListTx reads every declared parameter inside tx, sorted by name.
func ListTx(ctx context.Context, tx *store.Tx) ([]Value, error) {
	var out []Value
	for _, d := range Defs() {
		v, err := ShowTx(ctx, tx, d.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// List is ListTx in its own read transaction.
func List(ctx context.Context, db *store.DB) (vs []Value, err error) {
	err = db.Read(ctx, func(tx *store.Tx) error {
		vs, err = ListTx(ctx, tx)
		return err
	})
	return vs, err
}

// Source reads parameters at use time for a component that holds no
// transaction of its own (coordinator/signing). *Reader is one.
type Source interface {
	Duration(ctx context.Context, name Name) (time.Duration, error)
}

// Reader is the Source over a coordinator database.
type Reader struct{ DB *store.DB }

// Duration reads a duration parameter in its own read transaction, or
// from memory when it was read since the last Ledger change on the same
// database (durationCache).
func (r Reader) Duration(ctx context.Context, name Name) (time.Duration, error) {
	if d, ok := durationCache.Get(r.DB, name); ok {
		return d, nil
	}
	gen := durationCache.Gen(r.DB)
	d, err := Duration(ctx, r.DB, name)
	if err == nil {
		durationCache.Put(r.DB, name, d, gen)
	}
	return d, err
}

// durationCache holds what Reader.Duration read, per coordinator database
// (readcache: exact because Ledger.Set and setBank are the only writers
// of ParameterLedger and drop it after every change; off on PostgreSQL).
// The signature verifier reads PR-SIGNATURE-SKEW on every signed request.
var durationCache = readcache.New[Name, time.Duration]()

// Change is one operator change: the parameter moves from Old (which must
// still be its current value) to New.
type Change struct {
	Name Name `json:"name"`
	// BankID, when set, changes that bank's value of a per-bank parameter
	// (Def.BankColumn; 0 is none for a Nullable one).
	BankID      string `json:"bank_id,omitempty"`
	Old         int64  `json:"old"`
	New         int64  `json:"new"`
	EvidenceRef string `json:"evidence_ref"`
	Reason      string `json:"reason"`
	By          string `json:"by"`
}

// Result is Set's answer: whether the value moved (false: New was already
// the value, nothing was written) and the parameter after the change.
type Result struct {
	Changed bool  `json:"changed"`
	Value   Value `json:"parameter"`
}

// Ledger changes parameters. The zero value is not usable; use NewLedger.
type Ledger struct {
	db     *store.DB
	log    *finality.Log
	clock  clock.Clock
	logger *slog.Logger
	lease  time.Duration
}

// NewLedger returns the Ledger of db appending to log. lease is the
// longest work-item lease of the orchestrators reading the timeouts
// (<= 0: DefaultLease); a timeout that races it must stay longer. clk nil
// means the system clock, logger nil discards.
func NewLedger(db *store.DB, log *finality.Log, clk clock.Clock, logger *slog.Logger, lease time.Duration) *Ledger {
	if clk == nil {
		clk = clock.System{}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if lease <= 0 {
		lease = DefaultLease
	}
	return &Ledger{db: db, log: log, clock: clk, logger: logger, lease: lease}
}

// maxTextLen bounds evidence_ref, reason and the operator id.
const maxTextLen = 500

// check refuses a change before any transaction: unknown parameter
// (NOT_FOUND), no operator or reason (MISSING_FIELD), no evidence_ref
// (EVIDENCE_REQUIRED), a value outside the bounds or a timeout not longer
// than the lease (INVALID_REQUEST).
func (l *Ledger) check(c Change) (Def, error) {
	d, err := Lookup(c.Name)
	if err != nil {
		return Def{}, err
	}
	for _, f := range []struct{ name, v string }{{"by", c.By}, {"evidence_ref", c.EvidenceRef}, {"reason", c.Reason}} {
		switch {
		case strings.TrimSpace(f.v) == "" && f.name == "evidence_ref":
			return Def{}, domainerr.New("EVIDENCE_REQUIRED", string(c.Name)+": a parameter change needs its evidence_ref (spec 002 §12.7)",
				map[string]any{"field": "evidence_ref", "parameter": string(c.Name)})
		case strings.TrimSpace(f.v) == "":
			return Def{}, domainerr.New("MISSING_FIELD", string(c.Name)+": a parameter change needs "+f.name,
				map[string]any{"field": f.name, "parameter": string(c.Name)})
		case len(f.v) > maxTextLen:
			return Def{}, domainerr.New("INVALID_REQUEST", fmt.Sprintf("%s: %s is longer than %d bytes", c.Name, f.name, maxTextLen),
				map[string]any{"field": f.name, "parameter": string(c.Name)})
		}
	}
	switch {
	case c.BankID != "":
		if d, err = bankDef(c.Name); err != nil {
			return Def{}, err
		}
		if err := d.CheckBank(c.New); err != nil {
			return Def{}, err
		}
		return d, nil
	case d.BankOnly:
		return Def{}, domainerr.New("MISSING_FIELD", string(c.Name)+" exists per bank only: give bank_id",
			map[string]any{"field": "bank_id", "parameter": string(c.Name)})
	}
	if err := d.Check(c.New); err != nil {
		return Def{}, err
	}
	if d.RacesLease && time.Duration(c.New)*time.Second <= l.lease {
		return Def{}, domainerr.New("INVALID_REQUEST",
			fmt.Sprintf("%s: %s would not be longer than the orchestrator's work-item lease %s (the lease must be shorter than every timeout it races)",
				c.Name, d.Format(c.New), l.lease),
			map[string]any{"field": "value", "parameter": string(c.Name), "value": c.New, "lease_seconds": int64(l.lease / time.Second), "rule": "lease < timeout"})
	}
	return d, nil
}

// Set applies c: a guarded update that succeeds only while c.Old is the
// current value (otherwise CONCURRENCY_CONFLICT naming the current value),
// refused in a read-only mode, with its ParameterChanged entry on the
// GLOBAL chain in the same transaction. A change to the current value
// writes nothing (Changed false).
func (l *Ledger) Set(ctx context.Context, c Change) (Result, error) {
	c.By, c.EvidenceRef, c.Reason = strings.TrimSpace(c.By), strings.TrimSpace(c.EvidenceRef), strings.TrimSpace(c.Reason)
	d, err := l.check(c)
	if err != nil {
		return Result{}, err
	}
	if c.BankID != "" {
		return l.setBank(ctx, d, c)
	}
	var res Result
	defer durationCache.Invalidate(l.db)
	err = l.db.Write(ctx, func(tx *store.Tx) error {
		if err := (sysmode.Gate{}).CheckWritable(ctx, tx); err != nil {
			return err
		}
		cur, err := ShowTx(ctx, tx, c.Name)
		if err != nil {
			return err
		}
		if cur.Value != c.Old {
			return domainerr.New("CONCURRENCY_CONFLICT", fmt.Sprintf("%s is %s, not %s: it changed since it was read", c.Name, cur.Display, d.Format(c.Old)),
				map[string]any{"parameter": string(c.Name), "current": cur.Value, "expected": c.Old, "version": cur.Version})
		}
		if c.New == c.Old {
			res = Result{Value: cur}
			return nil
		}
		now := clock.Stamp(l.clock.Now())
		var ok bool
		if cur.IsDefault {
			ok, err = store.Applied(tx.ExecContext(ctx, `INSERT INTO ParameterLedger
				(name, value, version, evidence_ref, reason, changed_by, changed_at, log_id) VALUES (?, ?, 1, ?, ?, ?, ?, '')
				ON CONFLICT(name) DO NOTHING`, string(c.Name), c.New, c.EvidenceRef, c.Reason, c.By, now))
		} else {
			ok, err = store.Applied(tx.ExecContext(ctx, `UPDATE ParameterLedger
				SET value = ?, version = version + 1, evidence_ref = ?, reason = ?, changed_by = ?, changed_at = ?, log_id = ''
				WHERE name = ? AND value = ? AND version = ?`,
				c.New, c.EvidenceRef, c.Reason, c.By, now, string(c.Name), c.Old, cur.Version))
		}
		forgetMemos(tx, c.Name)
		if err != nil {
			return fmt.Errorf("params: write %s: %w", c.Name, err)
		}
		if !ok {
			return domainerr.New("CONCURRENCY_CONFLICT", string(c.Name)+" changed concurrently", map[string]any{"parameter": string(c.Name)})
		}
		e, err := l.log.Append(ctx, tx, finality.Event{Type: finality.ParameterChanged,
			StateFrom: string(c.Name) + "=" + d.Format(c.Old), StateTo: string(c.Name) + "=" + d.Format(c.New),
			Payload: map[string]any{"parameter": string(c.Name), "unit": d.Unit, "old": c.Old, "new": c.New,
				"evidence_ref": c.EvidenceRef, "reason": c.Reason, "actor": c.By, "version": cur.Version + 1}})
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE ParameterLedger SET log_id = ? WHERE name = ?`, e.LogID, string(c.Name)); err != nil {
			return fmt.Errorf("params: record the chain entry of %s: %w", c.Name, err)
		}
		forgetMemos(tx, c.Name)
		v, err := ShowTx(ctx, tx, c.Name)
		res = Result{Changed: true, Value: v}
		return err
	})
	if err != nil {
		return Result{}, err
	}
	if res.Changed {
		l.logger.Info("params.changed", "parameter", string(c.Name), "old", c.Old, "new", c.New,
			"evidence_ref", c.EvidenceRef, "actor", c.By, "reason", c.Reason, "log_id", res.Value.LogID)
	}
	return res, nil
}

// setBank is Set of a bank's value: a guarded update of its Participants
// column (the value the operator read must still be there) with the
// ParameterChanged entry, naming the bank, in the same transaction.
func (l *Ledger) setBank(ctx context.Context, d Def, c Change) (Result, error) {
	var res Result
	defer durationCache.Invalidate(l.db)
	err := l.db.Write(ctx, func(tx *store.Tx) error {
		if err := (sysmode.Gate{}).CheckWritable(ctx, tx); err != nil {
			return err
		}
		cur, err := ShowBankTx(ctx, tx, c.Name, c.BankID)
		if err != nil {
			return err
		}
		if cur.Value != c.Old {
			return domainerr.New("CONCURRENCY_CONFLICT", fmt.Sprintf("%s of %s is %s, not %s: it changed since it was read", c.Name, c.BankID, cur.Display, d.FormatBank(c.Old)),
				map[string]any{"parameter": string(c.Name), "bank_id": c.BankID, "current": cur.Value, "expected": c.Old})
		}
		if c.New == c.Old {
			res = Result{Value: cur}
			return nil
		}
		nullable := func(v int64) any {
			if d.Nullable && v == 0 {
				return nil
			}
			return v
		}
		// d.BankColumn is one of the registry's literal column names.
		ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE Participants SET `+d.BankColumn+` = ? WHERE bank_id = ? AND `+d.BankColumn+` IS ?`,
			nullable(c.New), c.BankID, nullable(c.Old)))
		if err != nil {
			return fmt.Errorf("params: write %s of %s: %w", c.Name, c.BankID, err)
		}
		if !ok {
			return domainerr.New("CONCURRENCY_CONFLICT", string(c.Name)+" of "+c.BankID+" changed concurrently",
				map[string]any{"parameter": string(c.Name), "bank_id": c.BankID})
		}
		scope := string(c.Name) + "[" + c.BankID + "]"
		e, err := l.log.Append(ctx, tx, finality.Event{Type: finality.ParameterChanged,
			StateFrom: scope + "=" + d.FormatBank(c.Old), StateTo: scope + "=" + d.FormatBank(c.New),
			Payload: map[string]any{"parameter": string(c.Name), "bank_id": c.BankID, "unit": d.Unit, "old": nullable(c.Old), "new": nullable(c.New),
				"evidence_ref": c.EvidenceRef, "reason": c.Reason, "actor": c.By}})
		if err != nil {
			return err
		}
		v, err := ShowBankTx(ctx, tx, c.Name, c.BankID)
		v.EvidenceRef, v.Reason, v.ChangedBy, v.ChangedAt, v.LogID = c.EvidenceRef, c.Reason, c.By, e.OccurredAt, e.LogID
		res = Result{Changed: true, Value: v}
		return err
	})
	if err != nil {
		return Result{}, err
	}
	if res.Changed {
		l.logger.Info("params.changed", "parameter", string(c.Name), "bank_id", c.BankID, "old", c.Old, "new", c.New,
			"evidence_ref", c.EvidenceRef, "actor", c.By, "reason", c.Reason, "log_id", res.Value.LogID)
	}
	return res, nil
}

// FormatBank is Format with "none" for a nullable bank value of 0.
func (d Def) FormatBank(v int64) string {
	if d.Nullable && v == 0 {
		return "none"
	}
	return d.Format(v)
}
