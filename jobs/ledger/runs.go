package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Run is one JobRuns row: a job instance and its last attempt.
type Run struct {
	RunID           int64
	Job             string
	BusinessDate    string
	RunKey          string
	Slot            string
	Rerun           int
	Status          Status
	Attempts        int
	Trigger         string
	FirstStartedAt  time.Time
	StartedAt       time.Time
	EndedAt         time.Time // zero while STARTED
	DurationMS      int64
	Summary         string
	Error           string
	Holder          string
	Token           int64
	ForcedBy        string
	ForceReason     string
	ForcedAt        time.Time // zero unless a forced re-run
	SupersedesRunID int64     // 0 unless a forced re-run
}

// Step is one JobSteps row.
type Step struct {
	RunID      int64
	Seq        int
	Name       string
	Status     Status
	Attempts   int
	StartedAt  time.Time
	EndedAt    time.Time
	DurationMS int64
	Summary    string
	Error      string
}

// RunKey is the JobRuns key of the rerun-th instance of a slot.
func RunKey(slot string, rerun int) string {
	if rerun == 0 {
		return slot
	}
	return slot + "/rerun-" + strconv.Itoa(rerun)
}

// Begin describes the start of a run.
type Begin struct {
	Job          string
	BusinessDate string
	Slot         string
	Trigger      string
	Force        bool   // re-run a COMPLETED instance as a new instance
	ForcedBy     string // required with Force and Again
	Reason       string // required with Force and Again
	// Again: a manual run of a repeating job. When its slot's latest
	// instance is COMPLETED (cron ran it that minute), the next instance
	// <slot>/rerun-N is started without force, recording ForcedBy and
	// Reason like a forced re-run: a manual trigger always does the work.
	Again bool
}

// BeginRun starts (or restarts) the latest instance of (job, date, slot)
// under lease, in one fenced transaction:
//   - no instance yet: a new row, attempt 1;
//   - the latest is FAILED, or STARTED by a runner that lost its lease: the
//     same row, attempts+1 (resumed is true; completed steps are kept);
//   - the latest is COMPLETED: ErrAlreadyCompleted, with that completed
//     run returned beside the error, unless b.Force or b.Again, which
//     insert instance rerun+1 recording who asked, why and when.
func (l *Ledger) BeginRun(ctx context.Context, lease Lease, b Begin) (run Run, resumed bool, err error) {
	if (b.Force || b.Again) && (strings.TrimSpace(b.Reason) == "" || strings.TrimSpace(b.ForcedBy) == "") {
		return Run{}, false, domainerr.Wrap("MISSING_FIELD", ErrForceReason,
			"a forced re-run of "+b.Job+" needs --reason and who forced it", map[string]any{"job": b.Job, "field": "reason"})
	}
	if lease.Job != b.Job {
		return Run{}, false, fmt.Errorf("ledger: lease is for %s, not %s", lease.Job, b.Job)
	}
	var id, completedID int64
	err = l.WriteFenced(ctx, lease, func(tx *store.Tx) error {
		now := clock.Stamp(l.clk.Now())
		var latestID int64
		var rerun int
		var status Status
		var ended string
		e := tx.QueryRowContext(ctx, `SELECT run_id, rerun, status, COALESCE(ended_at, '') FROM JobRuns
			WHERE job = ? AND business_date = ? AND slot = ? ORDER BY rerun DESC LIMIT 1`,
			b.Job, b.BusinessDate, b.Slot).Scan(&latestID, &rerun, &status, &ended)
		switch {
		case errors.Is(e, sql.ErrNoRows):
			return insertRun(ctx, tx, b, 0, now, lease, 0, &id)
		case e != nil:
			return e
		}
		if status == Completed {
			if !b.Force && !b.Again {
				key := RunKey(b.Slot, rerun)
				completedID = latestID
				at := ended
				if t, err := clock.ParseStamp(ended); err == nil {
					at = t.UTC().Format(time.RFC3339)
				}
				return domainerr.Wrap("ALREADY_PROCESSED", ErrAlreadyCompleted,
					fmt.Sprintf("job %s for %s (%s) already COMPLETED at %s as run %d; re-run with force and a reason", b.Job, b.BusinessDate, key, at, latestID),
					map[string]any{"job": b.Job, "business_date": b.BusinessDate, "run_key": key, "run_id": latestID, "completed_at": ended})
			}
			return insertRun(ctx, tx, b, rerun+1, now, lease, latestID, &id)
		}
		res, e := tx.ExecContext(ctx, `UPDATE JobRuns SET status = 'STARTED', attempts = attempts + 1, started_at = ?,
			ended_at = NULL, duration_ms = NULL, error = '', holder = ?, fencing_token = ?, trigger_source = ?
			WHERE run_id = ? AND status = ?`, now, lease.Holder, lease.Token, b.Trigger, latestID, status)
		if e != nil {
			return e
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("ledger: run %d changed status while restarting", latestID)
		}
		id, resumed = latestID, true
		return nil
	})
	if err != nil {
		if completedID != 0 {
			if done, rerr := l.RunByID(ctx, completedID); rerr == nil {
				return done, false, err
			}
		}
		return Run{}, false, wrapPlain(err, "ledger: begin "+b.Job+" "+b.BusinessDate)
	}
	run, err = l.RunByID(ctx, id)
	return run, resumed, err
}

