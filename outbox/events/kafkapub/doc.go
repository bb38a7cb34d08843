// Package kafkapub drains the event outbox (outbox/events) to Kafka with
// github.com/segmentio/kafka-go (issue 7).
//
// Each row becomes one record: key = chain id (COALESCE(txid, gtid,
// 'GLOBAL')), so one transfer's, GTID's or the GLOBAL chain's events land
// on one partition in order; headers = event_seq, event_type and the spec
// 002 §12.2 header fields; value = the JSON event. The topic is chosen by
// event family (Topics: event-type prefix -> topic, with a default).
//
// Rows are read in batches after the stream's cursor (up to 5,000 per
// step, at most 960 kB per partition so each partition's share is one
// produce request), written with one sync kafka-go WriteMessages (LZ4-
// compressed batches by default, Config.Compression), and the
// cursor moves past the acknowledged prefix in one guarded UPDATE,
// overlapped with the next step's read and write. Run sleeps
// on the outbox's events.Wake (notified after each append commit) with a
// slow timer, never polling an empty outbox. Prepare checks (or creates)
// the topics; Collectors are its Prometheus metrics.
//
// Delivery is at least once: the cursor moves past a row only after the
// broker acknowledged it (RequiredAcks all). A failed write leaves its rows unsent
// and the publisher backs off (exponential, driven by its Clock, so a test
// advances a Manual clock instead of sleeping) and resumes from the
// cursor. Publishers of several nodes on one database take turns through
// the stream's lease (events.Outbox.AcquireLease): one publishes, the
// others stand by and take over once it expired or was released. kafka-go's Writer cannot produce idempotently or
// transactionally (it always sends producer id -1), so a retry after a lost
// acknowledgement duplicates records; exactly-once processing comes from the
// consumer's (chain, event_seq) dedup in outbox/events/consume.
//
// It must not import gateway, jobs, adapter or formats, and it never writes
// anything but the EventPublisher row (through events.Outbox's lease and
// cursor methods).
package kafkapub
