// Package conditions evaluates the condition expressions of spec 000
// ch. 11 and 001 §15.5 deterministically: a pure Boolean composition
// (AND, OR, THRESHOLD k-of-n) over ConditionTemplate leaves, each leaf
// satisfied either by a distinct-operator quorum of fresh, signed PASS
// attestations from external attesters, or by a deterministic ledger
// predicate ZC resolves itself (TX_REACHED_STATE, GTID_REACHED_STATE on
// the committed FinalityLog; TIME_AFTER, TIME_BEFORE on the injectable
// clock, an offset-less instant read as JST per §11.4).
//
// The entry point other packages call (the HTLC claim-by-conditions path
// declares a one-method interface it satisfies):
//
//	func (e *Evaluator) Evaluate(ctx context.Context, expr string, in Inputs) (Decision, error)
//
// expr is the expression JSON (HtlcContracts.condition_expr_json); in.Subject
// is what the attestations are about (the HTLC id). Decision.Allowed is the
// root's value; Decision.Reasons lists every clause (path, kind, value,
// why, and for a leaf how it was resolved: quorum or predicate value);
// Satisfied / Missing / Equivocated list the templates; EvaluatedAt is the
// one clock read used, to be recorded with the decision (HtlcConditionsEvaluated
// in the FinalityLog) so a TIME_BEFORE outcome can be replayed. Errors:
// CONDITION_EXPR_INVALID wrapping a *ParseError (Offset, Token, Why) for a
// malformed expression; a database failure. A missing, INACTIVE or
// equivocated template is not an error: its leaf is false (fail-closed).
// Evaluate never writes; the caller that acts on a Decision opens the
// ATTESTATION_EQUIVOCATION Cases with OpenEquivocationCasesTx in the
// transaction that records it (one Case per template and subject).
//
// The other parts:
//   - Parse: the expression grammar with typed positioned errors and
//     structural limits (MaxDepth, MaxOperands, MaxTemplates);
//   - Templates: the ConditionTemplate whitelist;
//   - Attestations.Record (recordAttestation): form, template, KeyRegistry
//     key (owner_type ATTESTER, in the template's scope, usable), the
//     Ed25519 signature over the FIXED canonicalisation (coordinator/signing)
//     of SignedPointers, skew and freshness; each (key_id, nonce) once;
//   - Evaluator.Validate and Inputs.Assume: the read-only dry runs of
//     POST /api/conditions/validate and /simulate.
//
// It imports coordinator/store, cases, clock, domainerr, ident, params,
// signing and strictjson only. docs/programmability.md has the grammar and the
// decisions.
package conditions
