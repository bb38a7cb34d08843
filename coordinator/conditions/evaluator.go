package conditions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Leaf sources (LeafResult.Source).
const (
	SourceAssumed         = "ASSUMED"
	SourceAttestation     = "ATTESTATION"
	SourceLedgerPredicate = "LEDGER_PREDICATE"
	SourceNotWhitelisted  = "NOT_WHITELISTED"
)

// Inputs are what one evaluation is about.
type Inputs struct {
	// Subject is what the attestations are about (the HTLC id, the txid
	// ...): attestation leaves count the recorded attestations of
	// (template, Subject).
	Subject string
	// Assume, when not nil, makes the evaluation a pure dry run over a
	// hypothetical set (POST /api/conditions/simulate): a leaf is true
	// exactly when its template id is in Assume, and nothing is read.
	Assume []string
}

// Decision is what an expression decided: Allowed (the root's value),
// Reasons (every clause's value and why, in pre-order; Reasons[0] is the
// root), the templates that were satisfied and missing, the templates
// whose attestations equivocate (the caller opens the
// ATTESTATION_EQUIVOCATION CASE) and the instant used (UTC stamp and JST).
type Decision struct {
	Allowed        bool           `json:"allowed"`
	Reasons        []ClauseResult `json:"reasons"`
	Satisfied      []string       `json:"satisfied"`
	Missing        []string       `json:"missing"`
	Equivocated    []string       `json:"equivocated"`
	EvaluatedAt    string         `json:"evaluated_at"`
	EvaluatedAtJST string         `json:"evaluated_at_jst"`
}

// Evaluator evaluates condition expressions deterministically: its only
// inputs are the expression, the committed attestations and FinalityLog
// entries it reads, and the clock's now, which it reads once per
// evaluation. It never writes.
type Evaluator struct {
	db     *store.DB
	clk    clock.Clock
	ledger Ledger // nil: FinalityLog read in the evaluation's transaction
}

// NewEvaluator returns an Evaluator on the coordinator database (clk nil:
// system clock). ledger nil, the usual case, reads the *_REACHED_STATE
// predicates from FinalityLog in the same read transaction as the
// templates and attestations, so every leaf of one evaluation sees one
// snapshot; another Ledger is asked separately.
func NewEvaluator(db *store.DB, clk clock.Clock, ledger Ledger) *Evaluator {
	if clk == nil {
		clk = clock.System{}
	}
	return &Evaluator{db: db, clk: clk, ledger: ledger}
}

// txLedger is Ledger inside one read transaction.
type txLedger struct{ tx *store.Tx }

func (l txLedger) ReachedState(ctx context.Context, kind PredicateType, id string, states []string) (string, error) {
	return ReachedStateTx(ctx, l.tx, kind, id, states)
}

// Invalid wraps a parse failure as CONDITION_EXPR_INVALID, carrying the
// offset, token and why in the details (errors.As still finds the
// *ParseError).
func Invalid(err error) error {
	var pe *ParseError
	if errors.As(err, &pe) {
		return domainerr.Wrap("CONDITION_EXPR_INVALID", err, pe.Error(),
			map[string]any{"offset": pe.Offset, "token": pe.Token, "why": pe.Why})
	}
	return domainerr.Wrap("CONDITION_EXPR_INVALID", err, err.Error(), nil)
}

// Evaluate parses expr and decides it. A malformed expression is
// CONDITION_EXPR_INVALID (wrapping the *ParseError); a template that is
// missing or not ACTIVE makes its leaf false (fail-closed) and is not an
// error; a database failure is.
func (e *Evaluator) Evaluate(ctx context.Context, expr string, in Inputs) (Decision, error) {
	x, err := Parse([]byte(expr))
	if err != nil {
		return Decision{}, Invalid(err)
	}
	return e.EvaluateExpr(ctx, x, in)
}

// EvaluateExpr decides an already parsed expression.
func (e *Evaluator) EvaluateExpr(ctx context.Context, x *Expr, in Inputs) (Decision, error) {
	now := e.clk.Now()
	leaves := map[string]LeafResult{}
	if in.Assume != nil {
		set := map[string]bool{}
		for _, id := range in.Assume {
			set[id] = true
		}
		for _, id := range x.Templates() {
			why := "not in the assumed set"
			if set[id] {
				why = "in the assumed set"
			}
			leaves[id] = LeafResult{Source: SourceAssumed, Satisfied: set[id], Why: why}
		}
	} else if err := e.db.Read(ctx, func(tx *store.Tx) error {
		for _, id := range x.Templates() {
			lr, err := e.leaf(ctx, tx, id, in.Subject, now)
			if err != nil {
				return err
			}
			leaves[id] = lr
		}
		return nil
	}); err != nil {
		return Decision{}, err
	}
	allowed, reasons := x.Eval(func(id string) LeafResult { return leaves[id] })
	d := Decision{Allowed: allowed, Reasons: reasons, Satisfied: []string{}, Missing: []string{}, Equivocated: []string{},
		EvaluatedAt: clock.Stamp(now), EvaluatedAtJST: now.In(clock.JST).Format(time.RFC3339)}
	for _, id := range x.Templates() {
		lr := leaves[id]
		if lr.Satisfied {
			d.Satisfied = append(d.Satisfied, id)
		} else {
			d.Missing = append(d.Missing, id)
		}
		if lr.Equivocated {
			d.Equivocated = append(d.Equivocated, id)
		}
	}
	return d, nil
}

