// Package mq is zcgw's message-queue transport with IBM MQ semantics rather
// than HTTP semantics: opaque byte bodies, 24-byte MsgID/CorrelID, ReplyTo,
// persistence, expiry, priority, string properties and a BackoutCount, all
// moved inside units of work (syncpoint) that are committed or backed out.
//
// The package declares the interface (Transport, Connection, Session,
// Message, Match), the typed errors carrying MQRC-like reason codes, and
// the helpers written once on top of the interface: request/reply
// (SendRequest, AwaitReply, Request, Reply) and the poison handler
// (HandlePoison). Backends live in subpackages: adapter/mq/embedded (the
// default, a SQLite file), adapter/mq/rabbit (RabbitMQ over AMQP 0-9-1)
// and adapter/mq/amqp1 (any AMQP 1.0 broker: IBM MQ's AMQP channel,
// RabbitMQ's plugin).
// adapter/mq/mqtest is the one conformance suite every backend runs.
//
// Body bytes are never transcoded: code pages (EBCDIC, Shift_JIS, packed
// decimal) are the formats package's job, never the transport's.
//
// This package must not import any other zcgw package except
// coordinator/clock; it knows nothing of postings, banks or the outbox.
// See docs/mq.md for the semantics per backend.
package mq
