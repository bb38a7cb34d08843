package lane

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// WritableGate refuses writes while the system is read-only;
// sysmode.Gate implements it.
type WritableGate interface {
	CheckWritable(ctx context.Context, tx *store.Tx) error
}

// SideUpdates runs the caller's own writes inside the primitive's
// transaction, after the CAS applied and the FinalityLog entry was
// appended. An error rolls back everything, CAS and entry included.
type SideUpdates func(ctx context.Context, tx *store.Tx) error

// Lanes runs the lane primitives against one coordinator database.
type Lanes struct {
	db     *store.DB
	log    *finality.Log
	gate   WritableGate
	clock  clock.Clock
	logger *slog.Logger

	// afterCAS is a fault-injection point for tests: called right after a
	// CAS applied and before the FinalityLog append.
	afterCAS func(ctx context.Context, tx *store.Tx, txid string) error
}

// New returns the primitives. gate must not be nil (use sysmode.Gate{});
// clk nil means the system clock; logger nil discards.
func New(db *store.DB, log *finality.Log, gate WritableGate, clk clock.Clock, logger *slog.Logger) *Lanes {
	if gate == nil {
		panic("lane.New: nil WritableGate: every primitive must pass the writable gate")
	}
	if clk == nil {
		clk = clock.System{}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Lanes{db: db, log: log, gate: gate, clock: clk, logger: logger}
}

// DB is the database the primitives write to (for batching callers:
// l.DB().Write(ctx, func(tx) { l.TransitionInTx(ctx, tx, ...) ... })).
func (l *Lanes) DB() *store.DB { return l.db }

// row is the guarded part of a Transactions row.
type row struct {
	State   TxState
	Version int64
	Owner   string
}

// readRow reads the row a primitive is about to move, locking it on
// PostgreSQL (tx.ForUpdate): another node's uncommitted move is waited
// for, so a primitive that does not apply reports where the row really
// is (SQLite's write transaction is exclusive already).
func readRow(ctx context.Context, tx *store.Tx, txid string) (row, error) {
	var r row
	var state string
	err := tx.QueryRowContext(ctx, "SELECT state, version, owner FROM Transactions WHERE txid = ?"+tx.ForUpdate(), txid).Scan(&state, &r.Version, &r.Owner)
	if errors.Is(err, sql.ErrNoRows) {
		return row{}, domainerr.New("TX_NOT_FOUND", "transaction not found", map[string]any{"txid": txid})
	}
	if err != nil {
		return row{}, fmt.Errorf("lane: read %s: %w", txid, err)
	}
	r.State = TxState(state)
	return r, nil
}

// rowMemo is the Tx memo key of the hint a transaction holds for txid's
// guarded columns: the row as this transaction's last CAS on it left it
// (casUpdate.run), or as its caller read it just before (HintRow).
func rowMemo(txid string) string { return "lane.row:" + txid }

// HintRow gives the primitives of tx the guarded columns of txid's row as
// the caller last read them (a drive step that loaded the row on a read
// snapshot), so the first primitive of tx on it need not read it again.
// A hint is never trusted: casGuarded decides every refusal and every
// not-applied on a row it read, and moves the row only by a CAS guarded
// by state, version and owner, so a stale hint costs a read and nothing
// else.
func HintRow(tx *store.Tx, txid string, state TxState, version int64, owner string) {
	tx.SetMemo(rowMemo(txid), row{State: state, Version: version, Owner: owner})
}

// casGuarded moves txid's row by the CAS build makes from it, if check
// lets it. The row is the transaction's hint for txid when it has one
// (rowMemo), else read (readRow, locked on PostgreSQL). A hint that check
// refuses, or whose CAS does not apply, is dropped and the row read and
// decided again: so cur is a read row whenever ok is false, and
// PreviousState, ownership and not-applied answers are what they were
// when every primitive read first. err is a read or CAS error.
func casGuarded(ctx context.Context, tx *store.Tx, txid string, check func(cur row) bool, build func(cur row) casUpdate) (cur row, ok bool, err error) {
	hinted := false
	if v, have := tx.Memo(rowMemo(txid)); have {
		cur, hinted = v.(row), true
	}
	for {
		if !hinted {
			if cur, err = readRow(ctx, tx, txid); err != nil {
				return row{}, false, err
			}
		}
		if !check(cur) {
			if hinted {
				hinted = false
				continue
			}
			return cur, false, nil
		}
		ok, err := build(cur).run(ctx, tx)
		if err != nil {
			return cur, false, err
		}
		if !ok && hinted {
			hinted = false
			continue
		}
		return cur, ok, nil
	}
}

func (l *Lanes) now() string { return clock.Stamp(l.clock.Now()) }

func (l *Lanes) fault(ctx context.Context, tx *store.Tx, txid string) error {
	if l.afterCAS != nil {
		return l.afterCAS(ctx, tx, txid)
	}
	return nil
}

// guardedColumns can only be written by the primitives themselves.
var guardedColumns = map[string]bool{
	"txid": true, "state": true, "owner": true, "version": true,
	"created_at": true, "updated_at": true, "pending_since": true,
}

// settableColumns are the Transactions columns callers may set through
// SetColumns / ExtraColumns.
var settableColumns = map[string]bool{
	"amount_currency": true, "payee_account_hash": true, "pspr_ref": true, "purpose": true,
	"schema_version": true, "h_reservation_id": true, "decision_proof_ref": true,
	"finality_log_ref": true, "payer_bank_proof_ref": true, "payee_bank_proof_ref": true,
	"reason_code": true, "case_id": true, "dns_cycle_id": true, "expires_at": true,
	"external_settlement_status": true, "verification_id": true, "edi_ref": true,
	"fatf_data_json": true, "is_cross_border": true, "fatf16_applicable": true,
	"mandate_id": true, "pending_request_json": true,
}

// checkColumns refuses guarded or unknown column names (names are spliced
// into SQL, so only known names may pass) and returns them sorted.
func checkColumns(cols map[string]any) ([]string, error) {
	names := make([]string, 0, len(cols))
	for c := range cols {
		if guardedColumns[c] {
			return nil, domainerr.New("INVALID_REQUEST", "column is written only by the lane primitive itself", map[string]any{"column": c})
		}
		if !settableColumns[c] {
			return nil, domainerr.New("INVALID_REQUEST", "unknown Transactions column", map[string]any{"column": c})
		}
		names = append(names, c)
	}
	sort.Strings(names)
	return names, nil
}

// casUpdate builds and runs the guarded UPDATE: sets state (and owner,
// reason_code, extra columns), bumps version, and applies only if state,
// version and owner are still what was read.
type casUpdate struct {
	txid      string
	from      row
	to        TxState
	newOwner  string // "" keeps the owner
	setCols   map[string]any
	pending   bool // restart the pending_since timer
	updatedAt string
}

func (u casUpdate) run(ctx context.Context, tx *store.Tx) (bool, error) {
	names, err := checkColumns(u.setCols)
	if err != nil {
		return false, err
	}
	var b strings.Builder
	args := []any{}
	b.WriteString("UPDATE Transactions SET state = ?, version = version + 1, updated_at = ?")
	args = append(args, string(u.to), u.updatedAt)
	if u.pending {
		b.WriteString(", pending_since = ?")
		args = append(args, u.updatedAt)
	}
	if u.newOwner != "" {
		b.WriteString(", owner = ?")
		args = append(args, u.newOwner)
	}
	for _, c := range names {
		b.WriteString(", " + c + " = ?")
		args = append(args, u.setCols[c])
	}
	b.WriteString(" WHERE txid = ? AND state = ? AND version = ? AND owner = ?")
	args = append(args, u.txid, string(u.from.State), u.from.Version, u.from.Owner)
	ok, err := store.Applied(tx.ExecContext(ctx, b.String(), args...))
	if err != nil {
		tx.Forget(rowMemo(u.txid))
		return false, fmt.Errorf("lane: CAS %s %s->%s: %w", u.txid, u.from.State, u.to, err)
	}
	if !ok {
		tx.Forget(rowMemo(u.txid))
		return false, nil
	}
	owner := u.from.Owner
	if u.newOwner != "" {
		owner = u.newOwner
	}
	tx.SetMemo(rowMemo(u.txid), row{State: u.to, Version: u.from.Version + 1, Owner: owner})
	return true, nil
}

func impossible(txid string, from, to TxState) error {
	return domainerr.New("IMPOSSIBLE_TRANSITION", "transition not in ALLOWED_TRANSITIONS",
		map[string]any{"txid": txid, "from": string(from), "to": string(to)})
}

func ownershipViolation(txid, owner, issuer string) error {
	return domainerr.New("OWNERSHIP_VIOLATION", "issuer does not own the transaction",
		map[string]any{"txid": txid, "owner": owner, "issuer": issuer})
}

func missing(field string) error {
	return domainerr.New("MISSING_FIELD", field+" is required", map[string]any{"field": field})
}

func issuerOrZC(issuer string) string {
	if issuer == "" {
		return OwnerZC
	}
	return issuer
}
