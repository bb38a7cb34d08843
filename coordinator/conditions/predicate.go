package conditions

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/strictjson"
)

// PredicateType is the kind of a deterministic ledger predicate (spec 000
// §11.2-d): the only four ZC resolves itself.
type PredicateType string

// The predicate types.
const (
	TxReachedState   PredicateType = "TX_REACHED_STATE"   // {txid, states[]}: monotone
	GtidReachedState PredicateType = "GTID_REACHED_STATE" // {gtid, states[]}: monotone
	TimeAfter        PredicateType = "TIME_AFTER"         // {at}: now >= at, false -> true
	TimeBefore       PredicateType = "TIME_BEFORE"        // {at}: now < at, true -> false
)

// MaxPredicateStates bounds states[] of a *_REACHED_STATE predicate.
const MaxPredicateStates = 16

// Predicate is ConditionTemplate.ledger_predicate_json.
type Predicate struct {
	Type   PredicateType `json:"type"`
	TxID   string        `json:"txid,omitempty"`
	GTID   string        `json:"gtid,omitempty"`
	States []string      `json:"states,omitempty"`
	// At is the instant of a TIME_* predicate as written: RFC3339, or
	// without an offset, read as JST (spec 000 §11.4).
	At string `json:"at,omitempty"`
}

// PredicateValue is how a predicate was resolved: its value, the instant
// used (EvaluatedAt, UTC stamp; EvaluatedAtJST for reading) and, for a
// *_REACHED_STATE, the first state of the list the chain reached.
type PredicateValue struct {
	Predicate      Predicate `json:"predicate"`
	Value          bool      `json:"value"`
	EvaluatedAt    string    `json:"evaluated_at"`
	EvaluatedAtJST string    `json:"evaluated_at_jst"`
	AtUTC          string    `json:"at_utc,omitempty"`
	ReachedState   string    `json:"reached_state,omitempty"`
}

// systemLayouts are the offset-less forms ParseSystemTime reads as JST.
var systemLayouts = []string{"2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"}

// ParseSystemTime parses a system time (spec 000 §11.4 parseSystemTime):
// RFC3339 with its offset as given; without an offset
// ("2026-12-03T09:00:00", "2026-12-03T09:00", "2026-12-03") it is JST.
func ParseSystemTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, l := range systemLayouts {
		if t, err := time.ParseInLocation(l, s, clock.JST); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("conditions: %q is neither RFC3339 nor an offset-less JST date-time", s)
}

func predicateInvalid(field, why string, v any) error {
	return domainerr.New("INVALID_REQUEST", "ledger_predicate."+field+": "+why, map[string]any{"field": "ledger_predicate." + field, "value": v})
}

// ParsePredicate decodes and checks a ledger_predicate_json document
// (strict JSON: unknown or repeated members refused).
func ParsePredicate(doc []byte) (Predicate, error) {
	var p Predicate
	if err := strictjson.Decode(doc, &p, strictjson.Options{DisallowUnknownFields: true}); err != nil {
		return p, err
	}
	return p, p.Check()
}

// Check verifies the members a predicate of its type needs and refuses
// those it must not have.
func (p Predicate) Check() error {
	switch p.Type {
	case TxReachedState, GtidReachedState:
		id, idName, other := p.TxID, "txid", p.GTID
		if p.Type == GtidReachedState {
			id, idName, other = p.GTID, "gtid", p.TxID
		}
		if strings.TrimSpace(id) == "" {
			return predicateInvalid(idName, "required for "+string(p.Type), id)
		}
		if other != "" || p.At != "" {
			return predicateInvalid("type", string(p.Type)+" takes "+idName+" and states only", p.Type)
		}
		if len(p.States) == 0 || len(p.States) > MaxPredicateStates {
			return predicateInvalid("states", fmt.Sprintf("1..%d states required", MaxPredicateStates), len(p.States))
		}
		for _, s := range p.States {
			if strings.TrimSpace(s) == "" {
				return predicateInvalid("states", "a state must not be empty", s)
			}
		}
	case TimeAfter, TimeBefore:
		if p.TxID != "" || p.GTID != "" || len(p.States) > 0 {
			return predicateInvalid("type", string(p.Type)+" takes at only", p.Type)
		}
		if _, err := ParseSystemTime(p.At); err != nil {
			return predicateInvalid("at", "must be RFC3339, or an offset-less date-time read as JST", p.At)
		}
	default:
		return predicateInvalid("type", "must be TX_REACHED_STATE, GTID_REACHED_STATE, TIME_AFTER or TIME_BEFORE", p.Type)
	}
	return nil
}

