// Package hlimit owns the H model (spec 003 Participants,
// HReservations, ParticipantCurrencyLimits): reserving and releasing a
// participant's liquidity H with single guarded UPDATEs of the
// materialized counter h_used (h_used + amount <= h_limit), one
// HReservations row per reservation, JPY against Participants and every
// other currency against ParticipantCurrencyLimits; the per-participant
// daily amount limit with its lazy reset by JST business date; and the
// reconciliation of h_used against the sum of unreleased reservations.
//
// Reservations are released exactly once (the release is guarded on
// is_released = 0), by reservation or for a whole transaction
// (ReleaseForTx, which lane primitives call inside their own transaction).
//
// It imports only coordinator/store, clock, domainerr and zclog. It must
// not write Transactions or FinalityLog (the lane primitives do), and
// no other package may write h_used or HReservations.
package hlimit
