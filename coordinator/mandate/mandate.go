package mandate

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/entitystate"
	"github.com/zcgw/zcgw/coordinator/ident"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/uuid"
)

// IDPrefix starts every mandate_id (004: INVALID_MANDATE_ID otherwise).
const IDPrefix = "MANDATE-"

// MaxChain bounds a delegation chain (a mandate and its ancestors).
const MaxChain = 8

// Mandate statuses, its EntityStateLog entity type and event types (not
// FinalityLog events: a mandate has no transfer chain).
const (
	StatusActive  = "ACTIVE"
	StatusRevoked = "REVOKED"
	EntityType    = "MANDATE"
	EventCreated  = "MandateCreated"
	EventRevoked  = "MandateRevoked"
)

func init() {
	if err := entitystate.Register(entitystate.Entity{Type: EntityType, Table: "Mandate", IDColumn: "mandate_id", StateColumn: "status"}); err != nil {
		panic(err)
	}
}

// Mandate is one Mandate row: payer PayerBankID lets GranteeRef send
// transfers within a scope, possibly as a narrowing of ParentMandateID.
// Empty AllowedPurposes / AllowedLanes mean any; a nil MaxAmount no
// per-transfer limit.
type Mandate struct {
	MandateID       string   `json:"mandate_id"`
	ParentMandateID string   `json:"parent_mandate_id,omitempty"`
	PayerBankID     string   `json:"payer_bank_id"`
	GranteeRef      string   `json:"grantee_ref"`
	Status          string   `json:"status,omitempty"`
	MaxAmount       *int64   `json:"max_amount,omitempty"`
	AllowedPurposes []string `json:"allowed_purposes"`
	AllowedLanes    []string `json:"allowed_lanes"`
	ValidFrom       string   `json:"valid_from,omitempty"`
	ValidTo         string   `json:"valid_to,omitempty"`
	RevokedAt       string   `json:"revoked_at,omitempty"`
	CreatedAt       string   `json:"created_at,omitempty"`
}

// CheckID refuses a mandate_id that does not start with MANDATE-
// (INVALID_MANDATE_ID, 400) or breaks the reference charset.
func CheckID(id string) error {
	if !strings.HasPrefix(id, IDPrefix) || len(id) == len(IDPrefix) {
		return domainerr.New("INVALID_MANDATE_ID", "mandate_id must start with "+IDPrefix, map[string]any{"field": "mandate_id", "value": id})
	}
	return ident.Check(ident.ClientRef, "mandate_id", id)
}

// Request is what a transfer under a mandate asks for.
type Request struct {
	MandateID   string `json:"mandate_id"`
	PayerBankID string `json:"payer_bank_id"`
	Amount      int64  `json:"amount"`
	Purpose     string `json:"purpose,omitempty"`
	Lane        string `json:"lane"`
}

// Link is the verdict on one mandate of the chain.
type Link struct {
	MandateID  string `json:"mandate_id"`
	OK         bool   `json:"ok"`
	ReasonCode string `json:"reason_code,omitempty"`
	Why        string `json:"why"`
}

// Verdict is the scope check of a Request: Allowed, the first refusal's
// reason code (MANDATE_NOT_FOUND, MANDATE_REVOKED, MANDATE_EXPIRED,
// MANDATE_BREACH) and every link checked, the request's mandate first.
type Verdict struct {
	Allowed    bool   `json:"allowed"`
	ReasonCode string `json:"reason_code,omitempty"`
	Why        string `json:"why"`
	Links      []Link `json:"links"`
	CheckedAt  string `json:"checked_at"`
}

// Err is the verdict as an error (nil when allowed).
func (v Verdict) Err() error {
	if v.Allowed {
		return nil
	}
	return domainerr.New(v.ReasonCode, v.Why, map[string]any{"links": v.Links})
}

// Mandates reads and writes Mandate.
type Mandates struct {
	db  *store.DB
	clk clock.Clock
}

// New returns Mandates on the coordinator database (clk nil: system clock).
func New(db *store.DB, clk clock.Clock) *Mandates {
	if clk == nil {
		clk = clock.System{}
	}
	return &Mandates{db: db, clk: clk}
}

func invalid(field, why string, v any) error {
	return domainerr.New("INVALID_REQUEST", field+": "+why, map[string]any{"field": field, "value": v})
}

