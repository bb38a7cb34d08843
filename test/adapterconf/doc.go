// Package adapterconf is the conformance suite of the legacy core adapter
// (spec 001 §18.2, issue 4): every behaviour the spec fixes, run against
// the real pieces — adapter + outbox + a simulated non-idempotent core
// (adapter/coresim, its own database) reachable only over the real
// embedded MQ transport (adapter/mq/embedded) through adapter/corelink —
// then the cases of a physically separate core (reply lost, reply late,
// crash after apply, broker redelivery, poison message) and a seeded
// randomized fault-schedule test (ZCGW_SEED replays a run).
//
// After every case the suite checks that the shadow ledger's core balance
// equals the core's own balance for every account, and that no posting
// reference was journalled twice.
//
// The package has no non-test code besides this comment; it must not be
// imported.
package adapterconf
