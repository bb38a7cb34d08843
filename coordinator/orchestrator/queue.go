package orchestrator

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Work item kinds (OrchestratorQueue.kind).
const (
	KindDrive = "DRIVE" // move the transfer along its lane
	KindBatch = "BATCH" // BULK/DEFERRED transfer waiting for its batch window
)

// Work item statuses (OrchestratorQueue.status).
const (
	StatusReady   = "READY"
	StatusClaimed = "CLAIMED"
	StatusDone    = "DONE"
	StatusAcked   = "ACKED"   // failed with a non-retryable DomainError; escalated to a Case
	StatusWaiting = "WAITING" // BATCH items until the batch-window job claims them
)

// Item is one claimed work item.
type Item struct {
	ID       string
	Kind     string
	TxID     string
	Lane     string
	Attempts int // failed attempts before this one
}

// Disposition is what the queue does with a failed work item.
type Disposition string

// The dispositions of the retry policy (spec 000 ch. 2).
const (
	Retry Disposition = "RETRY" // back to READY after the backoff
	Ack   Disposition = "ACK"   // acknowledged (dropped) and escalated to a Case
)

// Policy is the queue retry policy (spec 000 ch. 2): a DomainError whose
// category is DOWNSTREAM, TIMEOUT or RATE_LIMIT is retried; any other
// DomainError is acknowledged and escalated; an error that is not a
// DomainError is retried.
func Policy(err error) Disposition {
	if domainerr.ShouldRetry(err) {
		return Retry
	}
	return Ack
}

// backoff is the delay before retry number attempts (1-based).
func (o *Orchestrator) backoff(attempts int) time.Duration {
	d := o.bo.Base
	for i := 1; i < attempts && d < o.bo.Max; i++ {
		d *= 2
	}
	if d > o.bo.Max {
		d = o.bo.Max
	}
	return d
}

func itemID(kind, txid string) string { return kind + ":" + txid }

// enqueue makes the (kind, txid) item due at `at` inside tx: a new row, or
// an existing DONE/ACKED row made READY again with its attempts reset. An
// item that is CLAIMED is flagged to run again when its worker finishes;
// a READY item keeps the earlier due time. A READY item pokes the Run
// loops of this database (wake.go).
func (o *Orchestrator) enqueue(ctx context.Context, tx *store.Tx, kind, txid, laneName, status string, at time.Time) error {
	if status == StatusReady {
		defer o.wake.poke()
	}
	now := clock.Stamp(at)
	ins, err := store.Insert(ctx, tx, "OrchestratorQueue",
		[]string{"item_id", "kind", "txid", "lane", "status", "next_attempt_at", "created_at", "updated_at"},
		itemID(kind, txid), kind, txid, laneName, status, now, now, now)
	if err != nil || ins {
		return wrapDB("enqueue", err)
	}
	_, err = tx.ExecContext(ctx, `UPDATE OrchestratorQueue SET
		status = CASE WHEN status = 'CLAIMED' THEN status ELSE ? END,
		rerun = CASE WHEN status = 'CLAIMED' THEN 1 ELSE rerun END,
		attempts = CASE WHEN status IN ('DONE','ACKED') THEN 0 ELSE attempts END,
		next_attempt_at = CASE WHEN status = 'CLAIMED' THEN next_attempt_at
		                       WHEN status = 'READY' AND next_attempt_at < ? THEN next_attempt_at ELSE ? END,
		updated_at = ?
		WHERE item_id = ? AND status IN ('READY','CLAIMED','DONE','ACKED','WAITING')`,
		status, now, now, now, itemID(kind, txid))
	return wrapDB("requeue", err)
}

func wrapDB(op string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := domainerr.As(err); ok {
		return err
	}
	return fmt.Errorf("orchestrator: %s: %w", op, err)
}

