package rabbit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/coordinator/clock"
)

// DefaultURL is the local broker used by tests and development.
const DefaultURL = "amqp://guest:guest@127.0.0.1:5672/"

// Defaults for Options.
const (
	DefaultPollInterval   = 20 * time.Millisecond
	DefaultDialTimeout    = 5 * time.Second
	DefaultConfirmTimeout = 30 * time.Second
)

// Options tune a Transport. The zero value is usable.
type Options struct {
	Clock          clock.Clock   // expiry arithmetic; nil means clock.System{}
	Logger         *slog.Logger  // nil discards
	PollInterval   time.Duration // longest pause between basic.get polls of a waiting Get
	DialTimeout    time.Duration // TCP and AMQP handshake timeout
	ConfirmTimeout time.Duration // longest wait for publisher confirms in Commit
	// App names the application in the connection name and in the holder
	// of a consumer claim (for example "zcgw serve node-1a2b").
	App string
}

// Transport is the RabbitMQ backend for one broker URL. It remembers the
// QueueSpecs declared through it, because AMQP cannot read a queue's
// arguments back.
type Transport struct {
	url   string
	opts  Options
	specs sync.Map // queue name -> mq.QueueSpec
}

var _ mq.Transport = (*Transport)(nil)

// New returns a transport for the broker at url (for example DefaultURL).
func New(url string, opts Options) *Transport {
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.ConfirmTimeout <= 0 {
		opts.ConfirmTimeout = DefaultConfirmTimeout
	}
	return &Transport{url: url, opts: opts}
}

// Connect opens an AMQP connection.
func (t *Transport) Connect(ctx context.Context) (mq.Connection, error) {
	timeout := t.opts.DialTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	id := mq.NewID().String()[:32]
	ac, err := amqp.DialConfig(t.url, amqp.Config{
		Dial:       amqp.DefaultDial(timeout),
		Properties: amqp.Table{"connection_name": fmt.Sprintf("zcgw-mq %s pid %d conn %s", t.opts.App, os.Getpid(), id)},
	})
	if err != nil {
		return nil, &mq.Error{Reason: mq.ReasonConnectionBroken, Op: "connect", Cause: redact(err, t.url)}
	}
	c := &conn{t: t, ac: ac, id: id, log: t.opts.Logger.With("mq_conn", id), sessions: map[*session]struct{}{}, claims: map[string]bool{}}
	closed := ac.NotifyClose(make(chan *amqp.Error, 1))
	go func() {
		if e, ok := <-closed; ok && e != nil {
			c.broken.Store(true)
			c.log.Error("mq.connection_lost", "error", e.Error())
		}
	}()
	return c, nil
}

// redact keeps the broker password out of errors and logs.
func redact(err error, url string) error {
	return fmt.Errorf("dial %s: %w", redactURL(url), err)
}

func redactURL(u string) string {
	for i := 0; i+3 < len(u); i++ {
		if u[i:i+3] == "://" {
			rest := u[i+3:]
			for j := 0; j < len(rest); j++ {
				if rest[j] == '@' {
					return u[:i+3] + "***@" + rest[j+1:]
				}
				if rest[j] == '/' {
					return u
				}
			}
		}
	}
	return u
}

type conn struct {
	t   *Transport
	ac  *amqp.Connection
	id  string
	log *slog.Logger

	broken atomic.Bool
	known  sync.Map // queue name -> struct{}: known to exist

	mu       sync.Mutex
	closed   bool
	sessions map[*session]struct{}
	claims   map[string]bool // queues this connection holds the consumer claim of
}

func (c *conn) usable(op, queue string) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return &mq.Error{Reason: mq.ReasonHConnError, Op: op, Queue: queue, Cause: errors.New("connection closed")}
	}
	if c.broken.Load() || c.ac.IsClosed() {
		return &mq.Error{Reason: mq.ReasonConnectionBroken, Op: op, Queue: queue, Cause: amqp.ErrClosed}
	}
	return nil
}

