// Package coresim is a simulated legacy core banking system, one per bank,
// with its own SQLite database (accounts, journal lines carrying txid and
// posting reference, refusals, holds, notifications). It is reachable only
// through an MQ transport (it serves a request queue of formats/coremsg
// fixed-length messages and replies with CorrelID = request MsgID) and
// through overnight posting files; it writes the core balance file
// (formats/corebalance, WriteBalanceFile / DropBalanceFile) of every
// account's balance for the end-of-day reconciliation.
//
// It behaves like the cores zcgw must live with:
//   - it is deliberately NOT idempotent: the same posting sent twice (two
//     messages) is applied twice; it answers inquiries by reference so the
//     sender can find out what happened;
//   - it refuses overdrafts (the balance never goes negative);
//   - it has online windows; while offline it takes nothing off its queue
//     and replies to nothing (messages wait on the queue);
//   - it serves its request queue with one consumer, in arrival order, so
//     an inquiry is answered only after every request put before it.
//
// Its MQ bridge commits the get of a request together with the ledger
// change it caused (as a CICS/IMS bridge does with syncpoint coordination):
// the MsgID of every processed request is stored in the same core
// transaction, so a redelivery of the same message (broker redelivery,
// crash before the get was committed) is answered from the stored result
// and not applied again. That is transport-level once-only delivery, not
// business idempotency: a resend is a new message and is applied again.
//
// Its Go methods (OpenAccount, Post, Lookup, Balance, Journal, ...) set up
// and inspect the core for tests and tools; the adapter reaches the core
// only through the transport (adapter/corelink). Fault injection
// (InjectFaultsForTest, AdjustBalanceOutOfBand) exists for tests and is
// named as such. The package must not import the adapter, the outbox,
// gateway or jobs: it knows nothing of who calls it.
package coresim
