package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Defaults for Options.
const (
	DefaultLeaseTTL     = 30 * time.Second
	DefaultPollInterval = 50 * time.Millisecond
)

// Options tune a Transport. The zero value is usable.
type Options struct {
	// Clock stamps puts, expiry and heartbeats; nil means clock.System{}.
	Clock clock.Clock
	// Logger receives one JSON event per connection lifecycle step and
	// per backout; nil discards.
	Logger *slog.Logger
	// LeaseTTL is how long a connection may go without a heartbeat before
	// other connections treat it as dead and restore its uncommitted gets
	// with BackoutCount+1. Heartbeats are sent every LeaseTTL/3.
	LeaseTTL time.Duration
	// PollInterval is how often a waiting Get looks for messages committed
	// by other processes (commits in this process wake it at once).
	PollInterval time.Duration
	// App names the application in the holder of a consumer claim (for
	// example "zcgw serve node-1a2b"), so a refused claimant can say who
	// holds the queue.
	App string
}

// Transport is the embedded backend for one queue file.
type Transport struct {
	path   string
	opts   Options
	shared sharedDB
}

// sharedDB is the transport's one handle on the queue file, shared by all
// its connections: every connection's puts, gets and commits go through
// the same group-commit writer (store.DB.Write), so units of work of
// different connections that commit at the same moment share one fsync
// instead of queueing for SQLite's file lock one commit at a time. A
// connection takes a reference at Connect and drops it at Close; the file
// closes with the last one. Its counters survive a close (Stats).
type sharedDB struct {
	mu     sync.Mutex
	db     *store.DB
	refs   int
	closed store.Snapshot // counters of handles already closed
}

func (s *sharedDB) acquire(ctx context.Context, path string) (*store.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		db, err := store.Open(ctx, path, schema)
		if err != nil {
			return nil, err
		}
		s.db = db
	}
	s.refs++
	return s.db, nil
}

// release drops one reference and closes the file with the last one.
func (s *sharedDB) release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refs--
	if s.refs > 0 || s.db == nil {
		return nil
	}
	st := s.db.Stats()
	s.closed.Commits += st.Commits
	s.closed.Statements += st.Statements
	db := s.db
	s.db = nil
	return db.Close()
}

// Stats is how many write transactions (Commits: each one fsync of the
// WAL under synchronous=FULL) and SQL statements this transport's
// connections have run on the queue file so far, closed handles
// included; zcgw bench reports both per settled transfer.
func (t *Transport) Stats() store.Snapshot {
	t.shared.mu.Lock()
	defer t.shared.mu.Unlock()
	n := t.shared.closed
	if t.shared.db != nil {
		st := t.shared.db.Stats()
		n.Commits += st.Commits
		n.Statements += st.Statements
	}
	return n
}

var _ mq.Transport = (*Transport)(nil)

// New returns a transport for the queue store at path, a SQLite file or
// a postgres:// location (store.Open; created on first Connect).
func New(path string, opts Options) *Transport {
	if store.IsPostgres(path) {
		// a URL, used as is
	} else if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	return &Transport{path: path, opts: opts}
}

// Path is the queue file.
func (t *Transport) Path() string { return t.path }