// claim takes up to limit due items for worker in one write
// transaction, in two statements whatever the batch size: the due items
// (idx_oq_due), then one guarded UPDATE of all of them (status READY and
// due, or CLAIMED with an expired lease), so of several workers racing
// for an item exactly one gets it. When it claims fewer than limit it
// also returns when the earliest item not yet due falls due (zero: none
// is waiting), for the Run loop's timer.
func (o *Orchestrator) claim(ctx context.Context, worker string, limit int) (out []Item, next time.Time, err error) {
	err = o.db.Write(ctx, func(tx *store.Tx) error {
		out, next = out[:0], time.Time{}
		now := o.clk.Now()
		stamp := clock.Stamp(now)
		rows, err := tx.QueryContext(ctx, `SELECT item_id, kind, txid, lane, attempts FROM OrchestratorQueue
			WHERE status IN ('READY','CLAIMED') AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?`+tx.SkipLocked(), stamp, limit)
		if err != nil {
			return wrapDB("claim: select", err)
		}
		ids := make([]string, 0, limit)
		for rows.Next() {
			var it Item
			if err := rows.Scan(&it.ID, &it.Kind, &it.TxID, &it.Lane, &it.Attempts); err != nil {
				rows.Close()
				return wrapDB("claim: scan", err)
			}
			out = append(out, it)
			ids = append(ids, it.ID)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return wrapDB("claim: rows", err)
		}
		if len(out) > 0 {
			idJSON, err := json.Marshal(ids)
			if err != nil {
				return wrapDB("claim: ids", err)
			}
			res, err := tx.ExecContext(ctx, `UPDATE OrchestratorQueue
				SET status = 'CLAIMED', claimed_by = ?, next_attempt_at = ?, rerun = 0, updated_at = ?
				WHERE item_id IN (SELECT value FROM json_each(?)) AND status IN ('READY','CLAIMED') AND next_attempt_at <= ?`,
				worker, clock.Stamp(now.Add(o.cfg.Lease)), stamp, string(idJSON), stamp)
			if err != nil {
				return wrapDB("claim", err)
			}
			// Every row just selected is still due, so each must have
			// been claimed: on SQLite the writer is alone in this
			// transaction; on PostgreSQL the SELECT locked the rows it
			// returned and skipped those another node's claim holds
			// (SkipLocked), so several nodes take disjoint items.
			if n, err := res.RowsAffected(); err != nil || n != int64(len(out)) {
				return wrapDB("claim", errors.Join(err, fmt.Errorf("claimed %d of %d due items", n, len(out))))
			}
		}
		if len(out) < limit {
			var due sql.NullString
			if err := tx.QueryRowContext(ctx, `SELECT MIN(next_attempt_at) FROM OrchestratorQueue
				WHERE status IN ('READY','CLAIMED')`).Scan(&due); err != nil {
				return wrapDB("claim: next due", err)
			}
			if due.Valid {
				if next, err = clock.ParseStamp(due.String); err != nil {
					return wrapDB("claim: next due", err)
				}
			}
		}
		return nil
	})
	if err != nil { // rolled back: nothing was claimed
		return nil, time.Time{}, err
	}
	return out, next, nil
}

// finish records the outcome of a claimed item inside tx: err == nil marks
// it DONE (or READY again if a rerun was requested while it ran); a wait
// (errWait) makes it READY at the wait's time without counting a failure;
// any other error goes through Policy. The update is guarded on the claim
// (status CLAIMED by worker), so a worker whose lease was taken over
// records nothing. It returns the Case opened for an acked item.
func (o *Orchestrator) finish(ctx context.Context, tx *store.Tx, it Item, worker string, runErr error) (string, error) {
	now := o.clk.Now()
	stamp := clock.Stamp(now)
	var w errWait
	switch {
	case runErr == nil:
		_, err := tx.ExecContext(ctx, `UPDATE OrchestratorQueue SET
			status = CASE WHEN rerun = 1 THEN 'READY' ELSE 'DONE' END, rerun = 0, attempts = 0,
			next_attempt_at = ?, last_error_code = NULL, last_error_category = NULL, last_error = NULL, updated_at = ?
			WHERE item_id = ? AND status = 'CLAIMED' AND claimed_by = ?`, stamp, stamp, it.ID, worker)
		return "", wrapDB("finish", err)
	case errors.As(runErr, &w):
		_, err := tx.ExecContext(ctx, `UPDATE OrchestratorQueue SET status = 'READY', rerun = 0, attempts = 0,
			next_attempt_at = ?, last_error_code = ?, last_error_category = NULL, last_error = NULL, updated_at = ?
			WHERE item_id = ? AND status = 'CLAIMED' AND claimed_by = ?`,
			clock.Stamp(w.until), w.reason, stamp, it.ID, worker)
		return "", wrapDB("finish wait", err)
	}
	code, cat := domainerr.Code(runErr), ""
	if de, ok := domainerr.As(runErr); ok {
		cat = string(de.Category)
	}
	if Policy(runErr) == Retry {
		attempts := it.Attempts + 1
		next := now.Add(o.backoff(attempts))
		_, err := tx.ExecContext(ctx, `UPDATE OrchestratorQueue SET status = 'READY', rerun = 0, attempts = ?,
			next_attempt_at = ?, last_error_code = ?, last_error_category = ?, last_error = ?, updated_at = ?
			WHERE item_id = ? AND status = 'CLAIMED' AND claimed_by = ?`,
			attempts, clock.Stamp(next), nullStr(code), nullStr(cat), runErr.Error(), stamp, it.ID, worker)
		o.log.WarnContext(ctx, "orchestrator.retry_scheduled", "txid", it.TxID, "kind", it.Kind, "attempts", attempts,
			"reason_code", code, "category", cat, "next_attempt_at", clock.Stamp(next))
		return "", wrapDB("finish retry", err)
	}
	// Ack: acknowledged (no infinite loop) and escalated to a Case.
	opened, err := o.cases.OpenCase(ctx, tx, cases.OpenRequest{
		ReasonCode: code, Description: fmt.Sprintf("%s work item failed: %s", it.Kind, runErr.Error()),
		OpenedBy: "ZC", RelatedTxID: it.TxID, DetectionPath: "orchestrator." + it.Kind,
	})
	if err != nil {
		return "", err
	}
	ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE OrchestratorQueue SET status = 'ACKED', rerun = 0, attempts = ?,
		next_attempt_at = ?, last_error_code = ?, last_error_category = ?, last_error = ?, case_id = ?, updated_at = ?
		WHERE item_id = ? AND status = 'CLAIMED' AND claimed_by = ?`,
		it.Attempts+1, stamp, nullStr(code), nullStr(cat), runErr.Error(), opened.CaseID, stamp, it.ID, worker))
	if err != nil {
		return "", wrapDB("finish ack", err)
	}
	if ok {
		if _, err := tx.ExecContext(ctx, `UPDATE Transactions SET case_id = ? WHERE txid = ? AND case_id IS NULL`, opened.CaseID, it.TxID); err != nil {
			return "", wrapDB("link case", err)
		}
	}
	o.log.ErrorContext(ctx, "orchestrator.item_acked", "txid", it.TxID, "kind", it.Kind, "reason_code", code,
		"category", cat, "case_id", opened.CaseID)
	return opened.CaseID, nil
}

// errWait asks the queue to run the item again at until, without counting
// a failure (a name check the bank deferred, a window that is closed).
type errWait struct {
	until  time.Time
	reason string
}

func (e errWait) Error() string { return "wait until " + clock.Stamp(e.until) + ": " + e.reason }

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// QueueItem is a read-only view of one work item, for operators and tests.
type QueueItem struct {
	ID, Kind, TxID, Lane, Status string
	Attempts                     int
	NextAttemptAt                string
	LastErrorCode                string
	LastErrorCategory            string
	LastError                    string
	CaseID                       string
}

// QueueItems lists the work items of txid.
func (o *Orchestrator) QueueItems(ctx context.Context, txid string) (out []QueueItem, err error) {
	err = o.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT item_id, kind, txid, lane, status, attempts, next_attempt_at,
			last_error_code, last_error_category, COALESCE(last_error, ''), case_id FROM OrchestratorQueue WHERE txid = ? ORDER BY item_id`, txid)
		if err != nil {
			return wrapDB("queue items", err)
		}
		defer rows.Close()
		for rows.Next() {
			var q QueueItem
			var code, cat, cs sql.NullString
			if err := rows.Scan(&q.ID, &q.Kind, &q.TxID, &q.Lane, &q.Status, &q.Attempts, &q.NextAttemptAt, &code, &cat, &q.LastError, &cs); err != nil {
				return wrapDB("queue items", err)
			}
			q.LastErrorCode, q.LastErrorCategory, q.CaseID = code.String, cat.String, cs.String
			out = append(out, q)
		}
		return rows.Err()
	})
	return out, err
}

