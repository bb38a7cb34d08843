// Package mandate keeps mandates (spec 000 §11.2-e, 004 catalog): a
// payer bank's standing authorisation for an agent (grantee_ref) to send
// its transfers within a scope — a per-transfer max_amount, allowed
// purposes and lanes, a validity [valid_from, valid_to) — delegable as a
// chain of sub-mandates (parent_mandate_id) each of which can only narrow
// its parent.
//
// Mandates.Create stores one (refusing a widening sub-mandate with
// MANDATE_BREACH), Revoke revokes one with a guarded update (racing
// revokes: exactly one applies), and CheckTx decides a Request by walking
// the chain: every link must exist (MANDATE_NOT_FOUND), be unrevoked
// (MANDATE_REVOKED), be valid now (MANDATE_EXPIRED) and allow the payer,
// amount, purpose and lane (MANDATE_BREACH). The orchestrator calls
// CheckTx at precheck for a transfer that cites a mandate_id; the gateway
// serves the same check read-only as POST /api/mandates/check.
//
// Every change is logged in EntityStateLog (entity type MANDATE). The
// package imports only coordinator/store, clock, domainerr, entitystate,
// ident and uuid. docs/programmability.md has the decisions.
package mandate
