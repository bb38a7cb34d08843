package mq

import "context"

// Transport opens connections to one queue manager (or broker, or queue
// file). It holds configuration only; it is safe for concurrent use.
type Transport interface {
	// Connect opens a connection (MQCONN). Each call opens a new one, as
	// a new process would.
	Connect(ctx context.Context) (Connection, error)
}

// QueueSpec declares a queue. BackoutThreshold and BackoutQueue are the
// queue's BOTHRESH and BOQNAME: advisory, read by HandlePoison; a backend
// may also enforce them as a safety net (RabbitMQ's x-delivery-limit plus
// dead-letter routing).
type QueueSpec struct {
	Name             string
	BackoutThreshold int    // 0: no threshold
	BackoutQueue     string // "" : none
}

// DepthInquirer is a Connection that can read a queue's current depth
// (MQINQ CURDEPTH): every message on the queue, including those got under
// a unit of work not yet committed. The embedded backend implements it.
type DepthInquirer interface {
	Depth(ctx context.Context, queue string) (int64, error)
}

// Connection is one connection to the queue manager. It is safe for
// concurrent use; its Sessions are not (use one Session per goroutine).
type Connection interface {
	// DeclareQueue creates the queue if it does not exist (idempotent).
	// Queues used by Put and Get must have been declared, by this or any
	// other connection; otherwise they fail with MQRC 2085.
	DeclareQueue(ctx context.Context, spec QueueSpec) error
	// Queue returns the declared attributes of a queue (MQINQ), or MQRC
	// 2085 when it does not exist.
	Queue(ctx context.Context, name string) (QueueSpec, error)
	// DeleteQueue deletes a queue and its messages (tests and cleanup).
	DeleteQueue(ctx context.Context, name string) error
	// Session opens a session: a sequence of units of work.
	Session(ctx context.Context) (Session, error)
	// ClaimConsumer makes this connection the one consumer of a declared
	// queue (IBM MQ: MQOPEN with MQOO_INPUT_EXCLUSIVE). While the claim is
	// held, every other claim on the queue fails with MQRC 2042
	// (ErrInUse) whose cause, an *InUseError, names the holder
	// (connection id, pid, host, application). The claim ends with
	// Release, Close, or the death of the connection. See consumer.go.
	ClaimConsumer(ctx context.Context, queue string) (ConsumerClaim, error)
	// Close backs out every open unit of work and closes the connection.
	Close() error
}

// Session is a sequence of units of work, like an IBM MQ connection handle
// with MQPMO_SYNCPOINT and MQGMO_SYNCPOINT on every call. The unit of work
// starts with the first Put or Get after the previous Commit or Rollback.
// A Session must be used by one goroutine at a time.
type Session interface {
	// Put puts msg on queue inside the unit of work. The message is
	// invisible to every getter until Commit. Put fills msg.MsgID when it
	// is zero and msg.PutTime; Expiry counts from this call.
	Put(ctx context.Context, queue string, msg *Message) error
	// Get takes the first message on queue selected by match (highest
	// priority first, then arrival order) inside the unit of work; no
	// other getter can see it until the unit ends. Commit removes it;
	// Rollback restores it with BackoutCount+1. When no message is there,
	// Get waits until one arrives or ctx is done and then fails with MQRC
	// 2033 (errors.Is(err, ErrNoMessage)), wrapping ctx's error. A ctx
	// that is already done makes a no-wait get: one look, no waiting.
	Get(ctx context.Context, queue string, match Match) (*Message, error)
	// Commit makes the unit's puts visible and its gets final. It may
	// fail with MQRC 2003 (ErrBackedOut): then nothing of the unit
	// happened, its gets are restored with BackoutCount+1 and its puts
	// are discarded.
	Commit(ctx context.Context) error
	// Rollback backs the unit out: puts are discarded and gets restored
	// with BackoutCount+1.
	Rollback(ctx context.Context) error
	// Close backs out any open unit of work and releases the session.
	Close() error
}
