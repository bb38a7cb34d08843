// Package rabbit is the mq backend for RabbitMQ over AMQP 0-9-1
// (github.com/rabbitmq/amqp091-go). Every queue is a durable quorum queue;
// a queue declared with a backout threshold gets x-delivery-limit equal to
// the threshold and dead-letters to its backout queue, a broker-side
// safety net behind mq.HandlePoison.
//
// The unit of work is mapped honestly, not atomically:
//   - Put buffers the message in the session; Commit publishes the
//     buffered messages (persistent, mandatory) and waits for every
//     publisher confirm, and only then acks the unit's gets. A failure
//     between the two leaves the gets unacked: they are redelivered and the
//     puts may be duplicated, never lost.
//   - Get is basic.get without auto-ack (manual acknowledgement); Rollback
//     nacks the unit's gets with requeue, which the quorum queue counts in
//     x-delivery-count, surfaced as BackoutCount.
//   - Get by CorrelID or MsgID consumes and filters: it takes messages in
//     order, keeps the match and nacks the others back with requeue, which
//     also counts as a delivery attempt for them (use it on reply queues,
//     which have no delivery limit).
//   - Quorum queues ignore Priority (FIFO). Expiry is counted from Put: the
//     remaining lifetime is sent as the per-message TTL at Commit and a
//     message already expired then is not published.
//   - A waiting Get for any message holds a consumer with prefetch 1 until
//     one is pushed; a waiting filtered Get polls with basic.get, backing
//     off to PollInterval.
//
// See docs/mq.md. It must not import any zcgw package other than
// adapter/mq and coordinator/clock.
package rabbit
