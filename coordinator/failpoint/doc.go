// Package failpoint lets a test process die at a named point of the code,
// so a crash can be made to land exactly between two durable records (the
// adapter's and the coordinator's, a group commit and its callers' answers)
// instead of only wherever a timer happens to fire.
//
// A call site is one line, failpoint.Hit("adapter.after-record"). Points
// are armed only by the environment of the process, read once at start:
//
//	ZCGW_FAILPOINTS="adapter.after-record=kill@0.01;store.after-group-commit=kill#40"
//	ZCGW_FAILPOINT_SEED=42
//
// kill@P kills the process with probability P at each hit (a math/rand/v2
// PCG seeded with ZCGW_FAILPOINT_SEED, so one process's sequence of
// decisions is reproducible); kill#N kills it at the N-th hit of that
// point. Killing is SIGKILL to itself: no deferred function, no buffered
// write, no graceful close runs, exactly as when the machine loses the
// process. Before dying it writes one line naming the point and the hit
// count to stderr ("failpoint: kill at adapter.after-record hit 7").
//
// Unarmed (the variable unset, as in production), Hit is one nil check.
// A malformed ZCGW_FAILPOINTS makes Hit panic at its first call with the
// entry and why: a chaos run must not silently run without its faults.
//
// The points placed in zcgw and what each one interrupts are listed in
// docs/chaos.md. This is shared infrastructure: it imports nothing of zcgw.
package failpoint