func insertRun(ctx context.Context, tx *store.Tx, b Begin, rerun int, now string, lease Lease, supersedes int64, id *int64) error {
	var forcedBy, reason, forcedAt, sup any
	if rerun > 0 {
		forcedBy, reason, forcedAt, sup = b.ForcedBy, b.Reason, now, supersedes
	}
	var err error
	*id, err = store.InsertID(ctx, tx, "run_id", `INSERT INTO JobRuns(job, business_date, run_key, slot, rerun, status, attempts, trigger_source,
		first_started_at, started_at, holder, fencing_token, forced_by, force_reason, forced_at, supersedes_run_id)
		VALUES (?, ?, ?, ?, ?, 'STARTED', 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		b.Job, b.BusinessDate, RunKey(b.Slot, rerun), b.Slot, rerun, b.Trigger, now, now, lease.Holder, lease.Token,
		forcedBy, reason, forcedAt, sup)
	return err
}

// StartStep records that a step began (STARTED, attempts+1) and, when
// renew > 0, extends the lease to now+renew in the same fenced
// transaction. It refuses to restart a COMPLETED step.
func (l *Ledger) StartStep(ctx context.Context, lease Lease, runID int64, seq int, name string, renew time.Duration) error {
	err := l.WriteFenced(ctx, lease, func(tx *store.Tx) error {
		t := l.clk.Now()
		now := clock.Stamp(t)
		if renew > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE JobLeases SET expires_at = ? WHERE job = ? AND holder = ? AND token = ?`,
				clock.Stamp(t.Add(renew)), lease.Job, lease.Holder, lease.Token); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO JobSteps(run_id, seq, step, status, attempts, started_at) VALUES (?, ?, ?, 'STARTED', 1, ?)
			ON CONFLICT(run_id, step) DO UPDATE SET status = 'STARTED', attempts = JobSteps.attempts + 1, started_at = excluded.started_at,
			ended_at = NULL, duration_ms = NULL, error = '' WHERE JobSteps.status <> 'COMPLETED'`, runID, seq, name, now)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("ledger: step %s of run %d is already COMPLETED", name, runID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ledger: start step %s of run %d: %w", name, runID, err)
	}
	return nil
}

// CompleteStep marks a step COMPLETED with its output summary inside tx,
// which the caller opened fenced (WriteFenced), so the step's own writes in
// tx and its completion row commit together. The UPDATE is guarded on the
// step not being COMPLETED already, so a step completes at most once.
func (l *Ledger) CompleteStep(ctx context.Context, tx *store.Tx, runID int64, seq int, name, summary string) error {
	now := l.clk.Now()
	var started string
	err := tx.QueryRowContext(ctx, `SELECT started_at FROM JobSteps WHERE run_id = ? AND step = ?`, runID, name).Scan(&started)
	if errors.Is(err, sql.ErrNoRows) {
		started = clock.Stamp(now)
		_, err = tx.ExecContext(ctx, `INSERT INTO JobSteps(run_id, seq, step, status, attempts, started_at) VALUES (?, ?, ?, 'STARTED', 1, ?)`,
			runID, seq, name, started)
	}
	if err != nil {
		return fmt.Errorf("ledger: complete step %s of run %d: %w", name, runID, err)
	}
	st, err := clock.ParseStamp(started)
	if err != nil {
		return fmt.Errorf("ledger: step %s of run %d has a bad started_at: %w", name, runID, err)
	}
	res, err := tx.ExecContext(ctx, `UPDATE JobSteps SET status = 'COMPLETED', ended_at = ?, duration_ms = ?, summary = ?, error = ''
		WHERE run_id = ? AND step = ? AND status <> 'COMPLETED'`,
		clock.Stamp(now), now.Sub(st).Milliseconds(), summary, runID, name)
	if err != nil {
		return fmt.Errorf("ledger: complete step %s of run %d: %w", name, runID, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("ledger: step %s of run %d is already COMPLETED", name, runID)
	}
	return nil
}

// FailRun marks the step (when name is not "") FAILED with stepErr and the
// run FAILED with runErr, fenced.
func (l *Ledger) FailRun(ctx context.Context, lease Lease, runID int64, seq int, name, stepErr, runErr string) error {
	err := l.WriteFenced(ctx, lease, func(tx *store.Tx) error {
		now := l.clk.Now()
		if name != "" {
			var started string
			err := tx.QueryRowContext(ctx, `SELECT started_at FROM JobSteps WHERE run_id = ? AND step = ?`, runID, name).Scan(&started)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				_, err = tx.ExecContext(ctx, `INSERT INTO JobSteps(run_id, seq, step, status, attempts, started_at, ended_at, duration_ms, error)
					VALUES (?, ?, ?, 'FAILED', 1, ?, ?, 0, ?)`, runID, seq, name, clock.Stamp(now), clock.Stamp(now), stepErr)
			case err == nil:
				st, perr := clock.ParseStamp(started)
				if perr != nil {
					return perr
				}
				_, err = tx.ExecContext(ctx, `UPDATE JobSteps SET status = 'FAILED', ended_at = ?, duration_ms = ?, error = ?
					WHERE run_id = ? AND step = ? AND status <> 'COMPLETED'`, clock.Stamp(now), now.Sub(st).Milliseconds(), stepErr, runID, name)
			}
			if err != nil {
				return err
			}
		}
		return endRun(ctx, tx, runID, now, Failed, "", runErr)
	})
	if err != nil {
		return fmt.Errorf("ledger: fail run %d: %w", runID, err)
	}
	return nil
}

// FinishRun marks the run COMPLETED with its summary, fenced.
func (l *Ledger) FinishRun(ctx context.Context, lease Lease, runID int64, summary string) error {
	err := l.WriteFenced(ctx, lease, func(tx *store.Tx) error {
		var open int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM JobSteps WHERE run_id = ? AND status <> 'COMPLETED'`, runID).Scan(&open); err != nil {
			return err
		}
		if open != 0 {
			return fmt.Errorf("ledger: run %d has %d steps not COMPLETED", runID, open)
		}
		return endRun(ctx, tx, runID, l.clk.Now(), Completed, summary, "")
	})
	if err != nil {
		return fmt.Errorf("ledger: finish run %d: %w", runID, err)
	}
	return nil
}

