package cases

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/entitystate"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Operator decisions on a case: the EntityStateLog reason_code of the move
// they make, with the note and the operator in its payload.
const (
	DecisionResolved  = "RESOLVED"  // the cause was fixed -> RESOLVED (note required)
	DecisionClosed    = "CLOSED"    // closed without a fix (accepted, duplicate, no action) -> RESOLVED (note required)
	DecisionRetry     = "RETRY"     // the posting was sent again -> IN_PROGRESS
	DecisionWriteOff  = "WRITE_OFF" // the posting will never be sent -> RESOLVED
	DecisionEscalate  = "ESCALATE"  // -> ESCALATED
	DecisionAdjusted  = "DRIFT_ADJUSTED"
	DecisionAccepted  = "DRIFT_ACCEPTED"
	DecisionInProcess = "IN_PROGRESS" // someone works on it -> IN_PROGRESS
)

// ReasonReconDrift is the reason code of a Case opened for a balance drift
// between a core and the adapter's shadow (adapter reconciliation). Such a
// Case ends only with its drift: DecisionAdjusted or DecisionAccepted.
const ReasonReconDrift = "RECON_DRIFT"

// decisionState is the state each decision moves a case to.
var decisionState = map[string]string{
	DecisionResolved:  StateResolved,
	DecisionClosed:    StateResolved,
	DecisionRetry:     StateInProgress,
	DecisionWriteOff:  StateResolved,
	DecisionEscalate:  StateEscalated,
	DecisionAdjusted:  StateResolved,
	DecisionAccepted:  StateResolved,
	DecisionInProcess: StateInProgress,
}

// DecisionState returns the state a decision moves a case to ("" for an
// unknown decision).
func DecisionState(decision string) string { return decisionState[decision] }

// Decide is one operator decision on a case.
type Decide struct {
	CaseID   string
	Decision string // Decision* constant
	Note     string // why; required for a decision that ends the case
	Operator string // who decided (required; recorded)
	Source   string // where the decision came from (e.g. "cli", "api", "workbook 2026-11-30 row 4")
}

// Decided reports a decision that moved a case.
type Decided struct {
	CaseID string
	From   string
	To     string
}

// DecideTx moves a case by an operator decision inside tx: one guarded
// (CAS) entitystate transition from an allowed state, whose EntityStateLog
// row carries the decision as reason_code and {note, operator, source} as
// payload. A case already in the target state, or in a state the move is
// not allowed from (a RESOLVED case is final), is STATE_GUARD naming the
// state it is in: of N concurrent decisions on the same case exactly one
// moves it.
func (c *Cases) DecideTx(ctx context.Context, tx *store.Tx, d Decide) (Decided, error) {
	to, ok := decisionState[d.Decision]
	if !ok {
		return Decided{}, domainerr.New("INVALID_REQUEST", "unknown case decision",
			map[string]any{"field": "decision", "value": d.Decision})
	}
	if strings.TrimSpace(d.CaseID) == "" {
		return Decided{}, domainerr.New("MISSING_FIELD", "case_id is required", map[string]any{"field": "case_id"})
	}
	if strings.TrimSpace(d.Operator) == "" {
		return Decided{}, domainerr.New("MISSING_FIELD", "the operator deciding is required", map[string]any{"field": "operator"})
	}
	if to == StateResolved && strings.TrimSpace(d.Note) == "" {
		return Decided{}, domainerr.New("MISSING_FIELD", "a note is required to end a case",
			map[string]any{"field": "note", "decision": d.Decision})
	}
	if to == StateResolved && d.Decision != DecisionAdjusted && d.Decision != DecisionAccepted {
		var reason string
		if err := tx.QueryRowContext(ctx, "SELECT reason_code FROM Cases WHERE case_id = ?", d.CaseID).Scan(&reason); err == nil && reason == ReasonReconDrift {
			return Decided{}, domainerr.New("INVALID_REQUEST",
				"a RECON_DRIFT Case ends with its drift: settle the drift by an adjusting posting or accept it (zcgw cases resolve CASE --drift adjust|accept)",
				map[string]any{"case_id": d.CaseID, "decision": d.Decision})
		}
	}
	now := clock.Stamp(c.clk.Now())
	set := []entitystate.Assign{{Column: "updated_at", Value: now}}
	switch to {
	case StateResolved:
		set = append(set, entitystate.Assign{Column: "resolved_at", Value: now})
	case StateEscalated:
		set = append(set, entitystate.Assign{Column: "escalated_at", Value: now})
	}
	payload := map[string]any{"decision": d.Decision, "note": d.Note, "operator": d.Operator}
	if d.Source != "" {
		payload["source"] = d.Source
	}
	r, err := entitystate.Transition(ctx, tx, c.clk, entitystate.Change{
		EntityType: EntityType, EntityID: d.CaseID, From: allowedFrom[to], To: to,
		EventType: events[to], ReasonCode: d.Decision, Actor: "OPS", Payload: payload, Set: set,
	})
	if err != nil {
		return Decided{}, err
	}
	if !r.Applied {
		return Decided{}, domainerr.New("STATE_GUARD", fmt.Sprintf("case %s is %s: %s cannot move it to %s", d.CaseID, r.From, d.Decision, to),
			map[string]any{"case_id": d.CaseID, "state_from": r.From, "state_to": to})
	}
	c.log.InfoContext(ctx, "case.decided", "case_id", d.CaseID, "decision", d.Decision, "state_from", r.From,
		"state_to", to, "operator", d.Operator, "source", d.Source)
	return Decided{CaseID: d.CaseID, From: r.From, To: to}, nil
}

