// Package embedded is the default mq backend: durable queues in one local
// SQLite file (opened with coordinator/store), so zcgw runs on one machine
// with nothing installed. Several goroutines and several processes may
// share the file.
//
// A unit of work is kept like this:
//   - Put buffers the message in the session; Commit inserts the buffered
//     messages in one write transaction, so they are invisible until then.
//   - Get claims a row with one guarded UPDATE (claim_conn IS NULL ->
//     this connection and session); a claimed row is invisible to every
//     other getter. Commit deletes the session's claimed rows, checking
//     that it still holds all of them (else MQRC 2003 BACKED_OUT);
//     Rollback releases them with backout_count+1.
//   - Every connection keeps a heartbeat row with its own lease end
//     (heartbeat + its LeaseTTL). A connection past its lease end is dead
//     (its process crashed or hung): any live connection releases its
//     claims with backout_count+1, as a queue manager backs out the units
//     of a broken connection. A process never judges another by its own
//     TTL.
//   - Expiry is stored as an instant counted from Put and expired rows are
//     deleted lazily by the get that would have returned them.
//   - A waiting Get wakes on an in-process notification from commits and
//     rollbacks on the same file, and polls for other processes' work.
//
// It must not import any zcgw package other than adapter/mq,
// coordinator/store and coordinator/clock.
package embedded