func endRun(ctx context.Context, tx *store.Tx, runID int64, now time.Time, status Status, summary, errText string) error {
	var started string
	if err := tx.QueryRowContext(ctx, `SELECT started_at FROM JobRuns WHERE run_id = ? AND status = 'STARTED'`, runID).Scan(&started); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("ledger: run %d is not STARTED", runID)
		}
		return err
	}
	st, err := clock.ParseStamp(started)
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `UPDATE JobRuns SET status = ?, ended_at = ?, duration_ms = ?, summary = ?, error = ?
		WHERE run_id = ? AND status = 'STARTED'`, status, clock.Stamp(now), now.Sub(st).Milliseconds(), summary, errText, runID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("ledger: run %d is not STARTED", runID)
	}
	return nil
}

const runCols = `run_id, job, business_date, run_key, slot, rerun, status, attempts, trigger_source, first_started_at, started_at,
	COALESCE(ended_at, ''), COALESCE(duration_ms, 0), summary, error, holder, fencing_token,
	COALESCE(forced_by, ''), COALESCE(force_reason, ''), COALESCE(forced_at, ''), COALESCE(supersedes_run_id, 0)`

type scanner interface{ Scan(dest ...any) error }

func scanRun(s scanner) (Run, error) {
	var r Run
	var first, started, ended, forcedAt string
	if err := s.Scan(&r.RunID, &r.Job, &r.BusinessDate, &r.RunKey, &r.Slot, &r.Rerun, &r.Status, &r.Attempts, &r.Trigger,
		&first, &started, &ended, &r.DurationMS, &r.Summary, &r.Error, &r.Holder, &r.Token,
		&r.ForcedBy, &r.ForceReason, &forcedAt, &r.SupersedesRunID); err != nil {
		return Run{}, err
	}
	var err error
	if r.FirstStartedAt, err = clock.ParseStamp(first); err != nil {
		return Run{}, err
	}
	if r.StartedAt, err = clock.ParseStamp(started); err != nil {
		return Run{}, err
	}
	if ended != "" {
		if r.EndedAt, err = clock.ParseStamp(ended); err != nil {
			return Run{}, err
		}
	}
	if forcedAt != "" {
		if r.ForcedAt, err = clock.ParseStamp(forcedAt); err != nil {
			return Run{}, err
		}
	}
	return r, nil
}

