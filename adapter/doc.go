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
// Each adapter also serves its bank's own customers and tellers (spec 004
// Bank 顧客API / 行員API / 着金フィルタAPI; BankRoutes, BankAPI): balances by
// inquiry, cash and suspense postings through the same outbox, and the
// incoming-transfer filters execute-credit runs, whose held credits are
// decided here and told to ZC through a CreditResumer. See
// docs/bank-api.md.
//
// It must not import gateway or jobs, must never open or write the core's
// database, and must not write coordinator tables: it reaches the
// coordinator only through its public APIs (coordinator/cases to open a
// Case, coordinator/idem on its own copy of IdempotencyKeys).
package adapter