// leaf resolves one template at now inside the evaluation's read
// transaction.
func (e *Evaluator) leaf(ctx context.Context, tx *store.Tx, id, subject string, now time.Time) (LeafResult, error) {
	tpl, err := GetTemplateTx(ctx, tx, id)
	if domainerr.Has(err, "TEMPLATE_NOT_WHITELISTED") {
		return LeafResult{Source: SourceNotWhitelisted, Why: "TEMPLATE_NOT_WHITELISTED: no such template"}, nil
	}
	if err != nil {
		return LeafResult{}, err
	}
	if tpl.Status != TemplateActive {
		return LeafResult{Source: SourceNotWhitelisted, Why: "TEMPLATE_NOT_WHITELISTED: template is " + tpl.Status}, nil
	}
	if p := tpl.LedgerPredicate; p != nil {
		var l Ledger = txLedger{tx}
		if e.ledger != nil {
			l = e.ledger
		}
		v, err := p.Resolve(ctx, l, now)
		if err != nil {
			return LeafResult{}, err
		}
		return LeafResult{Source: SourceLedgerPredicate, Satisfied: v.Value, Why: predicateWhy(v), Predicate: &v}, nil
	}
	q, err := QuorumTx(ctx, tx, tpl, subject, now)
	if err != nil {
		return LeafResult{}, err
	}
	lr := LeafResult{Source: SourceAttestation, Quorum: &q, Equivocated: q.Equivocated}
	switch {
	case q.Equivocated:
		lr.Why = fmt.Sprintf("ATTESTATION_EQUIVOCATION: PASS from %v and FAIL from %v (fail-closed)", q.Pass, q.Fail)
	case len(q.Pass) >= q.Required:
		lr.Satisfied = true
		lr.Why = fmt.Sprintf("%d of %d required distinct attester operators attested PASS", len(q.Pass), q.Required)
	default:
		lr.Why = fmt.Sprintf("%d of %d required distinct attester operators attested PASS", len(q.Pass), q.Required)
	}
	return lr, nil
}

func predicateWhy(v PredicateValue) string {
	p := v.Predicate
	switch p.Type {
	case TxReachedState, GtidReachedState:
		id := p.TxID + p.GTID
		if v.Value {
			return fmt.Sprintf("%s %s reached %s", p.Type, id, v.ReachedState)
		}
		return fmt.Sprintf("%s %s has not reached any of %v", p.Type, id, p.States)
	case TimeAfter:
		return fmt.Sprintf("TIME_AFTER %s: now %s >= at is %t", p.At, v.EvaluatedAtJST, v.Value)
	default:
		return fmt.Sprintf("TIME_BEFORE %s: now %s < at is %t", p.At, v.EvaluatedAtJST, v.Value)
	}
}

// TemplateRef is one template an expression references, as Validate
// found it.
type TemplateRef struct {
	TemplateID string `json:"template_id"`
	// Kind is ATTESTATION, LEDGER_PREDICATE or NOT_WHITELISTED.
	Kind   string `json:"kind"`
	Status string `json:"status,omitempty"`
}

// Validation is POST /api/conditions/validate's answer.
type Validation struct {
	Valid     bool          `json:"valid"`
	Depth     int           `json:"depth"`
	Templates []TemplateRef `json:"templates"`
}

// Validate checks expr's structure (CONDITION_EXPR_INVALID) and lists the
// templates it references with what each is; a template that is not
// whitelisted is listed as NOT_WHITELISTED (its leaf would be false).
func (e *Evaluator) Validate(ctx context.Context, expr string) (Validation, error) {
	x, err := Parse([]byte(expr))
	if err != nil {
		return Validation{}, Invalid(err)
	}
	v := Validation{Valid: true, Depth: x.Depth(), Templates: []TemplateRef{}}
	err = e.db.Read(ctx, func(tx *store.Tx) error {
		for _, id := range x.Templates() {
			tpl, err := GetTemplateTx(ctx, tx, id)
			switch {
			case domainerr.Has(err, "TEMPLATE_NOT_WHITELISTED"):
				v.Templates = append(v.Templates, TemplateRef{TemplateID: id, Kind: SourceNotWhitelisted})
				continue
			case err != nil:
				return err
			}
			kind := SourceAttestation
			if tpl.LedgerPredicate != nil {
				kind = SourceLedgerPredicate
			}
			if tpl.Status != TemplateActive {
				kind = SourceNotWhitelisted
			}
			v.Templates = append(v.Templates, TemplateRef{TemplateID: id, Kind: kind, Status: tpl.Status})
		}
		return nil
	})
	return v, err
}
