// Package coordinator is the settlement coordinator ("ZC"): it decides and
// records every transfer. Its sub-packages own the store and schema
// (store), the lane primitives and state machines (lane), the hash-chained
// FinalityLog (finality), idempotency keys (idem), liquidity reservations
// (hlimit), cases and entity state history (cases), system read-only modes
// (sysmode), structured errors (domainerr), logging (zclog) and the clock.
//
// It must not import gateway, adapter, outbox, jobs or formats: those
// packages use the coordinator, never the other way round. A test in
// test/ enforces this direction.
package coordinator
