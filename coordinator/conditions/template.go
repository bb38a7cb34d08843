package conditions

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
	"github.com/zcgw/zcgw/coordinator/ident"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Template statuses (ConditionTemplate.status): only ACTIVE templates are
// whitelisted.
const (
	TemplateActive   = "ACTIVE"
	TemplateInactive = "INACTIVE"
)

// DefaultAttestationTTL is how long an attestation stays fresh after its
// occurred_at unless its template says otherwise (spec 000 §11.2-b: 60
// minutes).
const DefaultAttestationTTL = 60 * time.Minute

// Template is one ConditionTemplate row: a whitelisted condition that
// either external attesters sign (AllowedAttesterScope, MinAttesterQuorum,
// AttestationTTL) or ZC resolves itself (LedgerPredicate, and then no
// attester may sign it: the scope is empty, fail-closed).
type Template struct {
	TemplateID  string `json:"template_id"`
	Status      string `json:"status"`
	Description string `json:"description,omitempty"`
	// AllowedAttesterScope lists the attester operators
	// (KeyRegistry.owner_ref of keys with owner_type ATTESTER) whose
	// attestations count.
	AllowedAttesterScope []string `json:"allowed_attester_scope"`
	// MinAttesterQuorum is how many distinct operators must attest PASS
	// (default 1).
	MinAttesterQuorum int `json:"min_attester_quorum"`
	// AttestationTTLSeconds is how long an attestation stays fresh
	// (default 3600).
	AttestationTTLSeconds int64      `json:"attestation_ttl_seconds"`
	LedgerPredicate       *Predicate `json:"ledger_predicate,omitempty"`
	CreatedAt             string     `json:"created_at,omitempty"`
}

// TTL is the template's attestation freshness.
func (t Template) TTL() time.Duration { return time.Duration(t.AttestationTTLSeconds) * time.Second }

// Templates reads and writes ConditionTemplate.
type Templates struct {
	db  *store.DB
	clk clock.Clock
}

// NewTemplates returns Templates on the coordinator database (clk nil:
// system clock).
func NewTemplates(db *store.DB, clk clock.Clock) *Templates {
	if clk == nil {
		clk = clock.System{}
	}
	return &Templates{db: db, clk: clk}
}

// normalize checks t and fills its defaults.
func (t *Template) normalize() error {
	if err := ident.Check(ident.ClientRef, "template_id", t.TemplateID); err != nil {
		return err
	}
	if t.TemplateID == "" || len(t.TemplateID) > MaxTemplateLen {
		return domainerr.New("MISSING_FIELD", fmt.Sprintf("template_id is required (1..%d characters)", MaxTemplateLen), map[string]any{"field": "template_id"})
	}
	if t.Status == "" {
		t.Status = TemplateActive
	}
	if t.Status != TemplateActive && t.Status != TemplateInactive {
		return domainerr.New("INVALID_REQUEST", "status must be ACTIVE or INACTIVE", map[string]any{"field": "status", "value": t.Status})
	}
	if t.MinAttesterQuorum == 0 {
		t.MinAttesterQuorum = 1
	}
	if t.AttestationTTLSeconds == 0 {
		t.AttestationTTLSeconds = int64(DefaultAttestationTTL / time.Second)
	}
	if t.MinAttesterQuorum < 1 || t.AttestationTTLSeconds < 1 {
		return domainerr.New("INVALID_REQUEST", "min_attester_quorum and attestation_ttl_seconds must be positive",
			map[string]any{"field": "min_attester_quorum", "value": t.MinAttesterQuorum})
	}
	if t.LedgerPredicate != nil {
		if err := t.LedgerPredicate.Check(); err != nil {
			return err
		}
		if len(t.AllowedAttesterScope) > 0 {
			return domainerr.New("INVALID_REQUEST", "a ledger-predicate template takes no attester (allowed_attester_scope must be empty)",
				map[string]any{"field": "allowed_attester_scope"})
		}
	} else if len(t.AllowedAttesterScope) < t.MinAttesterQuorum {
		return domainerr.New("INVALID_REQUEST", "allowed_attester_scope must name at least min_attester_quorum operators",
			map[string]any{"field": "allowed_attester_scope", "min_attester_quorum": t.MinAttesterQuorum})
	}
	for _, s := range t.AllowedAttesterScope {
		if strings.TrimSpace(s) == "" {
			return domainerr.New("INVALID_REQUEST", "an attester operator must not be empty", map[string]any{"field": "allowed_attester_scope"})
		}
	}
	if t.AllowedAttesterScope == nil {
		t.AllowedAttesterScope = []string{}
	}
	slices.Sort(t.AllowedAttesterScope)
	t.AllowedAttesterScope = slices.Compact(t.AllowedAttesterScope)
	return nil
}

