package coresim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/formats/coremsg"
)

// ServeConfig configures the MQ serving loop.
type ServeConfig struct {
	// RequestQueue and BackoutQueue default to coremsg.QueuesFor(bank).
	// Replies go to the queue named in each request's ReplyTo.
	RequestQueue string
	BackoutQueue string
	// BackoutThreshold: a request backed out this many times is moved to
	// the backout queue (default 3).
	BackoutThreshold int
	// Poll bounds each wait for a request and the re-check of the online
	// window while offline (default 1s). The wait itself ends as soon as a
	// request is committed on the queue (the transport's wake-up), and
	// SetOffline ends it at once, so Poll only bounds how often an idle
	// loop looks (and how late a window's start is noticed).
	Poll time.Duration
	// Batch is how many requests the loop takes off its queue in one unit
	// of work and applies in one core transaction (default 64). 1 serves
	// them one at a time.
	Batch int
	// ReplyExpiry is the lifetime of replies, so replies nobody waits for
	// any more do not pile up (default 10m).
	ReplyExpiry time.Duration
	// Claim is the request queue's consumer claim, taken on conn by the
	// caller with Core.Claim (so a refusal can fail the caller's start).
	// Nil: Serve takes it itself.
	Claim mq.ConsumerClaim
}

func (c *Core) serveDefaults(cfg ServeConfig) ServeConfig {
	def := coremsg.QueuesFor(c.bank)
	if cfg.RequestQueue == "" {
		cfg.RequestQueue = def.Request
	}
	if cfg.BackoutQueue == "" {
		cfg.BackoutQueue = def.Backout
	}
	if cfg.BackoutThreshold <= 0 {
		cfg.BackoutThreshold = 3
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 64
	}
	if cfg.ReplyExpiry <= 0 {
		cfg.ReplyExpiry = 10 * time.Minute
	}
	return cfg
}

// DeclareQueues declares the core's request and backout queues.
func (c *Core) DeclareQueues(ctx context.Context, conn mq.Connection, cfg ServeConfig) error {
	cfg = c.serveDefaults(cfg)
	if err := conn.DeclareQueue(ctx, mq.QueueSpec{Name: cfg.BackoutQueue}); err != nil {
		return fmt.Errorf("coresim %s: declare %s: %w", c.bank, cfg.BackoutQueue, err)
	}
	if err := conn.DeclareQueue(ctx, mq.QueueSpec{Name: cfg.RequestQueue,
		BackoutThreshold: cfg.BackoutThreshold, BackoutQueue: cfg.BackoutQueue}); err != nil {
		return fmt.Errorf("coresim %s: declare %s: %w", c.bank, cfg.RequestQueue, err)
	}
	return nil
}

// Claim declares the core's queues and makes conn the one consumer of its
// request queue (mq.Connection.ClaimConsumer): exactly-once against this
// non-idempotent core assumes a single consumer taking requests in FIFO
// order. A second one is refused with MQRC 2042 naming the holder.
func (c *Core) Claim(ctx context.Context, conn mq.Connection, cfg ServeConfig) (mq.ConsumerClaim, error) {
	cfg = c.serveDefaults(cfg)
	if err := c.DeclareQueues(ctx, conn, cfg); err != nil {
		return nil, err
	}
	claim, err := conn.ClaimConsumer(ctx, cfg.RequestQueue)
	if err != nil {
		return nil, fmt.Errorf("coresim %s: a second consumer of the core's request queue is refused: %w", c.bank, err)
	}
	return claim, nil
}

