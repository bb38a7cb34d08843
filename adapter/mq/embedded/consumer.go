package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/coordinator/store"
)

// consumerClaim is a row of mq_consumer held by this connection.
type consumerClaim struct {
	c      *conn
	queue  string
	holder mq.Holder
}

func (k *consumerClaim) Queue() string     { return k.queue }
func (k *consumerClaim) Holder() mq.Holder { return k.holder }

// Release deletes the claim row (only if this connection still holds it).
func (k *consumerClaim) Release(ctx context.Context) error {
	err := k.c.db.Write(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM mq_consumer WHERE queue = ? AND conn = ?`, k.queue, k.c.id)
		return err
	})
	if err != nil {
		return &mq.Error{Reason: mq.ReasonUnexpectedError, Op: "release consumer", Queue: k.queue, Cause: err}
	}
	k.c.log.Info("mq.consumer_released", "queue", k.queue)
	return nil
}

// ClaimConsumer takes the queue's row in mq_consumer for this connection.
// A row held by a live connection refuses the claim with MQRC 2042 naming
// that connection. A row whose connection's lease ran out is reaped. A row
// whose holder process is gone from this host (its pid no longer runs, or
// runs a different process) is taken over at once, without waiting for the
// lease: that connection is removed and its uncommitted gets are restored
// with BackoutCount+1, exactly as the lease's expiry would do.
func (c *conn) ClaimConsumer(ctx context.Context, queue string) (mq.ConsumerClaim, error) {
	if err := c.usable("claim consumer", queue); err != nil {
		return nil, err
	}
	if err := c.requireQueue(ctx, "claim consumer", queue); err != nil {
		return nil, err
	}
	if _, err := c.reap(ctx); err != nil {
		return nil, &mq.Error{Reason: mq.ReasonUnexpectedError, Op: "claim consumer", Queue: queue, Cause: err}
	}
	now := c.t.opts.Clock.Now()
	me := mq.LocalHolder(c.id, c.t.opts.App, now)
	var held *mq.Holder
	var tookOver string
	err := c.db.Write(ctx, func(tx *store.Tx) error {
		h, start, err := readHolder(ctx, tx, queue)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case h.Host == me.Host && !processAlive(h.PID, start):
			// The holder's process is dead: end its connection now.
			if _, err := tx.ExecContext(ctx, `DELETE FROM mq_connection WHERE id = ?`, h.Conn); err != nil {
				return err
			}
			if _, err := restoreOrphans(ctx, tx); err != nil {
				return err
			}
			tookOver = h.String()
		default:
			held = &h
			return nil
		}
		// Guarded: of connections racing on a shared database (another
		// node's writer runs beside this one on PostgreSQL) exactly one
		// inserts; the others read the winner and are refused.
		ok, err := store.Applied(tx.ExecContext(ctx, `INSERT OR IGNORE INTO mq_consumer (queue, conn, pid, host, app, proc_start, since) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			queue, c.id, me.PID, me.Host, me.App, procStart(me.PID), stamp(now)))
		if err != nil || ok {
			return err
		}
		h, _, err = readHolder(ctx, tx, queue)
		if err != nil {
			return err
		}
		held = &h
		return nil
	})
	if err != nil {
		return nil, &mq.Error{Reason: mq.ReasonUnexpectedError, Op: "claim consumer", Queue: queue, Cause: err}
	}
	if held != nil {
		return nil, &mq.Error{Reason: mq.ReasonObjectInUse, Op: "claim consumer", Queue: queue, Cause: &mq.InUseError{Queue: queue, Holder: *held}}
	}
	if tookOver != "" {
		c.log.Warn("mq.consumer_taken_over", "queue", queue, "dead_holder", tookOver)
		c.hub.notifyAll()
	}
	c.log.Info("mq.consumer_claimed", "queue", queue)
	return &consumerClaim{c: c, queue: queue, holder: me}, nil
}

func readHolder(ctx context.Context, tx *store.Tx, queue string) (mq.Holder, string, error) {
	var h mq.Holder
	var since, start string
	err := tx.QueryRowContext(ctx, `SELECT conn, pid, host, app, proc_start, since FROM mq_consumer WHERE queue = ?`, queue).
		Scan(&h.Conn, &h.PID, &h.Host, &h.App, &start, &since)
	if err != nil {
		return h, "", err
	}
	h.Since, _ = parseStamp(since)
	return h, start, nil
}

// heldByOther returns the InUse error when another connection holds the
// queue's consumer claim: a Get is then refused, as IBM MQ refuses to open
// a queue for input while another connection has it open exclusively.
func (c *conn) heldByOther(ctx context.Context, queue string) error {
	var h mq.Holder
	err := c.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		h, _, err = readHolder(ctx, tx, queue)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return &mq.Error{Reason: mq.ReasonUnexpectedError, Op: "get", Queue: queue, Cause: err}
	}
	if h.Conn == c.id {
		return nil
	}
	return &mq.Error{Reason: mq.ReasonObjectInUse, Op: "get", Queue: queue, Cause: &mq.InUseError{Queue: queue, Holder: h}}
}

// processAlive reports whether pid runs on this host and, when start (its
// recorded start from procfs) is known, is still the same process. A
// zombie (killed, not yet reaped by its parent) is dead: its files, and so
// its locks, are already released.
func processAlive(pid int, start string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	state, now := procStat(pid)
	if state == "Z" || state == "X" {
		return false
	}
	if start != "" && now != "" && now != start {
		return false // the pid was reused by another process
	}
	return true
}

// procStart is the process's start time in clock ticks since boot (field
// 22 of /proc/<pid>/stat), or "" where procfs is not available.
func procStart(pid int) string {
	_, start := procStat(pid)
	return start
}

// procStat returns the state (field 3) and start time (field 22) of
// /proc/<pid>/stat, or empty strings.
func procStat(pid int) (state, start string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return "", ""
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3
	if len(f) < 20 {
		return "", ""
	}
	return f[0], f[19]
}