// Connect opens the queue file, registers a connection heartbeat and
// restores the claims of connections found dead.
func (t *Transport) Connect(ctx context.Context) (mq.Connection, error) {
	db, err := t.shared.acquire(ctx, t.path)
	if err != nil {
		return nil, &mq.Error{Reason: mq.ReasonConnectionBroken, Op: "connect", Cause: err}
	}
	c := &conn{
		t:        t,
		db:       db,
		id:       mq.NewID().String()[:32],
		hub:      acquireHub(t.path),
		log:      t.opts.Logger.With("mq_conn", ""),
		sessions: map[*session]struct{}{},
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	c.log = t.opts.Logger.With("mq_conn", c.id)
	at := t.opts.Clock.Now()
	now := stamp(at)
	if err := db.Write(ctx, func(tx *store.Tx) error {
		if err := addLeaseColumn(ctx, tx); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO mq_connection (id, started_at, heartbeat_at, lease_until) VALUES (?, ?, ?, ?)`,
			c.id, now, now, stamp(at.Add(t.opts.LeaseTTL)))
		return err
	}); err != nil {
		releaseHub(t.path, c.hub)
		return nil, errors.Join(&mq.Error{Reason: mq.ReasonConnectionBroken, Op: "connect", Cause: err}, t.shared.release())
	}
	if _, err := c.reap(ctx); err != nil {
		c.log.Warn("mq.reap_failed", "error", err.Error())
	}
	go c.heartbeatLoop()
	c.log.Info("mq.connected", "path", store.Redact(t.path))
	return c, nil
}

type conn struct {
	t   *Transport
	db  *store.DB
	id  string
	hub *hub
	log *slog.Logger

	mu          sync.Mutex
	sessions    map[*session]struct{}
	closed      bool
	nextSession int64

	broken atomic.Bool
	known  sync.Map // queue name -> struct{}

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

func (c *conn) usable(op, queue string) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return &mq.Error{Reason: mq.ReasonHConnError, Op: op, Queue: queue, Cause: errors.New("connection closed")}
	}
	if c.broken.Load() {
		return &mq.Error{Reason: mq.ReasonConnectionBroken, Op: op, Queue: queue,
			Cause: errors.New("this connection's lease was taken over after a missed heartbeat")}
	}
	return nil
}

func (c *conn) heartbeatLoop() {
	defer close(c.done)
	tick := time.NewTicker(c.t.opts.LeaseTTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
			ctx, cancel := context.WithTimeout(context.Background(), c.t.opts.LeaseTTL)
			if err := c.heartbeat(ctx); err != nil {
				c.log.Warn("mq.heartbeat_failed", "error", err.Error())
			}
			if _, err := c.reap(ctx); err != nil {
				c.log.Warn("mq.reap_failed", "error", err.Error())
			}
			cancel()
		}
	}
}

// heartbeat renews this connection's lease. If the row is gone another
// connection judged this one dead and restored its claims: the connection
// is then broken for good.
func (c *conn) heartbeat(ctx context.Context) error {
	var n int64
	err := c.db.Write(ctx, func(tx *store.Tx) error {
		now := c.t.opts.Clock.Now()
		res, err := tx.ExecContext(ctx, `UPDATE mq_connection SET heartbeat_at = ?, lease_until = ? WHERE id = ?`,
			stamp(now), stamp(now.Add(c.t.opts.LeaseTTL)), c.id)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return err
	}
	if n == 0 && !c.broken.Swap(true) {
		c.log.Error("mq.connection_lost", "reason", "lease taken over by another connection")
	}
	return nil
}

// reap deletes connections whose lease has run out and restores every
// message claimed by a connection that no longer exists, with
// backout_count+1. It returns how many messages it restored. Each
// connection's lease is its own (lease_until, from its own LeaseTTL), so
// processes with different TTLs never judge each other by their own; a row
// from a queue file written before lease_until existed is judged by this
// connection's TTL.
func (c *conn) reap(ctx context.Context) (int64, error) {
	now := c.t.opts.Clock.Now()
	var restored int64
	err := c.db.Write(ctx, func(tx *store.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM mq_connection
			WHERE lease_until < ? OR (lease_until IS NULL AND heartbeat_at < ?)`,
			stamp(now), stamp(now.Add(-c.t.opts.LeaseTTL))); err != nil {
			return err
		}
		var err error
		restored, err = restoreOrphans(ctx, tx)
		return err
	})
	if err != nil {
		return 0, err
	}
	if restored > 0 {
		c.log.Warn("mq.claims_restored", "messages", restored, "cause", "dead connection")
		c.hub.notifyAll()
	}
	return restored, nil
}

// restoreOrphans restores, with backout_count+1, every message claimed by
// a connection that no longer exists, and ends that connection's consumer
// claims.
func restoreOrphans(ctx context.Context, tx *store.Tx) (int64, error) {
	if _, err := tx.ExecContext(ctx, `DELETE FROM mq_consumer WHERE conn NOT IN (SELECT id FROM mq_connection)`); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `UPDATE mq_message
		SET claim_conn = NULL, claim_session = NULL, claimed_at = NULL, backout_count = backout_count + 1
		WHERE claim_conn IS NOT NULL AND claim_conn NOT IN (SELECT id FROM mq_connection)`)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// addLeaseColumn adds mq_connection.lease_until to a queue file created
// before the column existed (CREATE TABLE IF NOT EXISTS leaves an old table
// as it is).
func addLeaseColumn(ctx context.Context, tx *store.Tx) error {
	if ok, err := store.ColumnExists(ctx, tx, "mq_connection", "lease_until"); err != nil || ok {
		return err
	}
	_, err := tx.ExecContext(ctx, `ALTER TABLE mq_connection ADD COLUMN lease_until TEXT`)
	return err
}