// Decide is DecideTx in its own write transaction.
func (c *Cases) Decide(ctx context.Context, db *store.DB, d Decide) (out Decided, err error) {
	err = db.Write(ctx, func(tx *store.Tx) error {
		var e error
		out, e = c.DecideTx(ctx, tx, d)
		return e
	})
	return out, err
}

// Filter selects cases for List. The zero Filter selects every case not
// RESOLVED.
type Filter struct {
	// State: "" every state but RESOLVED (what is still open), "ALL" every
	// state, else exactly this state.
	State string
	Bank  string // cause_party_id
	// Cause matches the reason code (e.g. RECON_DRIFT), the whole cause
	// key (CAUSE:001:BANK_ERROR) or the start of one, up to a colon
	// (CAUSE:001:RECON_DRIFT matches every drift Case of bank 001).
	Cause     string
	SLABefore time.Time // only cases whose SLA deadline is before this (zero: any)
	After     string    // keyset: only cases after this case id in list order
	Limit     int       // default 100
}

// StateAll is Filter.State for every state.
const StateAll = "ALL"

var listStates = map[string]bool{StateOpen: true, StateInProgress: true, StateResolved: true, StateEscalated: true, StateAll: true, "": true}

// Validate refuses a filter List would refuse (an unknown state).
func (f Filter) Validate() error {
	_, _, err := f.where()
	return err
}

// where is the WHERE clause of f (without After), shared by List and Count.
func (f Filter) where() (string, []any, error) {
	if !listStates[f.State] {
		return "", nil, domainerr.New("INVALID_REQUEST", "unknown case state (OPEN, IN_PROGRESS, ESCALATED, RESOLVED or ALL)",
			map[string]any{"field": "status", "value": f.State})
	}
	q := " WHERE 1=1"
	var args []any
	switch f.State {
	case "":
		q += " AND state <> ?"
		args = append(args, StateResolved)
	case StateAll:
	default:
		q += " AND state = ?"
		args = append(args, f.State)
	}
	if f.Bank != "" {
		q += " AND cause_party_id = ?"
		args = append(args, f.Bank)
	}
	if f.Cause != "" {
		// A cause key also matches the keys it starts (a drift's Case is
		// CAUSE:{bank}:RECON_DRIFT:{account}:{amount}).
		q += " AND (reason_code = ? OR cause_key = ? OR substr(cause_key, 1, ?) = ?)"
		args = append(args, f.Cause, f.Cause, len(f.Cause)+1, f.Cause+":")
	}
	if !f.SLABefore.IsZero() {
		// clock.Stamp strings sort in time order.
		q += " AND sla_deadline IS NOT NULL AND sla_deadline < ?"
		args = append(args, clock.Stamp(f.SLABefore))
	}
	return q, args, nil
}

