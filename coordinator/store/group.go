package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/zcgw/zcgw/coordinator/failpoint"
)

// Group commit. Every Write goes through one writer per database: callers
// queue, and while one group commits the next forms. A group runs its
// callers' fns one after another in arrival order in one write
// transaction, each but the first in its own savepoint (runGroup), and
// commits them with one fsync.
// A lone caller runs without a savepoint, as a plain transaction. So the
// commit rate stays at the disk's fsync rate while the work rate grows
// with concurrency, and durability is unchanged: Write returns only after
// the commit that holds the caller's writes.

// maxGroup bounds how many callers share one commit.
const maxGroup = 256

type groupReq struct {
	ctx   context.Context
	fn    func(tx *Tx) error
	err   error
	panic any
	done  chan struct{}
	tries int // runs lost to a lock conflict (PostgreSQL), see retry
}

// maxConflictRuns bounds how often one caller's fn is run again after
// losing a lock conflict before its error is returned.
const maxConflictRuns = 8

// retry reports whether r lost its run to a lock conflict (PostgreSQL: a
// deadlock, or a serialization failure) and should run again in the next
// group rather than return. Several nodes' groups each hold the row locks
// of many callers, taken in arrival order, so two groups can lock two rows
// in opposite orders; PostgreSQL then aborts one caller's statement. Its
// writes were undone (its savepoint, or its whole lone transaction), and
// it runs again once this group has committed and released its locks.
func (db *DB) retry(r *groupReq, groupErr error) bool {
	if !db.postgres || r.panic != nil || r.tries >= maxConflictRuns {
		return false
	}
	if !isLockConflict(r.err) && !isLockConflict(groupErr) {
		return false
	}
	r.tries++
	r.err = nil
	return true
}

// requeue puts callers to run again at the head of the queue, after a
// short random pause (up to a millisecond per run lost): the winner of
// the conflict is waking up to take the lock the loser released, and a
// loser that ran again at once could take it first and deadlock anew.
func (db *DB) requeue(rs []*groupReq) {
	if len(rs) == 0 {
		return
	}
	time.Sleep(rand.N(time.Duration(rs[0].tries) * time.Millisecond))
	db.groupMu.Lock()
	db.groupQueue = append(rs, db.groupQueue...)
	db.groupMu.Unlock()
}