func stampOpt(field, s string) (string, error) {
	if s == "" {
		return "", nil
	}
	t, err := clock.ParseStamp(s)
	if err != nil {
		return "", invalid(field, "must be RFC3339", s)
	}
	return clock.Stamp(t), nil
}

func jsonList(l []string) string {
	if l == nil {
		l = []string{}
	}
	b, _ := json.Marshal(l)
	return string(b)
}

// Create stores a new ACTIVE mandate (mandate_id assigned when empty:
// MANDATE- and a UUIDv7) and logs MandateCreated in EntityStateLog. A
// sub-mandate must name a parent of the same payer that exists, is
// active, and that it only narrows (MANDATE_BREACH naming the widened
// field otherwise).
func (ms *Mandates) Create(ctx context.Context, m Mandate, actor string) (Mandate, error) {
	now := ms.clk.Now()
	if m.MandateID == "" {
		m.MandateID = IDPrefix + uuid.NewV7(now)
	}
	if err := CheckID(m.MandateID); err != nil {
		return m, err
	}
	if m.ParentMandateID != "" {
		if err := CheckID(m.ParentMandateID); err != nil {
			return m, err
		}
	}
	if err := ident.CheckAll(ident.Field{Name: "payer_bank_id", Kind: ident.BankID, Value: m.PayerBankID},
		ident.Field{Name: "grantee_ref", Kind: ident.ClientRef, Value: m.GranteeRef}); err != nil {
		return m, err
	}
	for _, f := range []struct{ n, v string }{{"payer_bank_id", m.PayerBankID}, {"grantee_ref", m.GranteeRef}} {
		if f.v == "" {
			return m, domainerr.New("MISSING_FIELD", f.n+" is required", map[string]any{"field": f.n})
		}
	}
	if m.MaxAmount != nil && *m.MaxAmount <= 0 {
		return m, invalid("max_amount", "must be positive", *m.MaxAmount)
	}
	var err error
	if m.ValidFrom == "" {
		m.ValidFrom = clock.Stamp(now)
	} else if m.ValidFrom, err = stampOpt("valid_from", m.ValidFrom); err != nil {
		return m, err
	}
	if m.ValidTo, err = stampOpt("valid_to", m.ValidTo); err != nil {
		return m, err
	}
	if m.ValidTo != "" && m.ValidTo <= m.ValidFrom {
		return m, invalid("valid_to", "must be after valid_from", m.ValidTo)
	}
	slices.Sort(m.AllowedPurposes)
	slices.Sort(m.AllowedLanes)
	m.AllowedPurposes, m.AllowedLanes = slices.Compact(m.AllowedPurposes), slices.Compact(m.AllowedLanes)
	if m.AllowedPurposes == nil {
		m.AllowedPurposes = []string{}
	}
	if m.AllowedLanes == nil {
		m.AllowedLanes = []string{}
	}
	m.Status, m.RevokedAt, m.CreatedAt = StatusActive, "", clock.Stamp(now)
	err = ms.db.Write(ctx, func(tx *store.Tx) error {
		if m.ParentMandateID != "" {
			parent, err := GetTx(ctx, tx, m.ParentMandateID)
			if err != nil {
				return err
			}
			if parent.PayerBankID != m.PayerBankID {
				return domainerr.New("MANDATE_BREACH", "a sub-mandate must have its parent's payer",
					map[string]any{"field": "payer_bank_id", "parent_payer_bank_id": parent.PayerBankID})
			}
			if parent.Status != StatusActive {
				return domainerr.New("MANDATE_REVOKED", "parent mandate "+parent.MandateID+" is revoked", map[string]any{"mandate_id": parent.MandateID})
			}
			if err := narrows(m, parent); err != nil {
				return err
			}
		}
		var maxAmt sql.NullInt64
		if m.MaxAmount != nil {
			maxAmt = sql.NullInt64{Int64: *m.MaxAmount, Valid: true}
		}
		applied, err := store.Applied(tx.ExecContext(ctx, `INSERT INTO Mandate (mandate_id, parent_mandate_id, payer_bank_id, grantee_ref, status,
			max_amount, allowed_purposes, allowed_lanes, valid_from, valid_to, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (mandate_id) DO NOTHING`,
			m.MandateID, nullStr(m.ParentMandateID), m.PayerBankID, m.GranteeRef, m.Status, maxAmt,
			jsonList(m.AllowedPurposes), jsonList(m.AllowedLanes), m.ValidFrom, nullStr(m.ValidTo), m.CreatedAt))
		if err != nil {
			return fmt.Errorf("mandate: insert %s: %w", m.MandateID, err)
		}
		if !applied {
			return invalid("mandate_id", "a mandate with this id already exists", m.MandateID)
		}
		return entitystate.Record(ctx, tx, ms.clk, entitystate.Fact{EntityType: EntityType, EntityID: m.MandateID,
			EventType: EventCreated, To: StatusActive, Actor: actor, Payload: m})
	})
	return m, err
}

