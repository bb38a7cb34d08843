package entitystate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Entity says where an entity type keeps its status.
type Entity struct {
	Type        string // EntityStateLog.entity_type, e.g. "CASE"
	Table       string
	IDColumn    string
	StateColumn string
}

var (
	mu       sync.RWMutex
	registry = map[string]Entity{
		"CASE": {Type: "CASE", Table: "Cases", IDColumn: "case_id", StateColumn: "state"},
		"PSPR": {Type: "PSPR", Table: "PsprRegistry", IDColumn: "pspr_ref", StateColumn: "capability_state"},
		// reversals of failed transfers (coordinator/orchestrator refund.go)
		"REVERSAL": {Type: "REVERSAL", Table: "ReversalRecords", IDColumn: "reversal_id", StateColumn: "status"},
	}
	identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Register adds an entity type kept in another table (for example the
// bank-side BANK_ACCOUNT or REVERSAL tables, in a database that also holds
// EntityStateLog). Identifiers must be plain SQL names; an existing type
// cannot be redefined.
func Register(e Entity) error {
	for _, name := range []string{e.Table, e.IDColumn, e.StateColumn} {
		if !identifier.MatchString(name) {
			return domainerr.New("INVALID_REQUEST", "entity table and columns must be plain SQL identifiers",
				map[string]any{"entity_type": e.Type, "identifier": name})
		}
	}
	if e.Type == "" {
		return domainerr.New("MISSING_FIELD", "entity type is empty", map[string]any{"field": "entity_type"})
	}
	mu.Lock()
	defer mu.Unlock()
	if prev, ok := registry[e.Type]; ok && prev != e {
		return domainerr.New("INVALID_REQUEST", "entity type already registered differently",
			map[string]any{"entity_type": e.Type})
	}
	registry[e.Type] = e
	return nil
}

// Lookup returns the registered entity type.
func Lookup(entityType string) (Entity, bool) {
	mu.RLock()
	defer mu.RUnlock()
	e, ok := registry[entityType]
	return e, ok
}

// Assign sets one more column in the same guarded UPDATE as the status
// (e.g. updated_at, escalated_at).
type Assign struct {
	Column string
	Value  any
}

// Change is one status change.
type Change struct {
	EntityType string
	EntityID   string
	// From lists the states the change may start from; empty allows any
	// state except To. A change to the current state is never applied.
	From       []string
	To         string
	EventType  string // e.g. "CaseEscalated"
	ReasonCode string // optional
	Actor      string // ZC|OPS|BANK_{bankId}|SYSTEM
	Payload    any    // optional, stored as JSON
	Set        []Assign
}

// Result reports what Transition did.
type Result struct {
	Applied bool
	From    string // the state before the call
}

// Transition changes an entity's status inside tx: a guarded UPDATE of the
// status column (and of c.Set) that applies only from an allowed state,
// then, only if it applied, an EntityStateLog row in the same transaction.
// A guard that does not hold is not an error: Result.Applied is false and
// nothing is written. A missing entity is NOT_FOUND.
func Transition(ctx context.Context, tx *store.Tx, clk clock.Clock, c Change) (Result, error) {
	e, ok := Lookup(c.EntityType)
	if !ok {
		return Result{}, domainerr.New("INVALID_REQUEST", "unknown entity type", map[string]any{"entity_type": c.EntityType})
	}
	if c.To == "" || c.EventType == "" || c.EntityID == "" {
		return Result{}, domainerr.New("MISSING_FIELD", "entity state change needs entity_id, state_to and event_type",
			map[string]any{"entity_type": c.EntityType, "entity_id": c.EntityID})
	}
	var cur string
	err := tx.QueryRowContext(ctx,
		"SELECT "+e.StateColumn+" FROM "+e.Table+" WHERE "+e.IDColumn+" = ?", c.EntityID).Scan(&cur)
	if errors.Is(err, sql.ErrNoRows) {
		return Result{}, domainerr.New("NOT_FOUND", strings.ToLower(c.EntityType)+" not found",
			map[string]any{"entity_type": c.EntityType, "entity_id": c.EntityID})
	}
	if err != nil {
		return Result{}, fmt.Errorf("entitystate: read %s %s: %w", c.EntityType, c.EntityID, err)
	}
	if cur == c.To || (len(c.From) > 0 && !slices.Contains(c.From, cur)) {
		return Result{From: cur}, nil
	}
	set := []string{e.StateColumn + " = ?"}
	args := []any{c.To}
	for _, a := range c.Set {
		if !identifier.MatchString(a.Column) || a.Column == e.StateColumn || a.Column == e.IDColumn {
			return Result{}, domainerr.New("INVALID_REQUEST", "cannot set this column with a state change",
				map[string]any{"entity_type": c.EntityType, "column": a.Column})
		}
		set = append(set, a.Column+" = ?")
		args = append(args, a.Value)
	}
	args = append(args, c.EntityID, cur)
	applied, err := store.Applied(tx.ExecContext(ctx,
		"UPDATE "+e.Table+" SET "+strings.Join(set, ", ")+" WHERE "+e.IDColumn+" = ? AND "+e.StateColumn+" = ?",
		args...))
	if err != nil {
		return Result{}, fmt.Errorf("entitystate: update %s %s: %w", c.EntityType, c.EntityID, err)
	}
	if !applied {
		return Result{From: cur}, nil
	}
	from := cur
	if err := Record(ctx, tx, clk, Fact{
		EntityType: c.EntityType, EntityID: c.EntityID, EventType: c.EventType,
		From: &from, To: c.To, ReasonCode: c.ReasonCode, Actor: c.Actor, Payload: c.Payload,
	}); err != nil {
		return Result{}, err
	}
	return Result{Applied: true, From: cur}, nil
}

// Fact is one EntityStateLog row.
type Fact struct {
	EntityType string
	EntityID   string
	EventType  string
	From       *string // nil on creation
	To         string
	ReasonCode string
	Actor      string
	Payload    any
}

// Record appends one EntityStateLog row inside tx. Use it for the creation
// of an entity (From nil) and for a change the caller has already made
// with its own guarded statement in the same transaction; status changes
// go through Transition.
func Record(ctx context.Context, tx *store.Tx, clk clock.Clock, f Fact) error {
	return RecordAll(ctx, tx, clk, []Fact{f})
}

// Entry is a stored EntityStateLog row.
type Entry struct {
	LogID      string
	EntityType string
	EntityID   string
	EventType  string
	From       string // "" when the row records a creation
	To         string
	ReasonCode string
	Actor      string
	Payload    string
	OccurredAt string
}

// History returns the log of one entity in the order it was written.
func History(ctx context.Context, tx *store.Tx, entityType, entityID string) ([]Entry, error) {
	rows, err := tx.QueryContext(ctx,
		`SELECT log_id, entity_type, entity_id, event_type, COALESCE(state_from, ''), state_to,
		        COALESCE(reason_code, ''), COALESCE(actor, ''), COALESCE(payload_json, ''), occurred_at
		 FROM EntityStateLog WHERE entity_type = ? AND entity_id = ? ORDER BY occurred_at, rowid`,
		entityType, entityID)
	if err != nil {
		return nil, fmt.Errorf("entitystate: history %s %s: %w", entityType, entityID, err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		if err := rows.Scan(&e.LogID, &e.EntityType, &e.EntityID, &e.EventType, &e.From, &e.To,
			&e.ReasonCode, &e.Actor, &e.Payload, &e.OccurredAt); err != nil {
			return nil, fmt.Errorf("entitystate: history %s %s: %w", entityType, entityID, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("entitystate: history %s %s: %w", entityType, entityID, err)
	}
	return out, nil
}

func nullable(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