// Register stores a new template. An existing template_id is CONFLICT
// (INVALID_REQUEST naming the field): a template is never replaced in
// place, since expressions already written refer to it; use SetStatus to
// withdraw it.
func (ts *Templates) Register(ctx context.Context, t Template) (Template, error) {
	if err := t.normalize(); err != nil {
		return t, err
	}
	t.CreatedAt = clock.Stamp(ts.clk.Now())
	scope, _ := json.Marshal(t.AllowedAttesterScope)
	var pred sql.NullString
	if t.LedgerPredicate != nil {
		b, _ := json.Marshal(t.LedgerPredicate)
		pred = sql.NullString{String: string(b), Valid: true}
	}
	err := ts.db.Write(ctx, func(tx *store.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO ConditionTemplate (template_id, status, description, allowed_attester_scope,
			min_attester_quorum, attestation_ttl_seconds, ledger_predicate_json, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (template_id) DO NOTHING`,
			t.TemplateID, t.Status, t.Description, string(scope), t.MinAttesterQuorum, t.AttestationTTLSeconds, pred, t.CreatedAt, t.CreatedAt)
		if err != nil {
			return fmt.Errorf("conditions: insert template %s: %w", t.TemplateID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domainerr.New("INVALID_REQUEST", "template "+t.TemplateID+" already exists", map[string]any{"field": "template_id", "value": t.TemplateID})
		}
		return nil
	})
	return t, err
}

// SetStatus withdraws (INACTIVE) or restores (ACTIVE) a template.
func (ts *Templates) SetStatus(ctx context.Context, templateID, status string) error {
	if status != TemplateActive && status != TemplateInactive {
		return domainerr.New("INVALID_REQUEST", "status must be ACTIVE or INACTIVE", map[string]any{"field": "status", "value": status})
	}
	return ts.db.Write(ctx, func(tx *store.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE ConditionTemplate SET status = ?, updated_at = ? WHERE template_id = ?`,
			status, clock.Stamp(ts.clk.Now()), templateID)
		if err != nil {
			return fmt.Errorf("conditions: update template %s: %w", templateID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notWhitelisted(templateID)
		}
		return nil
	})
}

func notWhitelisted(id string) error {
	return domainerr.New("TEMPLATE_NOT_WHITELISTED", "condition template "+id+" does not exist or is not ACTIVE", map[string]any{"template_id": id})
}

// Get reads one template in its own read transaction; a missing one is
// TEMPLATE_NOT_WHITELISTED (an INACTIVE one is returned: callers check
// Status).
func (ts *Templates) Get(ctx context.Context, id string) (Template, error) {
	var t Template
	err := ts.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		t, err = GetTemplateTx(ctx, tx, id)
		return err
	})
	return t, err
}

// GetTemplateTx is Get in the caller's transaction.
func GetTemplateTx(ctx context.Context, tx *store.Tx, id string) (Template, error) {
	var t Template
	var desc, pred sql.NullString
	var scope string
	err := tx.QueryRowContext(ctx, `SELECT template_id, status, description, allowed_attester_scope, min_attester_quorum,
		attestation_ttl_seconds, ledger_predicate_json, created_at FROM ConditionTemplate WHERE template_id = ?`, id).
		Scan(&t.TemplateID, &t.Status, &desc, &scope, &t.MinAttesterQuorum, &t.AttestationTTLSeconds, &pred, &t.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return t, notWhitelisted(id)
	}
	if err != nil {
		return t, fmt.Errorf("conditions: read template %s: %w", id, err)
	}
	t.Description = desc.String
	if err := json.Unmarshal([]byte(scope), &t.AllowedAttesterScope); err != nil {
		return t, fmt.Errorf("conditions: template %s allowed_attester_scope: %w", id, err)
	}
	if pred.Valid {
		p, err := ParsePredicate([]byte(pred.String))
		if err != nil {
			return t, fmt.Errorf("conditions: template %s ledger_predicate_json: %w", id, err)
		}
		t.LedgerPredicate = &p
	}
	return t, nil
}