// narrows checks that child only narrows parent (spec 000 §11.2-e: a
// sub-mandate cannot loosen its parent).
func narrows(child, parent Mandate) error {
	breach := func(field, why string) error {
		return domainerr.New("MANDATE_BREACH", "a sub-mandate cannot widen its parent: "+why,
			map[string]any{"field": field, "parent_mandate_id": parent.MandateID})
	}
	if parent.MaxAmount != nil && (child.MaxAmount == nil || *child.MaxAmount > *parent.MaxAmount) {
		return breach("max_amount", fmt.Sprintf("max_amount must be at most the parent's %d", *parent.MaxAmount))
	}
	if len(parent.AllowedPurposes) > 0 && (len(child.AllowedPurposes) == 0 || !subset(child.AllowedPurposes, parent.AllowedPurposes)) {
		return breach("allowed_purposes", "allowed_purposes must be a subset of the parent's")
	}
	if len(parent.AllowedLanes) > 0 && (len(child.AllowedLanes) == 0 || !subset(child.AllowedLanes, parent.AllowedLanes)) {
		return breach("allowed_lanes", "allowed_lanes must be a subset of the parent's")
	}
	if child.ValidFrom < parent.ValidFrom {
		return breach("valid_from", "valid_from must not be before the parent's")
	}
	if parent.ValidTo != "" && (child.ValidTo == "" || child.ValidTo > parent.ValidTo) {
		return breach("valid_to", "valid_to must not be after the parent's")
	}
	return nil
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func nullStr(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// Revoke revokes an ACTIVE mandate at the clock's now: one guarded
// update (status ACTIVE -> REVOKED, revoked_at) with its EntityStateLog
// row, so of racing revokes exactly one applies; it reports whether this
// call did. Revocation is not retroactive: a transfer already checked
// under the mandate is not undone. A sub-mandate stops working too, since
// every check walks the chain. Missing: MANDATE_NOT_FOUND.
func (ms *Mandates) Revoke(ctx context.Context, id, actor string) (bool, error) {
	if err := CheckID(id); err != nil {
		return false, err
	}
	var applied bool
	err := ms.db.Write(ctx, func(tx *store.Tx) error {
		if _, err := GetTx(ctx, tx, id); err != nil {
			return err
		}
		res, err := entitystate.Transition(ctx, tx, ms.clk, entitystate.Change{EntityType: EntityType, EntityID: id,
			From: []string{StatusActive}, To: StatusRevoked, EventType: EventRevoked, Actor: actor,
			Set: []entitystate.Assign{{Column: "revoked_at", Value: clock.Stamp(ms.clk.Now())}}})
		applied = res.Applied
		return err
	})
	return applied, err
}

// Get reads one mandate; a missing one is MANDATE_NOT_FOUND.
func (ms *Mandates) Get(ctx context.Context, id string) (Mandate, error) {
	var m Mandate
	err := ms.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		m, err = GetTx(ctx, tx, id)
		return err
	})
	return m, err
}

// GetTx is Get in the caller's transaction.
func GetTx(ctx context.Context, tx *store.Tx, id string) (Mandate, error) {
	var m Mandate
	var parent, to, rev sql.NullString
	var maxAmt sql.NullInt64
	var purposes, lanes string
	err := tx.QueryRowContext(ctx, `SELECT mandate_id, parent_mandate_id, payer_bank_id, grantee_ref, status, max_amount,
		allowed_purposes, allowed_lanes, valid_from, valid_to, revoked_at, created_at FROM Mandate WHERE mandate_id = ?`, id).
		Scan(&m.MandateID, &parent, &m.PayerBankID, &m.GranteeRef, &m.Status, &maxAmt, &purposes, &lanes, &m.ValidFrom, &to, &rev, &m.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return m, domainerr.New("MANDATE_NOT_FOUND", "mandate "+id+" does not exist", map[string]any{"mandate_id": id})
	}
	if err != nil {
		return m, fmt.Errorf("mandate: read %s: %w", id, err)
	}
	m.ParentMandateID, m.ValidTo, m.RevokedAt = parent.String, to.String, rev.String
	if maxAmt.Valid {
		v := maxAmt.Int64
		m.MaxAmount = &v
	}
	if err := json.Unmarshal([]byte(purposes), &m.AllowedPurposes); err != nil {
		return m, fmt.Errorf("mandate: %s allowed_purposes: %w", id, err)
	}
	if err := json.Unmarshal([]byte(lanes), &m.AllowedLanes); err != nil {
		return m, fmt.Errorf("mandate: %s allowed_lanes: %w", id, err)
	}
	return m, nil
}

