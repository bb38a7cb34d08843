// Package adapter is the bank-side layer in front of each legacy core: one
// Adapter per bank serves the 13 ZC-to-bank ingress commands
// (coordinator/bankapi types; Go functions and an HTTP handler), keeps a
// shadow ledger per account in its own SQLite database, queues every
// approved posting in the outbox in the same transaction as the shadow
// change and the idempotency completion (coordinator/idem claim on
// request_id), compensates failed legs with reversal postings linked by
// txid, and reconciles the shadow with the core, opening a real Case
// (coordinator/cases, through outbox.CaseOpener) for every drift. It
// reaches the core only through the outbox (postings) and an Inquirer
// (balance and name inquiries), both carried by adapter/corelink over the
// MQ transport (adapter/mq) with fixed-length messages (formats/coremsg),
// and reads the core balance file (formats/corebalance) the core writes in
// its batch window, for the end-of-day reconciliation of every account in
// one streaming pass. See docs/adapter.md.
//
// It must not import gateway or jobs, must never open or write the core's
// database, and must not write coordinator tables: it reaches the
// coordinator only through its public APIs (coordinator/cases to open a
// Case, coordinator/idem on its own copy of IdempotencyKeys).
package adapter