// ServeAsStandby is Serve for one of several nodes that run this core in
// process on one shared queue manager and core database: exactly one of
// them is the request queue's consumer. It claims the queue (Claim);
// while another connection holds it (MQRC 2042) it tries again every
// retry, and the holder's claim ends when it is released (a clean stop),
// when its process is found dead on this host (at once), or when its
// connection's lease runs out (a holder on another host). Then it serves
// until ctx is done. It returns nil when ctx ends while it waits, and any
// other claim error as it is.
func (c *Core) ServeAsStandby(ctx context.Context, conn mq.Connection, cfg ServeConfig, retry time.Duration) error {
	cfg = c.serveDefaults(cfg)
	if retry <= 0 {
		retry = time.Second
	}
	waiting := ""
	for {
		claim, err := c.Claim(ctx, conn, cfg)
		if err == nil {
			if waiting != "" {
				c.log.InfoContext(ctx, "coresim.standby_took_over", "bank", c.bank, "queue", cfg.RequestQueue, "previous", waiting)
			}
			cfg.Claim = claim
			return c.Serve(ctx, conn, cfg)
		}
		if ctx.Err() != nil {
			return nil
		}
		inUse, ok := errors.AsType[*mq.InUseError](err)
		if !ok {
			return err
		}
		if h := inUse.Holder.String(); h != waiting {
			waiting = h
			c.log.InfoContext(ctx, "coresim.standby", "bank", c.bank, "queue", cfg.RequestQueue, "holder", h)
		}
		if !clock.Sleep(ctx, retry) {
			return nil
		}
	}
}

// Serve takes requests off the core's request queue in arrival order, a
// batch at a time (ServeConfig.Batch), and replies to each, until ctx is
// done. A batch is one MQ unit of work (its gets and its replies) and one
// core transaction (every request of it applied in order, each still
// applied as often as it is received: the core is not idempotent); the
// replies are committed after the core's commit, as for a single request. It is the queue's
// one consumer: it uses cfg.Claim or claims the queue itself (Claim), and
// releases the claim when it returns. While the core is
// offline it takes nothing off the queue. A request it cannot process
// (undecodable, or a storage failure) is backed out; once its BackoutCount
// reaches the threshold it is moved to the backout queue.
func (c *Core) Serve(ctx context.Context, conn mq.Connection, cfg ServeConfig) error {
	cfg = c.serveDefaults(cfg)
	claim := cfg.Claim
	if claim == nil {
		var err error
		if claim, err = c.Claim(ctx, conn, cfg); err != nil {
			return err
		}
	}
	defer func() {
		if err := claim.Release(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, mq.ErrClosed) && !errors.Is(err, mq.ErrConnectionBroken) {
			c.log.Warn("coresim.release_failed", "bank", c.bank, "err", err.Error())
		}
	}()
	sess, err := conn.Session(ctx)
	if err != nil {
		return fmt.Errorf("coresim %s: session: %w", c.bank, err)
	}
	defer sess.Close()
	policy := mq.PoisonPolicy{Threshold: cfg.BackoutThreshold, BackoutQueue: cfg.BackoutQueue}
	c.log.InfoContext(ctx, "coresim.serve", "bank", c.bank, "queue", cfg.RequestQueue)
	c.fatal = nil
	for {
		if ctx.Err() != nil {
			return c.fatal
		}
		// Online is checked under the serving lock, so SetOffline(true)
		// returning means no later request is taken.
		c.serving.Lock()
		if !c.Online(c.clk.Now()) {
			c.serving.Unlock()
			if !c.sleepOffline(ctx, cfg.Poll) {
				return c.fatal
			}
			continue
		}
		ok := c.serveBatch(ctx, sess, cfg, policy)
		c.serving.Unlock()
		if !ok {
			return c.fatal
		}
	}
}

// sleepOffline waits while the core is offline: until SetOffline(false),
// ctx's end or d (the re-check of the windows). False: ctx ended.
func (c *Core) sleepOffline(ctx context.Context, d time.Duration) bool {
	c.mu.Lock()
	back := c.onlineCh
	c.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-back:
	case <-ctx.Done():
		return false
	}
	return true
}

// waitContext is the context of one wait for requests: it ends after d,
// with ctx, or when SetOffline(true) is called (so taking the core
// offline does not wait for an idle wait to run out).
func (c *Core) waitContext(ctx context.Context, d time.Duration) (context.Context, func()) {
	wctx, cancel := context.WithTimeout(ctx, d)
	c.mu.Lock()
	if c.forcedOff {
		cancel()
	}
	c.stopWait = cancel
	c.mu.Unlock()
	return wctx, func() {
		c.mu.Lock()
		c.stopWait = nil
		c.mu.Unlock()
		cancel()
	}
}