// order is the list order: SLA deadline first (the most urgent on top),
// then case id.
const order = " ORDER BY COALESCE(sla_deadline, ''), case_id"

// after adds the keyset condition: rows after case id after in list order.
// An unknown case id is NOT_FOUND (a page cannot start after nothing).
func after(ctx context.Context, tx *store.Tx, q string, args []any, id string) (string, []any, error) {
	if id == "" {
		return q, args, nil
	}
	var sla string
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(sla_deadline, '') FROM Cases WHERE case_id = ?", id).Scan(&sla); err != nil {
		return "", nil, domainerr.New("NOT_FOUND", "the --after case does not exist", map[string]any{"field": "after", "case_id": id})
	}
	return q + " AND (COALESCE(sla_deadline, ''), case_id) > (?, ?)", append(args, sla, id), nil
}

const caseColumns = `case_id, COALESCE(related_txid, ''), COALESCE(related_gtid, ''), state, reason_code,
	COALESCE(description, ''), opened_by, COALESCE(sla_deadline, ''), COALESCE(evidence_refs, ''),
	COALESCE(cause_key, ''), COALESCE(cause_party_id, ''), COALESCE(detection_path, ''),
	occurrence_count, COALESCE(last_occurred_at, ''), COALESCE(escalated_at, ''),
	COALESCE(resolved_at, ''), created_at, updated_at`

func (k *Case) scanTargets() []any {
	return []any{&k.CaseID, &k.RelatedTxID, &k.RelatedGtID, &k.State, &k.ReasonCode, &k.Description, &k.OpenedBy,
		&k.SLADeadline, &k.EvidenceRefs, &k.CauseKey, &k.CausePartyID, &k.DetectionPath, &k.OccurrenceCount,
		&k.LastOccurredAt, &k.EscalatedAt, &k.ResolvedAt, &k.CreatedAt, &k.UpdatedAt}
}

// Page is one page of List: the cases and how many more match after them.
type Page struct {
	Cases []Case
	More  int64 // matching cases after the last one shown
}

// List returns a page of the cases f selects, in SLA-deadline order, and
// how many more match after it (keyset paging: the next page is
// f.After = the last case id shown).
func List(ctx context.Context, tx *store.Tx, f Filter) (Page, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	w, args, err := f.where()
	if err != nil {
		return Page{}, err
	}
	if w, args, err = after(ctx, tx, w, args, f.After); err != nil {
		return Page{}, err
	}
	rows, err := tx.QueryContext(ctx, "SELECT "+caseColumns+" FROM Cases"+w+order+" LIMIT ?", append(args, f.Limit)...)
	if err != nil {
		return Page{}, fmt.Errorf("cases: list: %w", err)
	}
	var p Page
	for rows.Next() {
		var k Case
		if err := rows.Scan(k.scanTargets()...); err != nil {
			rows.Close()
			return Page{}, fmt.Errorf("cases: list: %w", err)
		}
		p.Cases = append(p.Cases, k)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return Page{}, fmt.Errorf("cases: list: %w", err)
	}
	rows.Close()
	if len(p.Cases) == 0 {
		return p, nil
	}
	w, args, _ = f.where()
	if w, args, err = after(ctx, tx, w, args, p.Cases[len(p.Cases)-1].CaseID); err != nil {
		return Page{}, err
	}
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM Cases"+w, args...).Scan(&p.More); err != nil {
		return Page{}, fmt.Errorf("cases: count: %w", err)
	}
	return p, nil
}

// Detail is a case with its linked transactions and its state history.
type Detail struct {
	Case
	Links   []string
	History []entitystate.Entry
}

// Show reads a case, its links and its EntityStateLog; a missing case is
// NOT_FOUND.
func Show(ctx context.Context, tx *store.Tx, caseID string) (Detail, error) {
	k, err := Get(ctx, tx, caseID)
	if err != nil {
		return Detail{}, err
	}
	d := Detail{Case: k}
	if d.Links, err = LinkedKeys(ctx, tx, caseID); err != nil {
		return Detail{}, err
	}
	if d.History, err = entitystate.History(ctx, tx, EntityType, caseID); err != nil {
		return Detail{}, err
	}
	return d, nil
}