// claimKey carries the claimed item through a work run, so the run's last
// commit can complete the item itself (saving the separate finish commit).
type claimKey struct{}

type claim struct {
	it       Item
	worker   string
	finished bool
}

func withClaim(ctx context.Context, c *claim) context.Context {
	return context.WithValue(ctx, claimKey{}, c)
}

// finishClaimInTx completes the item being worked inside the caller's
// commit (DONE, or READY again if a rerun was requested meanwhile). The
// UPDATE is guarded on the claim like finish.
func (o *Orchestrator) finishClaimInTx(ctx context.Context, tx *store.Tx) error {
	c, ok := ctx.Value(claimKey{}).(*claim)
	if !ok || c.finished {
		return nil
	}
	if _, err := o.finish(ctx, tx, c.it, c.worker, nil); err != nil {
		return err
	}
	c.finished = true
	return nil
}

// TakeBackEarlierClaims makes the work items that an earlier start of this
// node left CLAIMED due now (READY), without waiting for their lease: the
// node lock (coordinator/procid) guarantees that an earlier epoch of this
// node id is dead. It needs an owner-shaped WorkerID
// (procid.Identity.Owner); with any other WorkerID it does nothing. Items
// claimed by another node, or by this start, wait for their lease as
// before. It returns how many items it took back.
func (o *Orchestrator) TakeBackEarlierClaims(ctx context.Context) (int, error) {
	node, epoch, _, ok := procid.ParseOwner(o.cfg.WorkerID)
	if !ok {
		return 0, nil
	}
	id := procid.Identity{Node: node, Epoch: epoch}
	var n int64
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		stamp := clock.Stamp(o.clk.Now())
		res, err := tx.ExecContext(ctx, `UPDATE OrchestratorQueue SET status = 'READY', rerun = 0, next_attempt_at = ?1, updated_at = ?1
			WHERE status = 'CLAIMED' AND substr(claimed_by, 1, length(?2)) = ?2 AND substr(claimed_by, 1, length(?3)) <> ?3`,
			stamp, id.NodePrefix(), id.Prefix())
		if err != nil {
			return wrapDB("take back claims", err)
		}
		n, err = res.RowsAffected()
		return wrapDB("take back claims", err)
	})
	if err != nil {
		return 0, err
	}
	if n > 0 {
		o.log.InfoContext(ctx, "orchestrator.claims_taken_back", "items", n, "node", node, "epoch", epoch)
	}
	return int(n), nil
}
