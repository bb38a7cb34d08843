// Package outbox is the claim-then-apply posting outbox between a bank's
// adapter and its non-idempotent legacy core (spec 001 §18.1, issue 4).
//
// The adapter enqueues a Posting inside its own transaction (Enqueue). A
// drainer then moves each row PENDING -> CLAIMED with a guarded (CAS)
// UPDATE that also carries a fresh claim token; only the winner of that
// UPDATE sends the posting to the core, and it records the outcome with an
// UPDATE fenced by the same token:
//
//	PENDING -> CLAIMED -> APPLIED      the core applied it
//	                   -> BLOCKED      the core refused it; a Case is opened
//	                   -> IN_DOUBT     sent, no answer within the timeout
//	                   -> PENDING      provably not sent (core offline)
//	IN_DOUBT -> CLAIMED -> (ask the core by reference first) -> APPLIED |
//	                        BLOCKED | resend only if the core has no trace
//	BLOCKED -> PENDING | WRITTEN_OFF   operator decisions (EntityStateLog)
//
// An IN_DOUBT row is never sent again blindly; CLAIMED rows abandoned by a
// crashed drainer go to the same resolution. Postings for one account are
// sent in enqueue order (see docs/outbox.md).
//
// Run is the outbox's own loop (one per bank in a node). Each claim stores
// its owner (coordinator/procid: "<node>/<epoch>/<worker>") and its lease;
// at start Run takes back at once the claims of an earlier start of its
// node (TakeBack), other owners' claims after their lease
// (RecoverExpiredClaims). Its passes serve each account's next posting in
// turn, each bounded by a posting deadline shorter than the lease, with the
// outcome recorded in a context detached from the caller's, so no claim
// is left behind by a deadline, a cancel or a stop (ReleaseClaims).
//
// A posting with Route FILE (BULK/DEFERRED of a batch-window bank) is
// never claimed, recovered, inquired about or sent by this package: the
// overnight exchange moves it PENDING -> IN_FILE (TakeForFile, in its cut
// transaction) and IN_FILE -> APPLIED | BLOCKED (SettleFromFile, in its
// result-file transaction). It holds back later postings of its account
// like any unsettled posting.
//
// The package must not reach a core except through the Core it is given,
// must not open Cases except through the CaseOpener it is given, and must
// not import gateway, jobs, adapter or formats.
//
// Subpackage outbox/events is a different outbox: the event outbox that
// queues every FinalityLog entry for the Kafka fan-out (docs/events.md); it
// shares no table or code with this posting outbox.
package outbox
