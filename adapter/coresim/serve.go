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
	// window while offline (default 100ms).
	Poll time.Duration
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
		cfg.Poll = 100 * time.Millisecond
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

// Serve takes requests off the core's request queue one at a time, in
// arrival order, and replies to each, until ctx is done. It is the queue's
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
			if !clock.Sleep(ctx, cfg.Poll) {
				return c.fatal
			}
			continue
		}
		ok := c.serveOne(ctx, sess, cfg, policy)
		c.serving.Unlock()
		if !ok {
			return c.fatal
		}
	}
}

// serveOne takes and processes at most one request; false means stop.
func (c *Core) serveOne(ctx context.Context, sess mq.Session, cfg ServeConfig, policy mq.PoisonPolicy) bool {
	gctx, cancel := context.WithTimeout(ctx, cfg.Poll)
	msg, err := sess.Get(gctx, cfg.RequestQueue, mq.Any)
	cancel()
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
