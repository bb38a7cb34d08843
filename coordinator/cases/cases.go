package cases

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/entitystate"
	"github.com/zcgw/zcgw/coordinator/params"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/uuid"
	"github.com/zcgw/zcgw/coordinator/zclog"
)

// CaseState values (Cases.state).
const (
	StateOpen       = "OPEN"
	StateInProgress = "IN_PROGRESS"
	StateResolved   = "RESOLVED"
	StateEscalated  = "ESCALATED"
)

// EntityType is the EntityStateLog.entity_type of a case.
const EntityType = "CASE"

// EntityStateLog event types written for cases.
const (
	EventOpened     = "CaseOpened"
	EventAggregated = "CaseAggregated"
	EventInProgress = "CaseInProgress"
	EventEscalated  = "CaseEscalated"
	EventResolved   = "CaseResolved"
)

// ReasonSLAExceeded is the EntityStateLog reason_code of an escalation by
// SweepSLA.
const ReasonSLAExceeded = "SLA_EXCEEDED"

// DefaultSLA is PR-CASE-SLA's default: the deadline given to a case whose
// opener names none (spec 003 CASE_SLA_SEC; its value is not in the spec
// volumes we have: see docs/coordinator-support.md).
const DefaultSLA = params.DefaultCaseSLA

// allowedFrom lists the states each target state may be entered from.
// RESOLVED is terminal; a case never returns to OPEN.
var allowedFrom = map[string][]string{
	StateInProgress: {StateOpen, StateEscalated},
	StateEscalated:  {StateOpen, StateInProgress},
	StateResolved:   {StateOpen, StateInProgress, StateEscalated},
}

var events = map[string]string{
	StateInProgress: EventInProgress,
	StateEscalated:  EventEscalated,
	StateResolved:   EventResolved,
}

// Cases opens, aggregates, moves and escalates cases.
type Cases struct {
	clk clock.Clock
	log *slog.Logger
	sla time.Duration
}

// New returns Cases using clk, logging to log (nil: discard), with sla as
// the default deadline. sla <= 0 (what a node passes) reads PR-CASE-SLA
// from the parameter ledger when each case opens (default DefaultSLA), so
// an operator's change applies to the next case without a restart.
func New(clk clock.Clock, log *slog.Logger, sla time.Duration) *Cases {
	return &Cases{clk: clk, log: zclog.OrDiscard(log), sla: sla}
}

// slaTx is the default SLA in force inside tx.
func (c *Cases) slaTx(ctx context.Context, tx *store.Tx) (time.Duration, error) {
	if c.sla > 0 {
		return c.sla, nil
	}
	return params.DurationTx(ctx, tx, params.CaseSLA)
}

// OpenRequest describes one detection.
type OpenRequest struct {
	ReasonCode    string // CASE reason_code (required)
	Description   string
	OpenedBy      string // ZC|BANK|OPS (required)
	RelatedTxID   string
	RelatedGtID   string
	CausePartyID  string // who caused it, when known
	DetectionPath string // where it was detected, when the cause is unknown
	// Cause tells one cause apart from the others of the same party (or
	// path) and reason, when each is its own case (a reconciliation
	// drift: the account and the amount): it ends the cause key. Empty:
	// the party and the reason are the cause.
	Cause        string
	EvidenceRefs []string
	SLADeadline  time.Time // zero: now + the default SLA
}

// CauseKey is the aggregation key 'CAUSE:{cause_party_id|detection_path}:{reason_code}'
// (followed by ':{cause}' when Cause is given), or "" when neither a cause party nor a detection path is given (such a
// case stands alone: aggregating on the reason code alone would bundle
// unrelated causes).
func (r OpenRequest) CauseKey() string {
	var key string
	switch {
	case r.CausePartyID != "":
		key = "CAUSE:" + r.CausePartyID + ":" + r.ReasonCode
	case r.DetectionPath != "":
		key = "CAUSE:" + r.DetectionPath + ":" + r.ReasonCode
	default:
		return ""
	}
	if r.Cause != "" {
		key += ":" + r.Cause
	}
	return key
}

func (r OpenRequest) linkKey() string {
	if r.RelatedTxID != "" {
		return r.RelatedTxID
	}
	return r.RelatedGtID
}

// Opened reports what OpenCase did.
type Opened struct {
	CaseID          string
	Created         bool  // a new case was opened
	Linked          bool  // the transaction was newly linked to the case
	OccurrenceCount int64 // transactions bundled in the case after this call
	State           string
}