// Check decides r at the clock's now in a read transaction.
func (ms *Mandates) Check(ctx context.Context, r Request) (Verdict, error) {
	var v Verdict
	err := ms.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		v, err = CheckTx(ctx, tx, r, ms.clk.Now())
		return err
	})
	return v, err
}

// CheckTx decides r at now in the caller's transaction by walking the
// chain from r's mandate to its root; every link must hold (spec 004):
// exist (MANDATE_NOT_FOUND, also for a missing ancestor), not be revoked
// at now (MANDATE_REVOKED), have now in [valid_from, valid_to)
// (MANDATE_EXPIRED), and allow r's payer, amount, purpose and lane
// (MANDATE_BREACH). The first failing link decides; links after it are
// not read. A refusal is a Verdict, not an error; errors are the
// database's (and INVALID_MANDATE_ID for a malformed id).
func CheckTx(ctx context.Context, tx *store.Tx, r Request, now time.Time) (Verdict, error) {
	v := Verdict{Links: []Link{}, CheckedAt: clock.Stamp(now)}
	if err := CheckID(r.MandateID); err != nil {
		return v, err
	}
	at := clock.Stamp(now)
	refuse := func(id, code, why string) (Verdict, error) {
		v.Links = append(v.Links, Link{MandateID: id, ReasonCode: code, Why: why})
		v.ReasonCode, v.Why = code, id+": "+why
		return v, nil
	}
	id := r.MandateID
	for range MaxChain {
		m, err := GetTx(ctx, tx, id)
		if domainerr.Has(err, "MANDATE_NOT_FOUND") {
			return refuse(id, "MANDATE_NOT_FOUND", "no such mandate")
		}
		if err != nil {
			return v, err
		}
		switch {
		case m.RevokedAt != "" && at >= m.RevokedAt:
			return refuse(id, "MANDATE_REVOKED", "revoked at "+m.RevokedAt)
		case at < m.ValidFrom || (m.ValidTo != "" && at >= m.ValidTo):
			return refuse(id, "MANDATE_EXPIRED", fmt.Sprintf("now %s is outside [%s, %s)", at, m.ValidFrom, orOpen(m.ValidTo)))
		case m.PayerBankID != r.PayerBankID:
			return refuse(id, "MANDATE_BREACH", "the transfer's payer "+r.PayerBankID+" is not the mandate's payer "+m.PayerBankID)
		case m.MaxAmount != nil && r.Amount > *m.MaxAmount:
			return refuse(id, "MANDATE_BREACH", fmt.Sprintf("amount %d exceeds max_amount %d", r.Amount, *m.MaxAmount))
		case len(m.AllowedPurposes) > 0 && !slices.Contains(m.AllowedPurposes, r.Purpose):
			return refuse(id, "MANDATE_BREACH", fmt.Sprintf("purpose %q is not in %v", r.Purpose, m.AllowedPurposes))
		case len(m.AllowedLanes) > 0 && !slices.Contains(m.AllowedLanes, r.Lane):
			return refuse(id, "MANDATE_BREACH", fmt.Sprintf("lane %q is not in %v", r.Lane, m.AllowedLanes))
		}
		v.Links = append(v.Links, Link{MandateID: id, OK: true, Why: "within scope"})
		if m.ParentMandateID == "" {
			v.Allowed, v.Why = true, fmt.Sprintf("every link of the %d-link chain allows the transfer", len(v.Links))
			return v, nil
		}
		id = m.ParentMandateID
	}
	return refuse(id, "MANDATE_BREACH", fmt.Sprintf("the delegation chain is longer than %d links", MaxChain))
}

func orOpen(s string) string {
	if s == "" {
		return "open"
	}
	return s
}
