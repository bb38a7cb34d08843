// Package storeconf is the store conformance suite: every component's
// schema and the store's guarantees as the packages above it rely on
// them (lane CAS and log atomicity, owner check, chains, idempotency, H
// reservations, the outbox claim, the job ledger's lease and fencing),
// run against each backend (coordinator/store/storetest: SQLite always,
// PostgreSQL when reachable, required in CI) through the packages' public
// APIs, racing goroutines on two handles of one database. The table of
// scenarios is in docs/storage.md.
package storeconf
