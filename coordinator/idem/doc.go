// Package idem owns the coordinator's idempotency keys (spec 002 §12.4,
// 003 IdempotencyKeys, 004 冪等性): the fixed key scopes
// TX/GT/LEG/RTP/CASE (and single-use sig: nonces), the atomic claim
// (Acquire is an INSERT first, so exactly one of N racing callers owns a
// key), Complete storing the response, Resolve classifying a retry as
// FRESH, REPLAY, IN_FLIGHT or CONFLICT (IDEMPOTENCY_KEY_CONFLICT when the
// SHA-256 of the body differs), and the sweeps of PROCESSING orphans
// (15 min) and DONE keys (24 h).
//
// Every operation has a form taking *store.Tx, to join the caller's
// transaction, and a convenience form on *store.DB. The clock is injected.
//
// It imports only coordinator/store, clock, domainerr and zclog; it must not
// import lanes, gateway or adapters, and writes no table but IdempotencyKeys.
package idem
