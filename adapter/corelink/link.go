package corelink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/formats/charset"
	"github.com/zcgw/zcgw/formats/coremsg"
	"github.com/zcgw/zcgw/outbox"
)

// Config wires a Link.
type Config struct {
	Bank      string
	Transport mq.Transport
	// Queue names default to coremsg.QueuesFor(Bank).
	RequestQueue, ReplyQueue, BackoutQueue string
	// BackoutThreshold declared on the request queue (default 3).
	BackoutThreshold int
	// Timeout bounds one request/reply (default 5s). A posting request
	// also expires on its queue after Timeout, so a request that was not
	// taken in time can never be applied after the outbox has asked about
	// it (defence in depth besides the FIFO order).
	Timeout time.Duration
	// Online, when set, tells whether the core is in an online window;
	// outside one, Apply does not send and returns *outbox.NotSentError.
	Online func(time.Time) bool
	// Sessions is how many requests may be in flight at once (default 4).
	Sessions int
	// Charset of the coremsg records (default EBCDIC290); the core must
	// use the same.
	Charset *charset.Charset
	Clock   clock.Clock
	Logger  *slog.Logger
}

// Link is a connection to one core. It is safe for concurrent use.
type Link struct {
	cfg    Config
	mu     sync.Mutex // guards conn and closed
	conn   mq.Connection
	closed bool
	pool   chan mq.Session
	clk    clock.Clock
	log    *slog.Logger
	cs     *charset.Charset
}

var _ outbox.Core = (*Link)(nil)