// serveBatch takes up to cfg.Batch requests and processes them; false
// means stop. While a test fault is armed, or after a batch that had to
// be backed out (for as many requests as it held), requests are served
// one at a time, exactly as before batching: a fault acts on the one
// request it names, and a request the core cannot process is backed out
// alone, counted towards its own backout threshold.
func (c *Core) serveBatch(ctx context.Context, sess mq.Session, cfg ServeConfig, policy mq.PoisonPolicy) bool {
	n := cfg.Batch
	if c.faultsArmed() || c.single > 0 {
		n = 1
	}
	gctx, done := c.waitContext(ctx, cfg.Poll)
	msgs, err := mq.GetBatch(gctx, sess, cfg.RequestQueue, n)
	done()
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		if errors.Is(err, mq.ErrNoMessage) {
			return true
		}
		c.log.ErrorContext(ctx, "coresim.get_failed", "bank", c.bank, "err", err.Error())
		_ = sess.Rollback(context.WithoutCancel(ctx))
		if errors.Is(err, mq.ErrClosed) || errors.Is(err, mq.ErrConnectionBroken) {
			c.fatal = fmt.Errorf("coresim %s: %w", c.bank, err)
			return false
		}
		return clock.Sleep(ctx, cfg.Poll)
	}
	if len(msgs) == 1 && (c.single > 0 || c.faultsArmed()) {
		c.single = max(c.single-1, 0)
		return c.serveOne(ctx, sess, cfg, policy, msgs[0])
	}
	// While requests keep coming, each batch's commit also takes the next
	// batch (mq.CommitAndGet: one MQ commit per batch instead of a commit
	// and a claim), for up to chainRounds batches under this one hold of
	// the serving lock, so SetOffline waits at most that long. A chained
	// batch is served as a batch whatever its size; a fault armed meanwhile
	// ends the chain (its requests are then served one at a time).
	for round := 1; ; round++ {
		chain := round < chainRounds && !c.faultsArmed() && c.Online(c.clk.Now())
		next, err := c.processBatch(ctx, sess, cfg, policy, msgs, chain)
		if err != nil {
			c.log.WarnContext(ctx, "coresim.batch_backout", "bank", c.bank, "requests", len(msgs), "err", err.Error())
			_ = sess.Rollback(context.WithoutCancel(ctx))
			c.single = len(msgs)
			return true
		}
		if len(next) == 0 {
			return true
		}
		msgs = next
	}
}

// chainRounds bounds how many batches serveBatch serves back to back, each
// taken by the previous one's commit.
const chainRounds = 16

// serveOne processes one request got in sess's open unit of work.
func (c *Core) serveOne(ctx context.Context, sess mq.Session, cfg ServeConfig, policy mq.PoisonPolicy, msg *mq.Message) bool {
	moved, err := mq.HandlePoison(ctx, sess, cfg.RequestQueue, msg, policy, "core could not process the request")
	if err != nil {
		c.log.ErrorContext(ctx, "coresim.backout_failed", "bank", c.bank, "msg_id", msg.MsgID.String(), "err", err.Error())
		return true
	}
	if moved {
		c.log.WarnContext(ctx, "coresim.poison", "bank", c.bank, "msg_id", msg.MsgID.String(),
			"backout_count", msg.BackoutCount, "backout_queue", cfg.BackoutQueue)
		return true
	}
	if err := c.process(ctx, sess, cfg, msg); err != nil {
		c.log.WarnContext(ctx, "coresim.backout", "bank", c.bank, "msg_id", msg.MsgID.String(),
			"backout_count", msg.BackoutCount, "err", err.Error())
		_ = sess.Rollback(context.WithoutCancel(ctx))
	}
	return true
}

