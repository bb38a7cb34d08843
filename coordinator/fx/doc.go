// Package fx owns cross-currency FX (spec 001 ch. 17, 003 FxQuotes,
// FxTransfers, FxLegLocks, 004 FX_* codes): the FX providers' (FXP) rate
// market with expiry, the best-route search (direct or through one bridge
// currency), and the conduit transfer: payer -> FXP in the source
// currency, FXP -> payee in the target currency (one more leg per bridge
// hop), so each currency balances on both sides and no single leg is an
// "economically incomplete" FX posting.
//
// A transfer is locked first (bind_htlc, 001 §17.4): every leg gets an
// FxLegLocks row under one shared hashlock with a staggered timelock (the
// upstream leg expires last), and the paying side of each leg reserves its
// H in the leg's currency (coordinator/hlimit: JPY against Participants,
// every other currency against ParticipantCurrencyLimits). The conduit
// GTID is registered at the same time in GT_RECEIVED with its legs, so the
// lock, the claim and the refund are all on the GTID's FinalityLog chain
// (no FX-only event types, 001 §17.1).
//
// Claim (the secret whose SHA-256 is the hashlock, before the transfer's
// expiry) moves every leg lock LOCKED -> CLAIMED with guarded updates and
// decides the GTID in the same write transaction; the legs then settle
// through the banks' adapters and cores like any transfer. Refund (after
// the timelock, or by the expiry sweep) moves every leg LOCKED -> REFUNDED,
// releases the H and cancels the GTID. Claim and refund exclude each other
// by the CAS on FxTransfers.status: exactly one of them applies.
//
// It imports coordinator packages only (lane, hlimit, finality, store,
// clock, domainerr, uuid, zclog) and never gateway, adapter, outbox, jobs or
// formats. It never writes GtidTransactions, GtidLegs or Transactions
// itself: only through coordinator/lane.
package fx