// Open connects to the transport and declares the core's queues.
func Open(ctx context.Context, cfg Config) (*Link, error) {
	if cfg.Bank == "" || cfg.Transport == nil {
		return nil, errors.New("corelink: Config.Bank and Config.Transport are required")
	}
	def := coremsg.QueuesFor(cfg.Bank)
	if cfg.RequestQueue == "" {
		cfg.RequestQueue = def.Request
	}
	if cfg.ReplyQueue == "" {
		cfg.ReplyQueue = def.Reply
	}
	if cfg.BackoutQueue == "" {
		cfg.BackoutQueue = def.Backout
	}
	if cfg.BackoutThreshold <= 0 {
		cfg.BackoutThreshold = 3
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Sessions <= 0 {
		cfg.Sessions = 4
	}
	l := &Link{cfg: cfg, clk: cfg.Clock, log: cfg.Logger, pool: make(chan mq.Session, cfg.Sessions)}
	if l.clk == nil {
		l.clk = clock.System{}
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	l.cs = cfg.Charset
	if l.cs == nil {
		l.cs = charset.EBCDIC290
	}
	conn, err := l.connect(ctx)
	if err != nil {
		return nil, err
	}
	l.conn = conn
	for i := 0; i < cfg.Sessions; i++ {
		l.pool <- nil // opened lazily
	}
	return l, nil
}

// connect opens a connection and declares the core's queues on it.
func (l *Link) connect(ctx context.Context) (mq.Connection, error) {
	conn, err := l.cfg.Transport.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("corelink %s: connect: %w", l.cfg.Bank, err)
	}
	for _, spec := range []mq.QueueSpec{
		{Name: l.cfg.BackoutQueue},
		{Name: l.cfg.RequestQueue, BackoutThreshold: l.cfg.BackoutThreshold, BackoutQueue: l.cfg.BackoutQueue},
		{Name: l.cfg.ReplyQueue},
	} {
		if err := conn.DeclareQueue(ctx, spec); err != nil {
			conn.Close()
			return nil, fmt.Errorf("corelink %s: declare %s: %w", l.cfg.Bank, spec.Name, err)
		}
	}
	return conn, nil
}

// connection is the link's current connection.
func (l *Link) connection() mq.Connection {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conn
}

// session opens a session on the current connection. When the connection
// is broken (the broker restarted, or closed it; a lost lease) the link
// connects again once and opens the session there: a broker restart costs
// the requests in flight (in doubt, settled by inquiry), not the link.
func (l *Link) session(ctx context.Context) (mq.Session, error) {
	conn := l.connection()
	s, err := conn.Session(ctx)
	if err == nil || !(errors.Is(err, mq.ErrConnectionBroken) || errors.Is(err, mq.ErrClosed)) {
		return s, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, err
	}
	if l.conn == conn {
		fresh, cerr := l.connect(ctx)
		if cerr != nil {
			return nil, errors.Join(err, cerr)
		}
		_ = conn.Close()
		l.conn = fresh
		l.log.WarnContext(ctx, "corelink.reconnected", "bank", l.cfg.Bank, "cause", err.Error())
	}
	return l.conn.Session(ctx)
}

// Close closes the sessions and the connection.
func (l *Link) Close() error {
	var errs []error
	for i := 0; i < cap(l.pool); i++ {
		if s := <-l.pool; s != nil {
			errs = append(errs, s.Close())
		}
	}
	l.mu.Lock()
	l.closed = true
	conn := l.conn
	l.mu.Unlock()
	errs = append(errs, conn.Close())
	return errors.Join(errs...)
}

// Timeout is the request/reply bound.
func (l *Link) Timeout() time.Duration { return l.cfg.Timeout }

// sendError says the request did not reach the queue.
type sendError struct{ err error }

func (e *sendError) Error() string { return e.err.Error() }
func (e *sendError) Unwrap() error { return e.err }

// roundTrip sends one request body and returns the reply body. Its error
// is *sendError when the request provably did not reach the queue,
// *mq.ReplyTimeoutError (or another error) when it was, or may have been,
// sent.
func (l *Link) roundTrip(ctx context.Context, op string, body []byte) ([]byte, error) {
	replies, errs := l.roundTrips(ctx, op, [][]byte{body})
	return replies[0], errs[0]
}

// roundTrips sends request bodies in one unit of work (one commit) and
// collects their replies, bounded together by the link's Timeout.
// replies[i] and errs[i] answer bodies[i] as roundTrip would.
func (l *Link) roundTrips(ctx context.Context, op string, bodies [][]byte) (replies [][]byte, errs []error) {
	replies, errs = make([][]byte, len(bodies)), make([]error, len(bodies))
	fail := func(err error) ([][]byte, []error) {
		for i := range errs {
			if errs[i] == nil && replies[i] == nil {
				errs[i] = err
			}
		}
		return replies, errs
	}
	var sess mq.Session
	select {
	case sess = <-l.pool:
	case <-ctx.Done():
		return fail(&sendError{err: ctx.Err()})
	}
	healthy := true
	defer func() {
		if !healthy && sess != nil {
			_ = sess.Close()
			sess = nil
		}
		l.pool <- sess
	}()
	if sess == nil {
		s, err := l.session(ctx)
		if err != nil {
			return fail(&sendError{err: fmt.Errorf("corelink %s: session: %w", l.cfg.Bank, err)})
		}
		sess = s
	}
	rctx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	defer cancel()
	start := time.Now()
	reqs := make([]*mq.Message, len(bodies))
	for i, b := range bodies {
		reqs[i] = &mq.Message{Body: b, Expiry: l.cfg.Timeout}
	}
	ids, err := mq.SendRequests(rctx, sess, l.cfg.RequestQueue, l.cfg.ReplyQueue, reqs)
	if err != nil {
		healthy = false
		var me *mq.Error
		if errors.As(err, &me) && (me.Op == "put" || me.Reason == mq.ReasonBackedOut) {
			l.log.WarnContext(ctx, "corelink.not_sent", "bank", l.cfg.Bank, "op", op, "requests", len(bodies), "err", err.Error())
			return fail(&sendError{err: err})
		}
		l.log.WarnContext(ctx, "corelink.send_unknown", "bank", l.cfg.Bank, "op", op, "requests", len(bodies), "err", err.Error())
		return fail(err)
	}
	got, err := mq.AwaitReplies(rctx, sess, l.cfg.ReplyQueue, ids)
	for i, id := range ids {
		if r := got[id]; r != nil {
			replies[i] = r.Body
		}
	}
	if err != nil {
		var te *mq.ReplyTimeoutError
		if !errors.As(err, &te) {
			healthy = false
		}
		for i, id := range ids {
			if replies[i] == nil {
				l.log.WarnContext(ctx, "corelink.no_reply", "bank", l.cfg.Bank, "op", op, "msg_id", id.String(),
					"waited", time.Since(start).String(), "err", err.Error())
				if te != nil {
					err = &mq.ReplyTimeoutError{RequestID: id, ReplyQueue: l.cfg.ReplyQueue, Err: te.Err}
				}
				errs[i] = err
			}
		}
		return replies, errs
	}
	l.log.DebugContext(ctx, "corelink.reply", "bank", l.cfg.Bank, "op", op, "requests", len(ids),
		"latency", time.Since(start).String())
	return replies, errs
}

// inquiryError maps a transport failure of an inquiry to a typed error.
func (l *Link) inquiryError(op string, err error) error {
	var ee *encodeError
	if errors.As(err, &ee) {
		return domainerr.Wrap("INVALID_REQUEST", err, "corelink: "+op+": request cannot be encoded", nil)
	}
	var se *sendError
	if errors.As(err, &se) {
		return domainerr.Wrap("BANK_ERROR", err, "corelink: "+op+": request not sent to core "+l.cfg.Bank, nil)
	}
	var te *mq.ReplyTimeoutError
	if errors.As(err, &te) {
		return domainerr.Wrap("BANK_TIMEOUT", err, "corelink: "+op+": no reply from core "+l.cfg.Bank, nil)
	}
	return domainerr.Wrap("BANK_ERROR", err, "corelink: "+op+": core "+l.cfg.Bank, nil)
}

// postingError maps a transport failure of a posting to the outbox's
// typed errors.
func postingError(err error) error {
	var se *sendError
	if errors.As(err, &se) {
		return &outbox.NotSentError{Cause: err}
	}
	return &outbox.InDoubtError{Cause: err}
}