// Write runs fn in a write transaction and returns once the commit that
// holds fn's writes is durable. fn's writes are all-or-nothing: an error
// (or a panic, re-raised in the caller) undoes them and leaves concurrent
// callers' writes alone. Concurrent callers share commits (group commit):
// they run one after another in arrival order and see each other's
// writes, exactly as consecutive transactions would. If the commit fails,
// every caller in it gets that error. A context cancelled before fn starts
// returns its error and writes nothing; once fn runs, its statements are
// not interrupted by the caller's context (in a shared transaction that
// would abandon the neighbours' writes too).
//
// On PostgreSQL, fn may run more than once: a caller whose statement lost
// a lock conflict with another process (a deadlock) is undone and run
// again in the next group (retry). So fn must set, not accumulate, what
// it hands back through its closure, and must not act outside the
// database.
//
// fn must not call Write on the same database (it would wait for itself).
func (db *DB) Write(ctx context.Context, fn func(tx *Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &groupReq{ctx: ctx, fn: fn, done: make(chan struct{})}
	db.groupMu.Lock()
	if db.closed {
		db.groupMu.Unlock()
		return errClosed
	}
	db.groupQueue = append(db.groupQueue, r)
	if !db.groupLeading {
		db.groupLeading = true
		db.groupRunning.Add(1)
		go db.leadGroups()
	}
	db.groupMu.Unlock()
	<-r.done
	if r.panic != nil {
		panic(r.panic)
	}
	return r.err
}

var errClosed = errors.New("store: database is closed")

// leadGroups commits queued callers group by group until the queue is
// empty.
func (db *DB) leadGroups() {
	defer db.groupRunning.Done()
	for {
		db.groupMu.Lock()
		n := min(len(db.groupQueue), maxGroup)
		if n == 0 {
			db.groupLeading = false
			db.groupMu.Unlock()
			return
		}
		group := db.groupQueue[:n:n]
		db.groupQueue = db.groupQueue[n:]
		db.groupMu.Unlock()
		if n == 1 {
			if r := group[0]; db.runAlone(r) {
				db.requeue(group)
			} else {
				close(r.done)
			}
			continue
		}
		db.runGroup(group)
	}
}

// errFirstFailed rolls back a group's transaction when its first caller,
// which runs without a savepoint, failed: nothing else was written yet.
var errFirstFailed = errors.New("store: the first caller of the group failed")

// runGroup commits group's callers in one transaction. The first caller
// that runs needs no savepoint: if it fails, the transaction holds nothing
// but its writes, so the whole transaction is rolled back and the rest of
// the group runs in a new one (none of them ran yet: nothing runs twice).
// Every later caller runs in its own savepoint, as the isolation of its
// neighbours requires. This saves a SAVEPOINT and RELEASE per commit.
func (db *DB) runGroup(group []*groupReq) {
	for len(group) > 0 {
		ran := 0 // callers of group this transaction got to
		err := db.run(context.Background(), db.w, func(tx *Tx) error {
			tx.shared = true
			clean := true // no caller has written in this transaction yet
			for i, r := range group {
				ran = i + 1
				if clean {
					if r.err = r.ctx.Err(); r.err != nil {
						continue
					}
					if r.err = runBare(tx, r); r.err != nil || r.panic != nil {
						return errFirstFailed
					}
					clean = false
					continue
				}
				var fatal error
				if r.err, fatal = runInSavepoint(tx, r); fatal != nil {
					// The transaction may hold part of a failed caller's
					// writes: commit nothing.
					return fatal
				}
			}
			failpoint.Hit("store.before-group-commit")
			return nil
		}, true)
		if errors.Is(err, errFirstFailed) {
			// group[ran-1] failed alone; group[:ran-1] were cancelled
			// before running. The rest start afresh.
			var again []*groupReq
			for _, r := range group[:ran] {
				if db.retry(r, nil) {
					again = append(again, r)
					continue
				}
				close(r.done)
			}
			db.requeue(again)
			group = group[ran:]
			continue
		}
		failpoint.Hit("store.after-group-commit")
		var again []*groupReq
		for _, r := range group {
			if db.retry(r, err) {
				again = append(again, r)
				continue
			}
			if err != nil && r.panic == nil {
				r.err = err
			}
			close(r.done)
		}
		db.requeue(again)
		return
	}
}

// runBare runs r's fn directly in tx (no savepoint), recording a panic in
// r.panic.
func runBare(tx *Tx, r *groupReq) (err error) {
	defer func() {
		if p := recover(); p != nil {
			r.panic = p
		}
	}()
	return r.fn(tx)
}

// runAlone runs a lone caller's fn as the whole transaction. As in a
// group, its statements are not interrupted once fn runs, so a Write
// behaves the same whether or not it found company. again reports that
// it lost a lock conflict and must run again (retry); otherwise the
// caller is done.
func (db *DB) runAlone(r *groupReq) (again bool) {
	defer func() {
		if p := recover(); p != nil {
			r.panic, again = p, false
		}
	}()
	if r.err = r.ctx.Err(); r.err != nil {
		return false
	}
	r.err = db.run(context.WithoutCancel(r.ctx), db.w, func(tx *Tx) error {
		tx.shared = true
		if err := r.fn(tx); err != nil {
			return err
		}
		failpoint.Hit("store.before-group-commit")
		return nil
	}, true)
	failpoint.Hit("store.after-group-commit")
	return db.retry(r, nil)
}

// runInSavepoint runs one caller's fn between SAVEPOINT and RELEASE,
// rolling back to the savepoint when fn fails or panics. callerErr is the
// caller's own result; fatal means the savepoint could not be released or
// undone, so the whole group must roll back.
func runInSavepoint(tx *Tx, r *groupReq) (callerErr, fatal error) {
	if err := r.ctx.Err(); err != nil {
		return err, nil
	}
	bg := context.Background()
	if _, err := tx.ExecContext(bg, "SAVEPOINT grouped_write"); err != nil {
		return nil, fmt.Errorf("store: savepoint: %w", err)
	}
	kept := len(tx.after)
	undo := func() error {
		tx.after = tx.after[:kept]
		if _, err := tx.ExecContext(bg, "ROLLBACK TO grouped_write"); err != nil {
			return fmt.Errorf("store: roll back to savepoint: %w", err)
		}
		if _, err := tx.ExecContext(bg, "RELEASE grouped_write"); err != nil {
			return fmt.Errorf("store: release savepoint: %w", err)
		}
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			r.panic = p
			callerErr, fatal = nil, undo()
		}
	}()
	if err := r.fn(tx); err != nil {
		return err, undo()
	}
	if _, err := tx.ExecContext(bg, "RELEASE grouped_write"); err != nil {
		return nil, fmt.Errorf("store: release savepoint: %w", err)
	}
	return nil, nil
}
