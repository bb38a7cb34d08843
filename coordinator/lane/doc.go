// Package lane owns the lane primitives (spec 000 ch. 4-5): the only code
// that inserts Transactions rows, writes Transactions.state or writes
// Transactions.owner (TestOnlyLaneWritesStateAndOwner enforces this over
// the whole module, with the two DNS bulk handoff sites of spec 000 §5.2
// whitelisted by path: DNSKickSite and DNSSettleSite).
//
// Each primitive — InsertTxWithLog, TransitionWithLog, CancelInFlightTx,
// TransferOwnership, SuspendTx — is one write transaction that:
//
//  1. checks the transition table (ALLOWED_TRANSITIONS / EntryStates over
//     TxState); there is no bypass;
//  2. passes the writable gate (coordinator/sysmode);
//  3. reads state, version and owner, and refuses an issuer that is not
//     the owner with OWNERSHIP_VIOLATION (SuspendTx skips and logs);
//  4. runs a CAS UPDATE guarded by state, version and owner;
//  5. only when the CAS applied: appends the FinalityLog entry and runs
//     the caller's side updates.
//
// Any error rolls all of it back. The ...InTx variants run the same steps
// inside a caller's transaction so a batch can commit many transitions at
// once. The GTID state machine (ALLOWED_GTID_TRANSITIONS) lives here too.
//
// It imports coordinator/store, finality, sysmode, hlimit, clock and domainerr
// only; never gateway, adapter, outbox, jobs or formats.
package lane
