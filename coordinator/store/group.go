package store

import (
	"context"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/failpoint"
)

// Group commit: WriteGrouped runs each caller's fn in its own savepoint of
// a shared write transaction and commits the group with one fsync. While
// one group commits, new callers queue up and form the next group, so the
// commit rate stays at the disk's fsync rate while the work rate grows
// with concurrency. Durability is unchanged: WriteGrouped returns only
// after the commit that holds the caller's writes.

// maxGroup bounds how many callers share one commit.
const maxGroup = 256

type groupReq struct {
	ctx   context.Context
	fn    func(tx *Tx) error
	err   error
	panic any
	done  chan struct{}
}

// WriteGrouped is Write with group commit. fn's writes are all-or-nothing
// as with Write: an error (or panic, re-raised in the caller) rolls back to
// fn's savepoint and leaves the rest of the group alone. Callers in one
// group run one after another in arrival order and see each other's
// writes, exactly as consecutive Write calls would. If the group's commit
// fails, every caller in it gets that error.
func (db *DB) WriteGrouped(ctx context.Context, fn func(tx *Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &groupReq{ctx: ctx, fn: fn, done: make(chan struct{})}
	db.groupMu.Lock()
	db.groupQueue = append(db.groupQueue, r)
	if !db.groupLeading {
		db.groupLeading = true
		go db.leadGroups()
	}
	db.groupMu.Unlock()
	<-r.done
	if r.panic != nil {
		panic(r.panic)
	}
	return r.err
}

// leadGroups commits queued callers group by group until the queue is
// empty.
func (db *DB) leadGroups() {
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

		err := db.run(context.Background(), db.w, func(tx *Tx) error {
			tx.shared = true
			for _, r := range group {
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
		failpoint.Hit("store.after-group-commit")
		for _, r := range group {
			if err != nil && r.panic == nil {
				r.err = err
			}
			close(r.done)
		}
	}
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
	undo := func() error {
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
