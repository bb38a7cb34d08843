// Package corelink is the adapter's client of one bank's legacy core over
// an MQ transport (adapter/mq) with formats/coremsg fixed-length messages.
// It implements outbox.Core (Apply, Lookup) and the inquiries the adapter
// needs (balance, name check, account verify, AML screen, holds,
// notifications).
//
// Every call is one request/reply: the request is put and committed on the
// core's request queue, then the reply whose CorrelID equals the request's
// MsgID is awaited on the reply queue, bounded by the timeout. Errors of
// Apply are typed for the outbox: a refusal reply is *outbox.RefusedError,
// a request that never reached the queue (offline window, put or commit
// backed out) is *outbox.NotSentError, and a sent request with no reply in
// time is *outbox.InDoubtError. Inquiries travel the same FIFO queue as
// postings, so an answer reflects every request put before it.
//
// It must not import the adapter package, gateway, jobs or coresim: the
// core is reachable only through the transport.
package corelink
