package amqp1

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	amqp "github.com/Azure/go-amqp"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/coordinator/clock"
)

// DefaultAddressPrefix addresses an existing queue on RabbitMQ 3.x's AMQP
// 1.0 plugin. IBM MQ and Artemis address a queue by its name ("").
const DefaultAddressPrefix = "/amq/queue/"

// Defaults for Options.
const (
	DefaultPollInterval = 20 * time.Millisecond
	DefaultDialTimeout  = 5 * time.Second
	DefaultLookWait     = 50 * time.Millisecond
	DefaultSendTimeout  = 30 * time.Second
)

// Options tune a Transport.
type Options struct {
	Clock  clock.Clock  // expiry arithmetic; nil means clock.System{}
	Logger *slog.Logger // nil discards
	// AddressPrefix turns a queue name into its AMQP address. Nil means
	// DefaultAddressPrefix; point it at "" for IBM MQ.
	AddressPrefix *string
	// Admin declares, inquires, deletes and claims queues (AMQP 1.0 has
	// no verb for these). Nil: queues are defined by the broker's
	// administrator (see the package doc).
	Admin        mq.Transport
	PollInterval time.Duration // longest pause between looks of a waiting filtered Get
	// LookWait is how long a look (a no-wait get, each step of a filtered
	// get) waits for a delivery after the broker answered the drain of its
	// credit (default 50ms; RabbitMQ 3.x answers first and delivers after).
	LookWait    time.Duration
	DialTimeout time.Duration // TCP, SASL and open handshake
	SendTimeout time.Duration // longest wait for the broker's acceptance of a sent message in Commit
	// App names the application in the connection's properties and in a
	// consumer claim's holder.
	App string
}

// resolved is Options with the defaults applied.
type resolved struct {
	Options
	AddressPrefix string
}

// Transport is the AMQP 1.0 backend for one broker URL
// (amqp://user:password@host:port). It remembers the QueueSpecs declared
// through it, because AMQP 1.0 cannot read a queue's attributes.
type Transport struct {
	url   string
	opts  resolved
	specs sync.Map // queue name -> mq.QueueSpec

	mu     sync.Mutex
	claims map[string]mq.Holder // process-local consumer claims (no Admin)
}

var _ mq.Transport = (*Transport)(nil)

// New returns a transport for the broker at url.
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
	if opts.LookWait <= 0 {
		opts.LookWait = DefaultLookWait
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.SendTimeout <= 0 {
		opts.SendTimeout = DefaultSendTimeout
	}
	r := resolved{Options: opts, AddressPrefix: DefaultAddressPrefix}
	if opts.AddressPrefix != nil {
		r.AddressPrefix = *opts.AddressPrefix
	}
	return &Transport{url: url, opts: r, claims: map[string]mq.Holder{}}
}

func (t *Transport) address(queue string) string { return t.opts.AddressPrefix + queue }

// Connect opens an AMQP 1.0 connection (and one to Options.Admin).
func (t *Transport) Connect(ctx context.Context) (mq.Connection, error) {
	dctx, cancel := context.WithTimeout(ctx, t.opts.DialTimeout)
	defer cancel()
	id := mq.NewID().String()[:32]
	ac, err := amqp.Dial(dctx, t.url, &amqp.ConnOptions{
		ContainerID: "zcgw-" + id,
		Properties:  map[string]any{"connection_name": fmt.Sprintf("zcgw-mq %s pid %d conn %s", t.opts.App, os.Getpid(), id)},
		IdleTimeout: 30 * time.Second,
	})
	if err != nil {
		return nil, &mq.Error{Reason: mq.ReasonConnectionBroken, Op: "connect", Cause: fmt.Errorf("dial %s: %w", mq.RedactURL(t.url), err)}
	}
	c := &conn{t: t, ac: ac, id: id, log: t.opts.Logger.With("mq_conn", id), sessions: map[*session]struct{}{}}
	if t.opts.Admin != nil {
		if c.admin, err = t.opts.Admin.Connect(ctx); err != nil {
			_ = ac.Close()
			return nil, err
		}
	}
	return c, nil
}

type conn struct {
	t     *Transport
	ac    *amqp.Conn
	admin mq.Connection // nil without Options.Admin
	id    string
	log   *slog.Logger
	known sync.Map // queue name -> struct{}: known to exist

	mu       sync.Mutex
	closed   bool
	sessions map[*session]struct{}
	claims   map[string]bool
}

func (c *conn) usable(op, queue string) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return &mq.Error{Reason: mq.ReasonHConnError, Op: op, Queue: queue, Cause: errors.New("connection closed")}
	}
	select {
	case <-c.ac.Done():
		return &mq.Error{Reason: mq.ReasonConnectionBroken, Op: op, Queue: queue, Cause: c.ac.Err()}
	default:
		return nil
	}
}

// mapErr turns a go-amqp error into a typed mq error.
func (c *conn) mapErr(op, queue string, err error) error {
	if err == nil {
		return nil
	}
	var me *mq.Error
	if errors.As(err, &me) {
		return err
	}
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Condition == amqp.ErrCondNotFound {
		return &mq.Error{Reason: mq.ReasonUnknownObjectName, Op: op, Queue: queue, Cause: err}
	}
	var ce *amqp.ConnError
	if errors.As(err, &ce) {
		return &mq.Error{Reason: mq.ReasonConnectionBroken, Op: op, Queue: queue, Cause: err}
	}
	select {
	case <-c.ac.Done():
		return &mq.Error{Reason: mq.ReasonConnectionBroken, Op: op, Queue: queue, Cause: err}
	default:
	}
	return &mq.Error{Reason: mq.ReasonUnexpectedError, Op: op, Queue: queue, Cause: err}
}

