// Package consume is the consumer library for zcgw's Kafka event fan-out
// (issue 7): it decodes an event record (Decode), checks event_seq per
// chain as spec 002 §12.5 requires of a receiver, and gives exactly-once
// processing on top of Kafka's at-least-once delivery.
//
// A Processor keeps, in the consumer's own SQLite database (store.Open with
// Schema), the (chain, event_seq) of every event it processed and the last
// event_seq per (topic, chain). Process runs the handler inside the same
// write transaction that claims (chain, event_seq), so the handler's effect
// and the dedup record commit together:
//
//   - seq above the chain's last: applied; a jump (seq > last+1) is a gap,
//     allowed and counted (missed or filtered events, another topic's family);
//   - (chain, seq) already processed with the same message_id: a duplicate
//     (redelivery), skipped, the handler is not called;
//   - seq at or below the last, never processed, or an old seq with another
//     message_id: a rewind, refused with *RewindError (nothing is applied).
//
// A Consumer reads a kafka-go group Reader, processes each record and
// commits its offset only after the transaction committed. It must not
// import gateway, jobs, adapter or formats, and writes only its own tables
// plus whatever the caller's handler writes.
package consume