// RunByID reads one run; ErrRunNotFound (NOT_FOUND) when absent.
func (l *Ledger) RunByID(ctx context.Context, id int64) (Run, error) {
	var r Run
	err := l.db.Read(ctx, func(tx *store.Tx) error {
		var e error
		r, e = scanRun(tx.QueryRowContext(ctx, `SELECT `+runCols+` FROM JobRuns WHERE run_id = ?`, id))
		return e
	})
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, domainerr.Wrap("NOT_FOUND", ErrRunNotFound, fmt.Sprintf("no job run %d", id), map[string]any{"run_id": id})
	}
	if err != nil {
		return Run{}, fmt.Errorf("ledger: read run %d: %w", id, err)
	}
	return r, nil
}

// Filter selects runs for History.
type Filter struct {
	Job      string // "" = every job
	BeforeID int64  // only runs with a smaller run_id: keyset paging, newest first; 0 = from the newest
	Limit    int    // 0 = 50
}

// History lists runs, newest run_id first.
func (l *Ledger) History(ctx context.Context, f Filter) ([]Run, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	return l.queryRuns(ctx, "history", `SELECT `+runCols+` FROM JobRuns WHERE (? = '' OR job = ?) AND (? = 0 OR run_id < ?)
		ORDER BY run_id DESC LIMIT ?`, f.Job, f.Job, f.BeforeID, f.BeforeID, f.Limit)
}

// queryRuns reads the runs query selects (its columns: runCols).
func (l *Ledger) queryRuns(ctx context.Context, op, query string, args ...any) ([]Run, error) {
	var out []Run
	err := l.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRun(rows)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: %s: %w", op, err)
	}
	return out, nil
}

