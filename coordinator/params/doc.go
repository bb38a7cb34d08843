// Package params owns the PR-* parameter ledger (spec 002 §12.7-§12.9):
// the one declared registry of the regulated parameters zcgw reads (name,
// kind and unit, bounds, default, which component reads it), their current
// values in the ParameterLedger table, and the one way to change them.
//
// A value nobody has changed is the registry's default (the value that
// used to be hard-coded in the reading component). Readers read the
// current value at use time, inside their own transaction (GetTx) or in a
// read transaction (Get), so a change applies from the next use without a
// restart and without an in-process cache to invalidate.
//
// Per-bank values (the limits h_limit, tx_amount_limit, daily_amount_limit
// and a bank's own hv_threshold) live in their Participants columns, which
// their readers already read; Set with a bank_id is the only writer of
// those columns after registration (participants.UpdateProfile refuses to
// change them).
//
// Ledger.Set is the only writer: a guarded (CAS) update — the caller's old
// value must still be the current one — refused without evidence_ref
// (EVIDENCE_REQUIRED), outside the parameter's bounds or against the
// lease < timeout rule (INVALID_REQUEST), and in a read-only mode; the
// change and its ParameterChanged entry on the GLOBAL chain (old, new,
// evidence_ref, reason, who) commit in the same transaction.
//
// It imports only coordinator/store, coordinator/finality,
// coordinator/sysmode, coordinator/clock and coordinator/domainerr.
package params
