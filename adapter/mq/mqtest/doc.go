// Package mqtest is the one conformance suite every adapter/mq backend
// runs: Run(t, newTransport, opts) checks unit-of-work visibility,
// rollback with BackoutCount, correlation matching, request/reply, expiry,
// priority, the poison handler, persistence across reconnect, exactly-once
// delivery to concurrent consumers and context-bounded waits.
//
// It imports only adapter/mq and the standard library, and is imported
// only by tests.
package mqtest