// CountRuns counts the runs f selects, ignoring its Limit: with BeforeID
// set to the last run a page showed, how many the page did not show.
func (l *Ledger) CountRuns(ctx context.Context, f Filter) (int64, error) {
	var n int64
	err := l.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM JobRuns WHERE (? = '' OR job = ?) AND (? = 0 OR run_id < ?)`,
			f.Job, f.Job, f.BeforeID, f.BeforeID).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("ledger: count runs: %w", err)
	}
	return n, nil
}

// Steps lists a run's steps in job order.
func (l *Ledger) Steps(ctx context.Context, runID int64) ([]Step, error) {
	var out []Step
	err := l.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT run_id, seq, step, status, attempts, started_at, COALESCE(ended_at, ''),
			COALESCE(duration_ms, 0), summary, error FROM JobSteps WHERE run_id = ? ORDER BY seq`, runID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s Step
			var started, ended string
			if err := rows.Scan(&s.RunID, &s.Seq, &s.Name, &s.Status, &s.Attempts, &started, &ended, &s.DurationMS, &s.Summary, &s.Error); err != nil {
				return err
			}
			if s.StartedAt, err = clock.ParseStamp(started); err != nil {
				return err
			}
			if ended != "" {
				if s.EndedAt, err = clock.ParseStamp(ended); err != nil {
					return err
				}
			}
			out = append(out, s)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: steps of run %d: %w", runID, err)
	}
	return out, nil
}

// LastCompletedDate is the latest business date with a COMPLETED instance
// of the job's slot ("" when none).
func (l *Ledger) LastCompletedDate(ctx context.Context, job, slot string) (string, error) {
	var d sql.NullString
	err := l.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT MAX(business_date) FROM JobRuns WHERE job = ? AND slot = ? AND status = 'COMPLETED'`, job, slot).Scan(&d)
	})
	if err != nil {
		return "", fmt.Errorf("ledger: last completed date of %s: %w", job, err)
	}
	return d.String, nil
}

// LastRun is the job's newest run (ok false when it never ran).
func (l *Ledger) LastRun(ctx context.Context, job string) (Run, bool, error) {
	runs, err := l.History(ctx, Filter{Job: job, Limit: 1})
	if err != nil || len(runs) == 0 {
		return Run{}, false, err
	}
	return runs[0], true, nil
}

// PruneRepeatingRuns deletes, inside tx, the runs (and their steps) of
// repeating slots (every slot but DailySlot) whose business date is before
// the given date. Daily instances are never pruned: they are the record
// that a business date was processed. It returns the runs deleted.
func PruneRepeatingRuns(ctx context.Context, tx *store.Tx, before string) (int64, error) {
	if _, err := tx.ExecContext(ctx, `DELETE FROM JobSteps WHERE run_id IN
		(SELECT run_id FROM JobRuns WHERE slot <> ? AND business_date < ? AND status <> 'STARTED')`, DailySlot, before); err != nil {
		return 0, fmt.Errorf("ledger: prune steps: %w", err)
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM JobRuns WHERE slot <> ? AND business_date < ? AND status <> 'STARTED'`, DailySlot, before)
	if err != nil {
		return 0, fmt.Errorf("ledger: prune runs: %w", err)
	}
	return res.RowsAffected()
}

// LastRuns returns each job's latest run (the highest run_id per job),
// ordered by job: what the metrics report as the last run and its status.
// The inner GROUP BY reads the (job, …) index only.
func (l *Ledger) LastRuns(ctx context.Context) ([]Run, error) {
	return l.queryRuns(ctx, "last runs", `SELECT `+runCols+` FROM JobRuns
		WHERE run_id IN (SELECT MAX(run_id) FROM JobRuns GROUP BY job) ORDER BY job`)
}