// DeclareQueue declares through Options.Admin, or else checks that the
// administrator defined the queue.
func (c *conn) DeclareQueue(ctx context.Context, spec mq.QueueSpec) error {
	if err := c.usable("declare", spec.Name); err != nil {
		return err
	}
	if c.admin != nil {
		if err := c.admin.DeclareQueue(ctx, spec); err != nil {
			return err
		}
	} else if err := c.probe(ctx, "declare", spec.Name); err != nil {
		return err
	}
	c.known.Store(spec.Name, struct{}{})
	c.t.specs.Store(spec.Name, spec)
	return nil
}

// probe checks that a queue exists: through Options.Admin, or else by
// attaching a receiver that is given no credit (so it takes nothing) in a
// session of its own, then ending the session (RabbitMQ 3.x never answers
// the detach of a receiving link, but does end a session).
func (c *conn) probe(ctx context.Context, op, name string) error {
	if _, ok := c.known.Load(name); ok {
		return nil
	}
	if err := c.usable(op, name); err != nil {
		return err
	}
	if c.admin != nil {
		if _, err := c.admin.Queue(ctx, name); err != nil {
			return err
		}
		c.known.Store(name, struct{}{})
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.t.opts.DialTimeout)
	defer cancel()
	s, err := c.ac.NewSession(ctx, nil)
	if err != nil {
		return c.mapErr(op, name, err)
	}
	defer s.Close(context.WithoutCancel(ctx))
	if _, err := s.NewReceiver(ctx, c.t.address(name), &amqp.ReceiverOptions{Credit: -1}); err != nil {
		return c.mapErr(op, name, err)
	}
	c.known.Store(name, struct{}{})
	return nil
}

func (c *conn) Queue(ctx context.Context, name string) (mq.QueueSpec, error) {
	if c.admin != nil {
		return c.admin.Queue(ctx, name)
	}
	if err := c.probe(ctx, "inquire", name); err != nil {
		return mq.QueueSpec{}, err
	}
	if spec, ok := c.t.specs.Load(name); ok {
		return spec.(mq.QueueSpec), nil
	}
	return mq.QueueSpec{Name: name}, nil
}

func (c *conn) DeleteQueue(ctx context.Context, name string) error {
	c.known.Delete(name)
	c.t.specs.Delete(name)
	if c.admin == nil {
		return &mq.Error{Reason: mq.ReasonUnexpectedError, Op: "delete", Queue: name,
			Cause: errors.New("AMQP 1.0 cannot delete a queue: the broker's administrator does (or set Options.Admin)")}
	}
	return c.admin.DeleteQueue(ctx, name)
}

func (c *conn) Session(ctx context.Context) (mq.Session, error) {
	if err := c.usable("session", ""); err != nil {
		return nil, err
	}
	as, err := c.ac.NewSession(ctx, nil)
	if err != nil {
		return nil, c.mapErr("session", "", err)
	}
	s := &session{c: c, as: as, senders: map[string]*amqp.Sender{}, receivers: map[string]*amqp.Receiver{}}
	c.mu.Lock()
	c.sessions[s] = struct{}{}
	c.mu.Unlock()
	return s, nil
}

// ClaimConsumer claims through Options.Admin (on RabbitMQ an exclusive
// lock queue the broker enforces across processes); without it the claim
// holds within this process only.
func (c *conn) ClaimConsumer(ctx context.Context, queue string) (mq.ConsumerClaim, error) {
	if c.admin != nil {
		return c.admin.ClaimConsumer(ctx, queue)
	}
	const op = "claim consumer"
	if err := c.probe(ctx, op, queue); err != nil {
		return nil, err
	}
	me := mq.LocalHolder(c.id, c.t.opts.App, c.t.opts.Clock.Now())
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	if h, held := c.t.claims[queue]; held {
		return nil, &mq.Error{Reason: mq.ReasonObjectInUse, Op: op, Queue: queue, Cause: &mq.InUseError{Queue: queue, Holder: h}}
	}
	c.t.claims[queue] = me
	c.mu.Lock()
	if c.claims == nil {
		c.claims = map[string]bool{}
	}
	c.claims[queue] = true
	c.mu.Unlock()
	return &localClaim{c: c, queue: queue, holder: me}, nil
}

type localClaim struct {
	c      *conn
	queue  string
	holder mq.Holder
}

func (k *localClaim) Queue() string     { return k.queue }
func (k *localClaim) Holder() mq.Holder { return k.holder }
func (k *localClaim) Release(context.Context) error {
	k.c.release(k.queue)
	return nil
}

func (c *conn) release(queue string) {
	c.mu.Lock()
	held := c.claims[queue]
	delete(c.claims, queue)
	c.mu.Unlock()
	if held {
		c.t.mu.Lock()
		delete(c.t.claims, queue)
		c.t.mu.Unlock()
	}
}

// Close backs out every open session, ends the claims and closes the
// connection; the broker returns anything still unsettled to its queue.
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
	claimed := make([]string, 0, len(c.claims))
	for q := range c.claims {
		claimed = append(claimed, q)
	}
	c.mu.Unlock()
	var errs []error
	for _, s := range sessions {
		errs = append(errs, s.Close())
	}
	for _, q := range claimed {
		c.release(q)
	}
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	if c.admin != nil {
		errs = append(errs, c.admin.Close())
	}
	if err := c.ac.Close(); err != nil {
		var ce *amqp.ConnError
		if !errors.As(err, &ce) || ce.RemoteErr != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