// process handles one request inside the session's open unit of work. An
// error means "back the unit out" (the request will be redelivered).
func (c *Core) process(ctx context.Context, sess mq.Session, cfg ServeConfig, msg *mq.Message) error {
	msgID := msg.MsgID.String()
	var reply []byte
	seen := false
	err := c.db.Write(ctx, func(tx *store.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT reply FROM CoreProcessed WHERE msg_id = ?`, msgID).Scan(&reply)
		if err == nil {
			seen = true
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var effect bool
		reply, effect, err = c.handle(ctx, tx, msg)
		if err != nil {
			return err
		}
		if effect {
			_, err = tx.ExecContext(ctx, `INSERT INTO CoreProcessed (msg_id, reply, processed_at) VALUES (?, ?, ?)`,
				msgID, reply, clock.Stamp(c.clk.Now()))
		}
		return err
	})
	if err != nil {
		return err
	}
	if seen {
		c.log.InfoContext(ctx, "coresim.redelivered", "bank", c.bank, "msg_id", msgID, "backout_count", msg.BackoutCount)
	}
	drop, crash, twice, delay := c.takeFaults()
	if crash && !seen {
		c.log.WarnContext(ctx, "coresim.fault_crash", "bank", c.bank, "msg_id", msgID)
		return sess.Rollback(context.WithoutCancel(ctx))
	}
	if delay > 0 {
		c.log.WarnContext(ctx, "coresim.fault_delay", "bank", c.bank, "msg_id", msgID, "delay", delay.String())
		clock.Sleep(ctx, delay)
	}
	if drop {
		c.log.WarnContext(ctx, "coresim.fault_drop_reply", "bank", c.bank, "msg_id", msgID)
	} else if msg.ReplyTo != "" {
		if err := mq.Reply(ctx, sess, msg, &mq.Message{Body: reply, Expiry: cfg.ReplyExpiry}); err != nil {
			return err
		}
	}
	if twice {
		c.log.WarnContext(ctx, "coresim.fault_deliver_twice", "bank", c.bank, "msg_id", msgID)
		dup := msg.Clone()
		dup.Expiry = 0
		if err := sess.Put(ctx, cfg.RequestQueue, dup); err != nil {
			return err
		}
	}
	if err := sess.Commit(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	return nil
}

// processBatch handles requests got in sess's open unit of work: those at
// their backout threshold are moved to the backout queue, the others are
// applied in one core transaction (each as process would: a redelivered
// MsgID is answered from its stored reply), then every reply is put and
// the unit committed. With chain, the commit also gets the next batch of
// requests (no wait), returned in the new unit. An error means "back the
// whole unit out" (the new unit's, when the commit itself had succeeded:
// then it holds only the next batch, if any).
func (c *Core) processBatch(ctx context.Context, sess mq.Session, cfg ServeConfig, policy mq.PoisonPolicy, msgs []*mq.Message, chain bool) ([]*mq.Message, error) {
	type item struct {
		msg   *mq.Message
		reply []byte
		seen  bool
	}
	var items []item
	for _, msg := range msgs {
		if cp := mq.PoisonCopy(cfg.RequestQueue, msg, policy, "core could not process the request"); cp != nil {
			if err := sess.Put(ctx, policy.BackoutQueue, cp); err != nil {
				return nil, err
			}
			c.log.WarnContext(ctx, "coresim.poison", "bank", c.bank, "msg_id", msg.MsgID.String(),
				"backout_count", msg.BackoutCount, "backout_queue", cfg.BackoutQueue)
			continue
		}
		items = append(items, item{msg: msg})
	}
	err := c.db.Write(ctx, func(tx *store.Tx) error {
		for i := range items {
			it := &items[i]
			it.reply, it.seen = nil, false
			msgID := it.msg.MsgID.String()
			err := tx.QueryRowContext(ctx, `SELECT reply FROM CoreProcessed WHERE msg_id = ?`, msgID).Scan(&it.reply)
			if err == nil {
				it.seen = true
				continue
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			var effect bool
			if it.reply, effect, err = c.handle(ctx, tx, it.msg); err != nil {
				return err
			}
			if effect {
				if _, err := tx.ExecContext(ctx, `INSERT INTO CoreProcessed (msg_id, reply, processed_at) VALUES (?, ?, ?)`,
					msgID, it.reply, clock.Stamp(c.clk.Now())); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		if it.seen {
			c.log.InfoContext(ctx, "coresim.redelivered", "bank", c.bank, "msg_id", it.msg.MsgID.String(), "backout_count", it.msg.BackoutCount)
		}
		if it.msg.ReplyTo != "" {
			if err := mq.Reply(ctx, sess, it.msg, &mq.Message{Body: it.reply, Expiry: cfg.ReplyExpiry}); err != nil {
				return nil, err
			}
		}
	}
	if !chain {
		return nil, sess.Commit(context.WithoutCancel(ctx))
	}
	return mq.CommitAndGet(context.WithoutCancel(ctx), sess, cfg.RequestQueue, cfg.Batch)
}
