// Package amqp1 is the mq backend for any AMQP 1.0 broker, through
// github.com/Azure/go-amqp: IBM MQ 9.2.1+ on an AMQP channel, ActiveMQ
// Artemis, Qpid, Azure Service Bus and RabbitMQ's rabbitmq_amqp1_0 plugin.
// It is the route toward IBM MQ, whose native client cannot be built here.
//
// Mapping onto the mq interface:
//   - MsgID and CorrelID travel as the AMQP message-id and correlation-id,
//     24-byte binary values; an id another client set as a string, UUID or
//     ulong is taken byte for byte, padded with zeros to 24 bytes.
//   - Persistence is header.durable; Priority is header.priority; ReplyTo
//     is properties.reply-to (the queue's address); string Properties are
//     application-properties; PutTime is properties.creation-time.
//   - Expiry counts from Put: the remaining lifetime is sent as header.ttl
//     at Commit, the deadline as properties.absolute-expiry-time, and a
//     message already expired then is not sent; a delivery met after its
//     deadline is accepted away (discarded) on Get.
//   - BackoutCount is header.delivery-count (or the x-delivery-count
//     annotation a broker adds, whichever is higher): Rollback settles the
//     unit's deliveries as modified with delivery-failed, which a broker
//     counts.
//
// The unit of work is mapped honestly, not atomically, because AMQP 1.0
// transactions (the coordinator link) are not offered by the brokers that
// matter here (IBM MQ's AMQP channel and RabbitMQ's plugin have none):
// Put buffers; Commit sends each buffered message on an unsettled link and
// waits for the broker to accept it, and only then accepts the unit's
// deliveries. A failure between the two leaves the deliveries unsettled:
// the broker redelivers them and the puts may be duplicated, never lost.
// zcgw stays exactly-once over this at-least-once unit because the core
// dedupes requests by MsgID and the outbox asks the core (posting-status
// inquiry) before it ever sends a posting again (docs/mq.md).
//
// Gets use link credit: a waiting Get issues one credit and waits for the
// push; a look (an already-done ctx, or each poll of a Get by CorrelID or
// MsgID) issues one credit and drains it, so no credit is left with the
// broker and no message is parked on an idle link. A Get by CorrelID or
// MsgID takes messages in order, keeps the match and releases the others.
//
// AMQP 1.0 has no verb to create a queue. Options.Admin, when set,
// declares, inquires, deletes and claims queues through another transport
// (on RabbitMQ the AMQP 0-9-1 backend on the same host: quorum queues with
// delivery limit and dead-lettering, exclusive consumer lock queues).
// Without it the broker's administrator defines the queues (IBM MQ: the
// MQSC script of docs/mq.md), DeclareQueue only checks that they exist,
// and ClaimConsumer is enforced within this process only: the queue
// definition (IBM MQ SHARE(NO)) must make the consumer exclusive.
//
// It must not import any zcgw package other than adapter/mq and
// coordinator/clock.
package amqp1
