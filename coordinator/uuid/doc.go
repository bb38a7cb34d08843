// Package uuid makes the identifiers zcgw stores and logs: random
// (version 4) UUIDs for ids that carry no order, and time-ordered
// (version 7, RFC 9562) UUIDs for the ids of append-mostly tables
// (FinalityLog, EntityStateLog), whose rows then land at the end of their
// primary-key index instead of on a random page each.
//
// It is shared infrastructure: it imports nothing of zcgw. Every clock
// read stays with the caller, which passes its injectable clock's now.
package uuid
