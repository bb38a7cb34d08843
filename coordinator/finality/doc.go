// Package finality owns the FinalityLog: the INSERT-only, SHA-256
// hash-chained audit log of every coordination fact (spec 003 FinalityLog,
// 000 §4 and §6.1). It appends entries inside the caller's write
// transaction (Log.Append), allocates event_seq from FinalitySeq, declares
// the closed set of event types (EventType), and verifies chains:
// VerifyChain (one), VerifyAll (the full audit, on both cores) and
// VerifySince (the nightly audit of the entries appended after the last
// clean audit's anchor, kept in FinalityAuditAnchors, chained and checked
// against the log first; RecordAnchorTx records the next one).
//
// Hash rule (a contract; anyone holding the rows can recompute it):
//
//	chain_id   = COALESCE(txid, gtid, 'GLOBAL')
//	prev_hash  = entry_hash of the chain's previous entry, or 'GENESIS'
//	entry_hash = hex(SHA-256(prev|log_id|txid|gtid|event_type|state_from|
//	                         state_to|payload_json|event_seq|occurred_at))
//
// with a NULL field contributing the empty string (spec 002 §12.6.2 FIXED)
// and event_seq in plain decimal.
//
// It imports only coordinator/store, coordinator/clock and
// coordinator/domainerr. It never updates or deletes FinalityLog rows and
// never writes any other table, except FinalityAuditAnchors
// (RecordAnchorTx) and through the caller's AfterAppend hook.
package finality
