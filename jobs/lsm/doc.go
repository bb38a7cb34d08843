// Package lsm is the liquidity-saving mechanism of the BULK and DEFERRED
// windows (spec 001 ch. 14): a deterministic solver that, given the
// candidates snapshotted at a window's close and the constraints (each
// payer's available H, due horizon, stopped participants), proposes the set
// to execute under the lexicographic objective (1) due dates, (2) fairness,
// (3) throughput; the mandatory fallbacks FIFO, PRIORITY and THROTTLE; and
// the audit record of every run (LsmRuns with input_snapshot_id,
// constraints_digest, execution_set_hash, trace_digest and the objective
// metrics, plus the snapshot itself in LsmSnapshots) from which Reproduce
// re-derives the same execution set.
//
// The solver proposes; it never decides. Acceptance is the H reservation
// commit made by the caller (jobs/batchwindow), and a candidate that is
// not chosen is deferred to the next window, never rejected.
//
// Solve is a pure function of its input (no clock, no map iteration order,
// no randomness). The package imports coordinator/store, finality, clock and
// domainerr only.
package lsm
