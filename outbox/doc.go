// Package outbox is the claim-then-apply posting outbox between a bank's
// adapter and its non-idempotent core: PENDING -> CLAIMED -> APPLIED, with
// BLOCKED, IN_DOUBT and WRITTEN_OFF, guarded (CAS) claims, in-doubt
// resolution by inquiry and stale-claim recovery.
//
// It must not send anything to a core except through the sender it is
// given, and must not import gateway or jobs.
package outbox
