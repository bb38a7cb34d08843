// Package events is the event outbox: the durable queue between the
// FinalityLog and the Kafka fan-out (issue 7, spec 002 §12.2 and §12.5).
//
// Install sets a finality.Log's AfterAppend hook so that every append also
// inserts one EventOutbox row in the same transaction: an entry is logged
// and queued for publication together, or (on rollback) neither. The row
// holds the whole event message (the §12.2 common header plus a body built
// from the entry) and the event's I/F event_seq, allocated 1, 2, 3 ... per
// chain (producer ZC x aggregate, §12.5) and never reused.
//
// Outbox reads rows in FinalityLog order, keeps the publisher's durable
// cursor and lease (EventPublisher: AcquireLease, Advance — only after the
// broker acknowledged; the publisher is in kafkapub — Renew,
// ReleaseLease), and tails the outbox for `zcgw events tail`. With no broker
// configured the rows simply stay here; nothing else changes.
//
// Installed with a Signer, every message carries the §12.2 signature block
// (Ed25519 over the FIXED canonicalization of the header and body fields,
// the payload covered through entry_hash); VerifySignature checks one.
//
// It imports only coordinator/finality, coordinator/store, coordinator/clock,
// coordinator/procid,
// coordinator/signing and coordinator/domainerr. It never writes the FinalityLog, never talks to
// a broker (kafkapub does) and never deletes outbox rows.
package events
