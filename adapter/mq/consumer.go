package mq

import (
	"context"
	"fmt"
	"os"
	"time"
)

// ConsumerClaim is a held exclusive consumer of one queue. A responder that
// must be the only one taking a queue's messages in order (a legacy core
// behind its request queue: exactly-once against a non-idempotent core
// assumes one consumer) claims the queue before its first Get.
type ConsumerClaim interface {
	// Queue is the claimed queue.
	Queue() string
	// Holder is this claim's holder as other claimants see it.
	Holder() Holder
	// Release ends the claim. Closing the connection ends it too.
	Release(ctx context.Context) error
}

// Holder names the connection that holds a queue's consumer claim.
type Holder struct {
	Conn  string    // the backend's connection id
	PID   int       // the holder's process id
	Host  string    // the holder's host name
	App   string    // the application name the transport was given (Options.App), may be empty
	Since time.Time // when the claim was taken (zero when unknown)
}

// LocalHolder is the Holder of a connection of this process.
func LocalHolder(conn, app string, since time.Time) Holder {
	host, _ := os.Hostname()
	return Holder{Conn: conn, PID: os.Getpid(), Host: host, App: app, Since: since.UTC()}
}

func (h Holder) String() string {
	s := fmt.Sprintf("connection %s (pid %d on %s", h.Conn, h.PID, h.Host)
	if h.App != "" {
		s += fmt.Sprintf(", %q", h.App)
	}
	if !h.Since.IsZero() {
		s += ", since " + h.Since.UTC().Format(time.RFC3339)
	}
	return s + ")"
}

// InUseError is the cause of the MQRC 2042 error a refused ClaimConsumer
// (or, on a backend that enforces the claim on Get, a Get by another
// connection) returns.
type InUseError struct {
	Queue  string
	Holder Holder
	// Unknown: the backend refused the claim but could not say who holds
	// it (Holder is then zero).
	Unknown bool
}

func (e *InUseError) Error() string {
	if e.Unknown {
		return fmt.Sprintf("queue %s already has an exclusive consumer (its holder did not leave its name)", e.Queue)
	}
	return fmt.Sprintf("queue %s already has an exclusive consumer: %s", e.Queue, e.Holder)
}