func (c *conn) DeclareQueue(ctx context.Context, spec mq.QueueSpec) error {
	if err := c.usable("declare", spec.Name); err != nil {
		return err
	}
	if err := validateQueueName(spec.Name); err != nil {
		return &mq.Error{Reason: mq.ReasonUnknownObjectName, Op: "declare", Queue: spec.Name, Cause: err}
	}
	if spec.BackoutThreshold < 0 {
		return &mq.Error{Reason: mq.ReasonUnexpectedError, Op: "declare", Queue: spec.Name,
			Cause: fmt.Errorf("negative backout threshold %d", spec.BackoutThreshold)}
	}
	err := c.db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO mq_queue (name, backout_threshold, backout_queue, created_at)
			VALUES (?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET backout_threshold = excluded.backout_threshold, backout_queue = excluded.backout_queue`,
			spec.Name, spec.BackoutThreshold, spec.BackoutQueue, stamp(c.t.opts.Clock.Now()))
		return err
	})
	if err != nil {
		return &mq.Error{Reason: mq.ReasonUnexpectedError, Op: "declare", Queue: spec.Name, Cause: err}
	}
	c.known.Store(spec.Name, struct{}{})
	return nil
}

func validateQueueName(name string) error {
	if name == "" || len(name) > 255 {
		return fmt.Errorf("queue name %q: length must be 1..255", name)
	}
	if strings.ContainsFunc(name, func(r rune) bool { return r < 0x21 || r == 0x7f }) {
		return fmt.Errorf("queue name %q: control characters and spaces not allowed", name)
	}
	return nil
}

func (c *conn) Queue(ctx context.Context, name string) (mq.QueueSpec, error) {
	if err := c.usable("inquire", name); err != nil {
		return mq.QueueSpec{}, err
	}
	spec := mq.QueueSpec{Name: name}
	err := c.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT backout_threshold, backout_queue FROM mq_queue WHERE name = ?`, name).
			Scan(&spec.BackoutThreshold, &spec.BackoutQueue)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return mq.QueueSpec{}, &mq.Error{Reason: mq.ReasonUnknownObjectName, Op: "inquire", Queue: name, Cause: errors.New("queue not declared")}
	}
	if err != nil {
		return mq.QueueSpec{}, &mq.Error{Reason: mq.ReasonUnexpectedError, Op: "inquire", Queue: name, Cause: err}
	}
	return spec, nil
}

// Depth is the queue's current depth (mq.DepthInquirer): its messages,
// claimed or not, counted on the (queue, correl_id) index; MQRC 2085 when
// the queue is not declared.
func (c *conn) Depth(ctx context.Context, name string) (int64, error) {
	if err := c.requireQueue(ctx, "inquire", name); err != nil {
		return 0, err
	}
	var n int64
	err := c.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM mq_message WHERE queue = ?`, name).Scan(&n)
	})
	if err != nil {
		return 0, &mq.Error{Reason: mq.ReasonUnexpectedError, Op: "inquire", Queue: name, Cause: err}
	}
	return n, nil
}

// requireQueue returns MQRC 2085 unless the queue is declared.
func (c *conn) requireQueue(ctx context.Context, op, name string) error {
	if _, ok := c.known.Load(name); ok {
		return nil
	}
	if _, err := c.Queue(ctx, name); err != nil {
		var e *mq.Error
		if errors.As(err, &e) {
			e.Op = op
		}
		return err
	}
	c.known.Store(name, struct{}{})
	return nil
}

func (c *conn) DeleteQueue(ctx context.Context, name string) error {
	if err := c.usable("delete", name); err != nil {
		return err
	}
	var n int64
	err := c.db.Write(ctx, func(tx *store.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM mq_queue WHERE name = ?`, name)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	c.known.Delete(name)
	if err != nil {
		return &mq.Error{Reason: mq.ReasonUnexpectedError, Op: "delete", Queue: name, Cause: err}
	}
	if n == 0 {
		return &mq.Error{Reason: mq.ReasonUnknownObjectName, Op: "delete", Queue: name, Cause: errors.New("queue not declared")}
	}
	return nil
}

func (c *conn) Session(ctx context.Context) (mq.Session, error) {
	if err := c.usable("session", ""); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextSession++
	s := &session{c: c, id: c.nextSession, got: map[string]struct{}{}}
	c.sessions[s] = struct{}{}
	return s, nil
}

// Close backs out every open session, removes the heartbeat row and closes
// the file.
func (c *conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	sessions := make([]*session, 0, len(c.sessions))
	for s := range c.sessions {
		sessions = append(sessions, s)
	}
	c.mu.Unlock()
	c.hub.notifyAll() // wake this connection's waiting getters so they see the close
	var errs []error
	for _, s := range sessions {
		errs = append(errs, s.Close())
	}
	c.stopOnce.Do(func() { close(c.stop) })
	<-c.done
	ctx := context.Background()
	if err := c.db.Write(ctx, func(tx *store.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM mq_consumer WHERE conn = ?`, c.id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM mq_connection WHERE id = ?`, c.id)
		return err
	}); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.t.shared.release())
	releaseHub(c.t.path, c.hub)
	c.log.Info("mq.disconnected")
	return errors.Join(errs...)
}

// crash stops the heartbeat and abandons the connection without backing
// anything out, as if its process had died. Tests only.
func (c *conn) crash() {
	c.stopOnce.Do(func() { close(c.stop) })
	<-c.done
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	_ = c.t.shared.release()
	releaseHub(c.t.path, c.hub)
}