// mapErr turns an AMQP error into a typed mq error.
func (c *conn) mapErr(op, queue string, err error) error {
	if err == nil {
		return nil
	}
	var ae *amqp.Error
	if errors.As(err, &ae) {
		switch ae.Code {
		case amqp.NotFound:
			return &mq.Error{Reason: mq.ReasonUnknownObjectName, Op: op, Queue: queue, Cause: err}
		case amqp.ConnectionForced, amqp.FrameError, amqp.InternalError:
			return &mq.Error{Reason: mq.ReasonConnectionBroken, Op: op, Queue: queue, Cause: err}
		}
	}
	if errors.Is(err, amqp.ErrClosed) || c.ac.IsClosed() {
		return &mq.Error{Reason: mq.ReasonConnectionBroken, Op: op, Queue: queue, Cause: err}
	}
	return &mq.Error{Reason: mq.ReasonUnexpectedError, Op: op, Queue: queue, Cause: err}
}

// withChannel runs fn on a fresh channel: a channel error (404, 406)
// closes the channel, so administrative calls never share one.
func (c *conn) withChannel(op, queue string, fn func(ch *amqp.Channel) error) error {
	if err := c.usable(op, queue); err != nil {
		return err
	}
	ch, err := c.ac.Channel()
	if err != nil {
		return c.mapErr(op, queue, err)
	}
	defer ch.Close()
	return c.mapErr(op, queue, fn(ch))
}

func queueArgs(spec mq.QueueSpec) amqp.Table {
	args := amqp.Table{"x-queue-type": "quorum"}
	if spec.BackoutThreshold > 0 && spec.BackoutQueue != "" {
		args["x-delivery-limit"] = int64(spec.BackoutThreshold)
		args["x-dead-letter-exchange"] = ""
		args["x-dead-letter-routing-key"] = spec.BackoutQueue
	}
	return args
}

func (c *conn) DeclareQueue(ctx context.Context, spec mq.QueueSpec) error {
	if spec.Name == "" || len(spec.Name) > 255 {
		return &mq.Error{Reason: mq.ReasonUnknownObjectName, Op: "declare", Queue: spec.Name, Cause: errors.New("queue name length must be 1..255")}
	}
	if spec.BackoutThreshold < 0 {
		return &mq.Error{Reason: mq.ReasonUnexpectedError, Op: "declare", Queue: spec.Name,
			Cause: fmt.Errorf("negative backout threshold %d", spec.BackoutThreshold)}
	}
	err := c.withChannel("declare", spec.Name, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(spec.Name, true, false, false, false, queueArgs(spec))
		return err
	})
	if err != nil {
		return err
	}
	c.known.Store(spec.Name, struct{}{})
	c.t.specs.Store(spec.Name, spec)
	return nil
}

// exists checks that a queue exists (cached once seen).
func (c *conn) exists(op, name string) error {
	if _, ok := c.known.Load(name); ok {
		return nil
	}
	err := c.withChannel(op, name, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclarePassive(name, true, false, false, false, nil)
		return err
	})
	if err != nil {
		return err
	}
	c.known.Store(name, struct{}{})
	return nil
}

// Queue reports the queue's attributes as declared through this
// Transport; for a queue declared elsewhere it reports existence only
// (AMQP cannot read queue arguments back).
func (c *conn) Queue(ctx context.Context, name string) (mq.QueueSpec, error) {
	if err := c.exists("inquire", name); err != nil {
		return mq.QueueSpec{}, err
	}
	if spec, ok := c.t.specs.Load(name); ok {
		return spec.(mq.QueueSpec), nil
	}
	return mq.QueueSpec{Name: name}, nil
}

func (c *conn) DeleteQueue(ctx context.Context, name string) error {
	if err := c.exists("delete", name); err != nil {
		return err
	}
	err := c.withChannel("delete", name, func(ch *amqp.Channel) error {
		_, err := ch.QueueDelete(name, false, false, false)
		return err
	})
	c.known.Delete(name)
	c.t.specs.Delete(name)
	return err
}

func (c *conn) Session(ctx context.Context) (mq.Session, error) {
	if err := c.usable("session", ""); err != nil {
		return nil, err
	}
	s := &session{c: c}
	if err := s.openChannel(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.sessions[s] = struct{}{}
	c.mu.Unlock()
	return s, nil
}

// Close backs out every open session and closes the AMQP connection; the
// broker requeues anything still unacknowledged.
func (c *conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	sessions := make([]*session, 0, len(c.sessions))
	for s := range c.sessions {
		sessions = append(sessions, s)
	}
	c.mu.Unlock()
	var errs []error
	for _, s := range sessions {
		errs = append(errs, s.Close())
	}
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	if err := c.ac.Close(); err != nil && !errors.Is(err, amqp.ErrClosed) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
