package lsm

import (
	"context"
	"database/sql"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Schema is this package's own DDL (LsmSnapshots), applied by
// EnsureSchema next to the spec-003 LsmRuns table.
//
//go:embed schema.sql
var Schema string

// EnsureSchema applies Schema to db (idempotent).
func EnsureSchema(ctx context.Context, db *store.DB) error {
	if err := db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, Schema)
		return err
	}); err != nil {
		return fmt.Errorf("lsm: apply schema: %w", err)
	}
	return nil
}

// Outcome is what the H reservation commit made of a proposal: the
// accepted set (reservations committed) and the candidates refused by H at
// commit time (deferred as well).
type Outcome struct {
	Accepted []string `json:"accepted"`
	HRefused []string `json:"h_refused,omitempty"`
}

// RecordedMetrics is LsmRuns.objective_metrics: the solver's metrics plus
// the acceptance at the H commit.
type RecordedMetrics struct {
	Metrics
	Accepted        int    `json:"accepted"`
	HRefused        int    `json:"h_refused"`
	AcceptedSetHash string `json:"accepted_set_hash"`
}

// Run is one LsmRuns row.
type Run struct {
	RunID             string
	BusinessDate      string
	WindowID          string
	Mode              Mode
	IsFallback        bool
	InputSnapshotID   string
	ConstraintsDigest string
	ExecutionSetHash  string
	TraceDigest       string
	CandidateCount    int
	SelectedCount     int
	DeferredCount     int
	Metrics           RecordedMetrics
	CreatedAt         string
}

// RunID is the LsmRuns.run_id of a window: one run per window id.
func RunID(windowID string) string { return "LSM-" + windowID }

// Record writes the run inside the caller's transaction: the snapshot
// (LsmSnapshots, once per snapshot id), the LsmRuns row and the
// LsmRunCommitted (or, degraded, LsmRunFallback) entry on the window's
// chain (gtid = window id). selected_count is what the H commit accepted;
// deferred_count everything else. A window that already has a run is
// ALREADY_PROCESSED.
func Record(ctx context.Context, tx *store.Tx, flog *finality.Log, clk clock.Clock, businessDate string, in Input, res Result, out Outcome) (Run, error) {
	windowID := in.Constraints.WindowID
	now := clock.Stamp(clk.Now())
	cj, kj := Canonical(in)
	snap := SnapshotID(in)
	if _, err := store.Insert(ctx, tx, "LsmSnapshots",
		[]string{"snapshot_id", "business_date", "window_id", "candidates_json", "constraints_json", "created_at"},
		snap, businessDate, windowID, string(cj), string(kj), now); err != nil {
		return Run{}, fmt.Errorf("lsm: record snapshot: %w", err)
	}
	r := Run{RunID: RunID(windowID), BusinessDate: businessDate, WindowID: windowID, Mode: res.Mode,
		IsFallback: res.Metrics.Degraded, InputSnapshotID: snap, ConstraintsDigest: ConstraintsDigest(in),
		ExecutionSetHash: res.ExecutionSetHash, TraceDigest: res.TraceDigest, CandidateCount: len(in.Candidates),
		SelectedCount: len(out.Accepted), DeferredCount: len(in.Candidates) - len(out.Accepted), CreatedAt: now,
		Metrics: RecordedMetrics{Metrics: res.Metrics, Accepted: len(out.Accepted), HRefused: len(out.HRefused),
			AcceptedSetHash: ExecutionSetHash(out.Accepted)}}
	mj, _ := json.Marshal(r.Metrics)
	ok, err := store.Insert(ctx, tx, "LsmRuns", []string{"run_id", "business_date", "window_id", "mode", "is_fallback",
		"input_snapshot_id", "constraints_digest", "execution_set_hash", "trace_digest", "candidate_count", "selected_count",
		"deferred_count", "objective_metrics", "created_at"},
		r.RunID, businessDate, windowID, string(r.Mode), boolInt(r.IsFallback), r.InputSnapshotID, r.ConstraintsDigest,
		r.ExecutionSetHash, r.TraceDigest, r.CandidateCount, r.SelectedCount, r.DeferredCount, string(mj), now)
	if err != nil {
		return Run{}, fmt.Errorf("lsm: record run: %w", err)
	}
	if !ok {
		return Run{}, domainerr.New("ALREADY_PROCESSED", "this LSM window already ran", map[string]any{"window_id": windowID, "run_id": r.RunID})
	}
	ev := finality.LsmRunCommitted
	if r.IsFallback {
		ev = finality.LsmRunFallback
	}
	if _, err := flog.Append(ctx, tx, finality.Event{GTID: windowID, Type: ev, StateTo: string(r.Mode), Payload: map[string]any{
		"run_id": r.RunID, "window_id": windowID, "mode": r.Mode, "input_snapshot_id": r.InputSnapshotID,
		"constraints_digest": r.ConstraintsDigest, "execution_set_hash": r.ExecutionSetHash, "trace_digest": r.TraceDigest,
		"objective_metrics": r.Metrics,
	}}); err != nil {
		return Run{}, fmt.Errorf("lsm: append %s: %w", ev, err)
	}
	return r, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// GetRun reads an LsmRuns row; unknown is NOT_FOUND.
func GetRun(ctx context.Context, tx *store.Tx, runID string) (Run, error) {
	var r Run
	var fb int
	var mj, mode string
	err := tx.QueryRowContext(ctx, `SELECT run_id, business_date, window_id, mode, is_fallback, input_snapshot_id,
		constraints_digest, execution_set_hash, trace_digest, candidate_count, selected_count, deferred_count,
		objective_metrics, created_at FROM LsmRuns WHERE run_id = ?`, runID).Scan(&r.RunID, &r.BusinessDate, &r.WindowID,
		&mode, &fb, &r.InputSnapshotID, &r.ConstraintsDigest, &r.ExecutionSetHash, &r.TraceDigest, &r.CandidateCount,
		&r.SelectedCount, &r.DeferredCount, &mj, &r.CreatedAt)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Run{}, domainerr.New("NOT_FOUND", "no such LSM run", map[string]any{"run_id": runID})
		}
		return Run{}, fmt.Errorf("lsm: read run %s: %w", runID, err)
	}
	r.Mode, r.IsFallback = Mode(mode), fb == 1
	if err := json.Unmarshal([]byte(mj), &r.Metrics); err != nil {
		return Run{}, fmt.Errorf("lsm: run %s objective_metrics: %w", runID, err)
	}
	return r, nil
}