// Ledger is the read-only port the *_REACHED_STATE predicates read: has
// the committed FinalityLog chain of a transfer (or of a GTID aggregate)
// an entry whose state_to is one of states? It answers the first such
// state, or "" when none. FinalityLog is append-only, so the answer is
// monotone (spec 000 §11.2-d); the current Transactions.state is not
// (a transfer passes through states), which is why the chain is read.
type Ledger interface {
	ReachedState(ctx context.Context, kind PredicateType, id string, states []string) (string, error)
}

// DBLedger is Ledger on the coordinator database.
type DBLedger struct{ DB *store.DB }

// ReachedState reads FinalityLog in a read transaction.
func (l DBLedger) ReachedState(ctx context.Context, kind PredicateType, id string, states []string) (string, error) {
	var got string
	err := l.DB.Read(ctx, func(tx *store.Tx) error {
		var err error
		got, err = ReachedStateTx(ctx, tx, kind, id, states)
		return err
	})
	return got, err
}

// ReachedStateTx is ReachedState in the caller's transaction.
func ReachedStateTx(ctx context.Context, tx *store.Tx, kind PredicateType, id string, states []string) (string, error) {
	if len(states) == 0 {
		return "", nil
	}
	q := `SELECT state_to FROM FinalityLog WHERE txid = ? AND state_to IN (?` + strings.Repeat(", ?", len(states)-1) + `) ORDER BY event_seq LIMIT 1`
	if kind == GtidReachedState {
		q = `SELECT state_to FROM FinalityLog WHERE gtid = ? AND txid IS NULL AND state_to IN (?` + strings.Repeat(", ?", len(states)-1) + `) ORDER BY event_seq LIMIT 1`
	}
	args := []any{id}
	for _, s := range states {
		args = append(args, s)
	}
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return "", fmt.Errorf("conditions: read FinalityLog of %s: %w", id, err)
	}
	defer rows.Close()
	var got string
	if rows.Next() {
		if err := rows.Scan(&got); err != nil {
			return "", fmt.Errorf("conditions: read FinalityLog of %s: %w", id, err)
		}
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("conditions: read FinalityLog of %s: %w", id, err)
	}
	return got, nil
}

// Resolve evaluates p at now (deterministic: the ledger's committed
// entries and now are its only inputs).
func (p Predicate) Resolve(ctx context.Context, l Ledger, now time.Time) (PredicateValue, error) {
	v := PredicateValue{Predicate: p, EvaluatedAt: clock.Stamp(now), EvaluatedAtJST: now.In(clock.JST).Format(time.RFC3339)}
	switch p.Type {
	case TxReachedState, GtidReachedState:
		id := p.TxID
		if p.Type == GtidReachedState {
			id = p.GTID
		}
		got, err := l.ReachedState(ctx, p.Type, id, p.States)
		if err != nil {
			return v, err
		}
		v.ReachedState, v.Value = got, got != ""
	case TimeAfter, TimeBefore:
		at, err := ParseSystemTime(p.At)
		if err != nil {
			return v, predicateInvalid("at", err.Error(), p.At)
		}
		v.AtUTC = clock.Stamp(at)
		if p.Type == TimeAfter {
			v.Value = !now.Before(at)
		} else {
			v.Value = now.Before(at)
		}
	default:
		return v, p.Check()
	}
	return v, nil
}