// OpenCase records a detection inside tx. With a cause key and an
// unresolved case for it, the detection joins that case: its transaction
// is linked once (INSERT OR IGNORE on (case_id, link_key)) and only a new
// link increments occurrence_count and appends CaseAggregated to
// EntityStateLog. Otherwise a new OPEN case is created with its SLA
// deadline and a CaseOpened log row.
func (c *Cases) OpenCase(ctx context.Context, tx *store.Tx, req OpenRequest) (Opened, error) {
	if req.ReasonCode == "" {
		return Opened{}, domainerr.New("MISSING_FIELD", "case needs a reason_code", map[string]any{"field": "reason_code"})
	}
	switch req.OpenedBy {
	case "ZC", "BANK", "OPS":
	default:
		return Opened{}, domainerr.New("INVALID_REQUEST", "opened_by must be ZC, BANK or OPS",
			map[string]any{"field": "opened_by", "value": req.OpenedBy})
	}
	now := c.clk.Now()
	stamp := clock.Stamp(now)
	causeKey := req.CauseKey()
	if causeKey != "" {
		var id, state string
		var count int64
		err := tx.QueryRowContext(ctx,
			`SELECT case_id, state, occurrence_count FROM Cases
			 WHERE cause_key = ? AND state <> ? ORDER BY created_at, case_id LIMIT 1`,
			causeKey, StateResolved).Scan(&id, &state, &count)
		switch {
		case err == nil:
			return c.aggregate(ctx, tx, req, id, state, count, stamp)
		case !errors.Is(err, sql.ErrNoRows):
			return Opened{}, fmt.Errorf("cases: find case for %s: %w", causeKey, err)
		}
	}

	id := "CASE-" + uuid.New()
	deadline := req.SLADeadline
	if deadline.IsZero() {
		sla, err := c.slaTx(ctx, tx)
		if err != nil {
			return Opened{}, err
		}
		deadline = now.Add(sla)
	}
	var evidence sql.NullString
	if len(req.EvidenceRefs) > 0 {
		raw, err := json.Marshal(req.EvidenceRefs)
		if err != nil {
			return Opened{}, fmt.Errorf("cases: encode evidence_refs: %w", err)
		}
		evidence = sql.NullString{String: string(raw), Valid: true}
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO Cases (case_id, related_txid, related_gtid, state, reason_code, description, opened_by,
		   sla_deadline, evidence_refs, cause_key, cause_party_id, detection_path, occurrence_count,
		   last_occurred_at, created_at, updated_at)
		 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)`,
		id, nullable(req.RelatedTxID), nullable(req.RelatedGtID), StateOpen, req.ReasonCode,
		nullable(req.Description), req.OpenedBy, clock.Stamp(deadline), evidence, nullable(causeKey),
		nullable(req.CausePartyID), nullable(req.DetectionPath), stamp, stamp, stamp); err != nil {
		return Opened{}, fmt.Errorf("cases: open case: %w", err)
	}
	linked := false
	if req.linkKey() != "" {
		var err error
		if linked, err = c.link(ctx, tx, id, req, stamp); err != nil {
			return Opened{}, err
		}
	}
	if err := entitystate.Record(ctx, tx, c.clk, entitystate.Fact{
		EntityType: EntityType, EntityID: id, EventType: EventOpened, To: StateOpen,
		ReasonCode: req.ReasonCode, Actor: req.OpenedBy,
		Payload: map[string]any{"cause_key": causeKey, "link_key": req.linkKey(), "sla_deadline": clock.Stamp(deadline)},
	}); err != nil {
		return Opened{}, err
	}
	c.log.InfoContext(ctx, "case.opened", "case_id", id, "reason_code", req.ReasonCode,
		"cause_key", causeKey, "txid", req.RelatedTxID, "gtid", req.RelatedGtID)
	return Opened{CaseID: id, Created: true, Linked: linked, OccurrenceCount: 1, State: StateOpen}, nil
}

func (c *Cases) aggregate(ctx context.Context, tx *store.Tx, req OpenRequest, id, state string, count int64, stamp string) (Opened, error) {
	out := Opened{CaseID: id, State: state, OccurrenceCount: count}
	if req.linkKey() == "" {
		return out, nil // nothing to count: occurrence_count counts transactions
	}
	linked, err := c.link(ctx, tx, id, req, stamp)
	if err != nil || !linked {
		return out, err
	}
	if _, err := tx.ExecContext(ctx,
		"UPDATE Cases SET occurrence_count = occurrence_count + 1, last_occurred_at = ?, updated_at = ? WHERE case_id = ?",
		stamp, stamp, id); err != nil {
		return Opened{}, fmt.Errorf("cases: count occurrence on %s: %w", id, err)
	}
	out.Linked = true
	out.OccurrenceCount = count + 1
	if err := entitystate.Record(ctx, tx, c.clk, entitystate.Fact{
		EntityType: EntityType, EntityID: id, EventType: EventAggregated, From: &state, To: state,
		ReasonCode: req.ReasonCode, Actor: req.OpenedBy,
		Payload: map[string]any{"link_key": req.linkKey(), "occurrence_count": out.OccurrenceCount},
	}); err != nil {
		return Opened{}, err
	}
	c.log.InfoContext(ctx, "case.aggregated", "case_id", id, "txid", req.RelatedTxID, "gtid", req.RelatedGtID,
		"occurrence_count", out.OccurrenceCount)
	return out, nil
}

// link adds the detection's transaction to the case, once.
func (c *Cases) link(ctx context.Context, tx *store.Tx, id string, req OpenRequest, stamp string) (bool, error) {
	ok, err := store.Insert(ctx, tx, "CaseRelatedTransactions",
		[]string{"case_id", "link_key", "related_txid", "related_gtid", "linked_at"},
		id, req.linkKey(), nullable(req.RelatedTxID), nullable(req.RelatedGtID), stamp)
	if err != nil {
		return false, fmt.Errorf("cases: link %s to %s: %w", req.linkKey(), id, err)
	}
	return ok, nil
}

// SetState moves a case to state inside tx through entitystate (status
// and EntityStateLog together), stamping updated_at and resolved_at or
// escalated_at. Moving to the current state is a no-op (false, nil); a
// move the state machine does not allow is STATE_GUARD.
func (c *Cases) SetState(ctx context.Context, tx *store.Tx, caseID, state, actor, reasonCode string) (bool, error) {
	from, ok := allowedFrom[state]
	if !ok {
		return false, domainerr.New("INVALID_STATE", "a case cannot be moved to this state",
			map[string]any{"case_id": caseID, "state": state})
	}
	now := clock.Stamp(c.clk.Now())
	set := []entitystate.Assign{{Column: "updated_at", Value: now}}
	switch state {
	case StateResolved:
		set = append(set, entitystate.Assign{Column: "resolved_at", Value: now})
	case StateEscalated:
		set = append(set, entitystate.Assign{Column: "escalated_at", Value: now})
	}
	r, err := entitystate.Transition(ctx, tx, c.clk, entitystate.Change{
		EntityType: EntityType, EntityID: caseID, From: from, To: state,
		EventType: events[state], ReasonCode: reasonCode, Actor: actor, Set: set,
	})
	if err != nil {
		return false, err
	}
	if !r.Applied {
		if r.From == state {
			return false, nil
		}
		return false, domainerr.New("STATE_GUARD", "case state change not allowed",
			map[string]any{"case_id": caseID, "state_from": r.From, "state_to": state})
	}
	c.log.InfoContext(ctx, "case.state_changed", "case_id", caseID, "state_from", r.From, "state_to", state, "actor", actor)
	return true, nil
}

// SweepSLA escalates every OPEN or IN_PROGRESS case whose sla_deadline has
// passed (deadline strictly before now) and returns their ids in deadline
// order. Each escalation is a guarded entitystate transition, so a case
// escalated or resolved concurrently is skipped, and rerunning the sweep
// escalates nothing twice.
func (c *Cases) SweepSLA(ctx context.Context, tx *store.Tx) ([]string, error) {
	now := c.clk.Now()
	// Stored stamps are clock.Stamp (fixed nine-digit fraction), so string
	// order is time order and SQL compares them directly.
	rows, err := tx.QueryContext(ctx,
		`SELECT case_id, sla_deadline FROM Cases
		 WHERE state IN (?, ?) AND sla_deadline IS NOT NULL AND sla_deadline < ?
		 ORDER BY sla_deadline, case_id`, StateOpen, StateInProgress, clock.Stamp(now))
	if err != nil {
		return nil, fmt.Errorf("cases: sweep: %w", err)
	}
	type due struct{ id, deadline string }
	var overdue []due
	for rows.Next() {
		var d due
		if err := rows.Scan(&d.id, &d.deadline); err != nil {
			rows.Close()
			return nil, fmt.Errorf("cases: sweep: %w", err)
		}
		overdue = append(overdue, d)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("cases: sweep: %w", err)
	}
	stamp := clock.Stamp(now)
	var escalated []string
	for _, d := range overdue {
		r, err := entitystate.Transition(ctx, tx, c.clk, entitystate.Change{
			EntityType: EntityType, EntityID: d.id, From: allowedFrom[StateEscalated], To: StateEscalated,
			EventType: EventEscalated, ReasonCode: ReasonSLAExceeded, Actor: "SYSTEM",
			Payload: map[string]any{"sla_deadline": d.deadline},
			Set:     []entitystate.Assign{{Column: "escalated_at", Value: stamp}, {Column: "updated_at", Value: stamp}},
		})
		if err != nil {
			return nil, err
		}
		if r.Applied {
			escalated = append(escalated, d.id)
			c.log.WarnContext(ctx, "case.escalated", "case_id", d.id, "sla_deadline", d.deadline)
		}
	}
	return escalated, nil
}

// Case is one Cases row.
type Case struct {
	CaseID          string
	RelatedTxID     string
	RelatedGtID     string
	State           string
	ReasonCode      string
	Description     string
	OpenedBy        string
	SLADeadline     string
	EvidenceRefs    string
	CauseKey        string
	CausePartyID    string
	DetectionPath   string
	OccurrenceCount int64
	LastOccurredAt  string
	EscalatedAt     string
	ResolvedAt      string
	CreatedAt       string
	UpdatedAt       string
}

// Get reads a case; a missing case is NOT_FOUND.
func Get(ctx context.Context, tx *store.Tx, caseID string) (Case, error) {
	var k Case
	err := tx.QueryRowContext(ctx,
		`SELECT case_id, COALESCE(related_txid, ''), COALESCE(related_gtid, ''), state, reason_code,
		        COALESCE(description, ''), opened_by, COALESCE(sla_deadline, ''), COALESCE(evidence_refs, ''),
		        COALESCE(cause_key, ''), COALESCE(cause_party_id, ''), COALESCE(detection_path, ''),
		        occurrence_count, COALESCE(last_occurred_at, ''), COALESCE(escalated_at, ''),
		        COALESCE(resolved_at, ''), created_at, updated_at
		 FROM Cases WHERE case_id = ?`, caseID).
		Scan(&k.CaseID, &k.RelatedTxID, &k.RelatedGtID, &k.State, &k.ReasonCode, &k.Description, &k.OpenedBy,
			&k.SLADeadline, &k.EvidenceRefs, &k.CauseKey, &k.CausePartyID, &k.DetectionPath, &k.OccurrenceCount,
			&k.LastOccurredAt, &k.EscalatedAt, &k.ResolvedAt, &k.CreatedAt, &k.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return Case{}, domainerr.New("NOT_FOUND", "case not found", map[string]any{"case_id": caseID})
	}
	if err != nil {
		return Case{}, fmt.Errorf("cases: read %s: %w", caseID, err)
	}
	return k, nil
}

// LinkedKeys returns the link keys (txid or gtid) bundled in a case, in
// link order.
func LinkedKeys(ctx context.Context, tx *store.Tx, caseID string) ([]string, error) {
	rows, err := tx.QueryContext(ctx,
		"SELECT link_key FROM CaseRelatedTransactions WHERE case_id = ? ORDER BY linked_at, rowid", caseID)
	if err != nil {
		return nil, fmt.Errorf("cases: links of %s: %w", caseID, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("cases: links of %s: %w", caseID, err)
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// OpenCaseDB is OpenCase in its own write transaction.
func (c *Cases) OpenCaseDB(ctx context.Context, db *store.DB, req OpenRequest) (o Opened, err error) {
	err = db.Write(ctx, func(tx *store.Tx) error {
		var e error
		o, e = c.OpenCase(ctx, tx, req)
		return e
	})
	return o, err
}

// SweepSLADB is SweepSLA in its own write transaction.
func (c *Cases) SweepSLADB(ctx context.Context, db *store.DB) (ids []string, err error) {
	err = db.Write(ctx, func(tx *store.Tx) error {
		var e error
		ids, e = c.SweepSLA(ctx, tx)
		return e
	})
	return ids, err
}

func nullable(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// OpenStates are the states of a Case nobody has closed yet.
var OpenStates = []string{StateOpen, StateInProgress, StateEscalated}

// CountOpenTx returns how many Cases are in each of OpenStates (0 for an
// empty one), each a range of the (state, sla_deadline) index, inside the
// caller's transaction.
func CountOpenTx(ctx context.Context, tx *store.Tx) (map[string]int64, error) {
	out := make(map[string]int64, len(OpenStates))
	for _, s := range OpenStates {
		var n int64
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM Cases WHERE state = ?`, s).Scan(&n); err != nil {
			return nil, fmt.Errorf("cases: count %s: %w", s, err)
		}
		out[s] = n
	}
	return out, nil
}