// Reproduction is what Reproduce found.
type Reproduction struct {
	Run    Run
	Input  Input
	Result Result // the solver re-run on the recorded snapshot
}

// Reproduce re-derives a recorded run (spec 001 §14.2 audit): it loads the
// snapshot, checks that its bytes hash to the recorded input_snapshot_id
// and constraints_digest, re-runs the solver in the recorded mode and
// checks that execution_set_hash and trace_digest come out the same. Any
// difference is a CHAIN_TAMPERED error naming the field.
func Reproduce(ctx context.Context, db *store.DB, runID string) (rep Reproduction, err error) {
	var cj, kj string
	err = db.Read(ctx, func(tx *store.Tx) error {
		if rep.Run, err = GetRun(ctx, tx, runID); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT candidates_json, constraints_json FROM LsmSnapshots WHERE snapshot_id = ?`,
			rep.Run.InputSnapshotID).Scan(&cj, &kj)
	})
	if err != nil {
		return rep, err
	}
	mismatch := func(field, want, got string) error {
		return domainerr.New("CHAIN_TAMPERED", "LSM run does not reproduce: "+field+" differs",
			map[string]any{"run_id": runID, "field": field, "recorded": want, "recomputed": got})
	}
	if err := json.Unmarshal([]byte(cj), &rep.Input.Candidates); err != nil {
		return rep, fmt.Errorf("lsm: snapshot of %s: %w", runID, err)
	}
	if err := json.Unmarshal([]byte(kj), &rep.Input.Constraints); err != nil {
		return rep, fmt.Errorf("lsm: constraints of %s: %w", runID, err)
	}
	if got := "LSMIN-" + sha256Hex([]byte(cj)); got != rep.Run.InputSnapshotID {
		return rep, mismatch("input_snapshot_id", rep.Run.InputSnapshotID, got)
	}
	if got := sha256Hex([]byte(kj)); got != rep.Run.ConstraintsDigest {
		return rep, mismatch("constraints_digest", rep.Run.ConstraintsDigest, got)
	}
	if rep.Result, err = Solve(rep.Input, rep.Run.Mode); err != nil {
		return rep, err
	}
	if rep.Result.ExecutionSetHash != rep.Run.ExecutionSetHash {
		return rep, mismatch("execution_set_hash", rep.Run.ExecutionSetHash, rep.Result.ExecutionSetHash)
	}
	if rep.Result.TraceDigest != rep.Run.TraceDigest {
		return rep, mismatch("trace_digest", rep.Run.TraceDigest, rep.Result.TraceDigest)
	}
	return rep, nil
}
