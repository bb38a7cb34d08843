package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/jobs/ledger"
)

// TriggerRequest is the optional JSON body of POST /internal/cron/{job}.
type TriggerRequest struct {
	BusinessDate string `json:"business_date,omitempty"`
	Slot         string `json:"slot,omitempty"`
	Force        bool   `json:"force,omitempty"`
	Reason       string `json:"reason,omitempty"`
	RequestedBy  string `json:"requested_by,omitempty"`
	// Via is "cli" when `zcgw jobs run` delegated the run to this node;
	// the run is then recorded with trigger "cli" (otherwise "http").
	Via string `json:"via,omitempty"`
}

// RunView is the JSON form of a run and its steps (HTTP and `jobs show`).
type RunView struct {
	RunID           int64      `json:"run_id"`
	Job             string     `json:"job"`
	BusinessDate    string     `json:"business_date"`
	RunKey          string     `json:"run_key"`
	Status          string     `json:"status"`
	Attempts        int        `json:"attempts"`
	Trigger         string     `json:"trigger"`
	FirstStartedAt  string     `json:"first_started_at"`
	StartedAt       string     `json:"started_at"`
	EndedAt         string     `json:"ended_at,omitempty"`
	DurationMS      int64      `json:"duration_ms"`
	Summary         string     `json:"summary"`
	Error           string     `json:"error,omitempty"`
	ForcedBy        string     `json:"forced_by,omitempty"`
	ForceReason     string     `json:"force_reason,omitempty"`
	ForcedAt        string     `json:"forced_at,omitempty"`
	SupersedesRunID int64      `json:"supersedes_run_id,omitempty"`
	ExecutedSteps   int        `json:"executed_steps"`
	SkippedSteps    int        `json:"skipped_steps"`
	TotalSteps      int        `json:"total_steps"`
	Steps           []StepView `json:"steps"`
}

// StepView is the JSON form of a step.
type StepView struct {
	Seq        int    `json:"seq"`
	Step       string `json:"step"`
	Status     string `json:"status"`
	Attempts   int    `json:"attempts"`
	DurationMS int64  `json:"duration_ms"`
	Summary    string `json:"summary"`
	Error      string `json:"error,omitempty"`
}

// stampOrEmpty is clock.Stamp, or "" for the zero time (not yet ended).
func stampOrEmpty(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return clock.Stamp(t)
}

// ViewOf converts a Result to its JSON form.
func ViewOf(res Result) RunView {
	run := res.Run
	v := RunView{RunID: run.RunID, Job: run.Job, BusinessDate: run.BusinessDate, RunKey: run.RunKey, Status: string(run.Status),
		Attempts: run.Attempts, Trigger: run.Trigger, FirstStartedAt: clock.Stamp(run.FirstStartedAt), StartedAt: clock.Stamp(run.StartedAt),
		EndedAt:    stampOrEmpty(run.EndedAt),
		DurationMS: run.DurationMS, Summary: run.Summary, Error: run.Error, ForcedBy: run.ForcedBy, ForceReason: run.ForceReason,
		ForcedAt:        stampOrEmpty(run.ForcedAt),
		SupersedesRunID: run.SupersedesRunID, ExecutedSteps: res.Executed, SkippedSteps: res.Skipped, TotalSteps: res.Total, Steps: []StepView{}}
	for _, s := range res.Steps {
		v.Steps = append(v.Steps, StepView{Seq: s.Seq, Step: s.Name, Status: string(s.Status), Attempts: s.Attempts,
			DurationMS: s.DurationMS, Summary: s.Summary, Error: s.Error})
	}
	return v
}

// ResultOf is the job's Result (Job.Result) of a recorded run, or nil when
// the job has none.
func (r *Runner) ResultOf(ctx context.Context, run ledger.Run) (any, error) {
	job, ok := r.reg.Lookup(run.Job)
	if !ok || job.Result == nil || run.RunID == 0 {
		return nil, nil
	}
	return job.Result(ctx, run)
}

// View is the JSON answer of a run: the RunView, with the fields of the
// job's Result (if any) merged at its top level.
func (r *Runner) View(ctx context.Context, res Result) (any, error) {
	v := ViewOf(res)
	extra, err := r.ResultOf(ctx, res.Run)
	if err != nil || extra == nil {
		return v, err
	}
	return MergeView(v, extra)
}

// MergeView puts the fields of extra (a value encoding as a JSON object) at
// the top level of v's JSON object; a RunView field wins on a clash.
func MergeView(v RunView, extra any) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	b, err := json.Marshal(extra)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("scheduler: job result is not a JSON object: %w", err)
	}
	vb, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	base := map[string]json.RawMessage{}
	if err := json.Unmarshal(vb, &base); err != nil {
		return nil, err
	}
	for k, val := range base {
		out[k] = val
	}
	return out, nil
}

// Handler serves POST /internal/cron/{job}: it runs the job through the
// same Runner.Run as cron and the CLI (trigger "http", or "cli" when the
// request says via "cli"), detached from the request's cancellation so a
// dropped connection does not abort a batch. Responses: 200 with the
// RunView (plus the job's Result fields) when COMPLETED; 500 with the
// RunView (status FAILED, error) when the run was recorded and failed;
// otherwise the domainerr catalog body (404 unknown job or no body, 409
// lease held or already completed — details run_id and completed_at —, 400
// bad date or force without reason). It checks no credentials: the gateway
// mounts it behind X-Cron-Secret.
func (r *Runner) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /internal/cron/{job}", func(w http.ResponseWriter, req *http.Request) {
		var body TriggerRequest
		raw, err := io.ReadAll(io.LimitReader(req.Body, 1<<16))
		if err == nil && len(bytes.TrimSpace(raw)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			err = dec.Decode(&body)
		}
		if err != nil {
			writeErr(w, req, domainerr.Wrap("INVALID_REQUEST", err, "request body is not a valid trigger request", nil))
			return
		}
		trigger := "http"
		if body.Via == "cli" {
			trigger = "cli"
		}
		by := body.RequestedBy
		if by == "" {
			by = trigger
		}
		ctx := context.WithoutCancel(req.Context())
		res, err := r.Run(ctx, Request{Job: req.PathValue("job"), BusinessDate: body.BusinessDate,
			Slot: body.Slot, Force: body.Force, Reason: body.Reason, By: by, Trigger: trigger})
		if err != nil && (res.Run.RunID == 0 || res.AlreadyCompleted) {
			writeErr(w, req, err)
			return
		}
		status := http.StatusOK
		if err != nil || res.Run.Status != ledger.Completed {
			status = http.StatusInternalServerError
		}
		v, verr := r.View(ctx, res)
		if verr != nil {
			r.log.Error("job.result_failed", "job", res.Run.Job, "run_id", res.Run.RunID, "error", verr.Error())
			v, status = ViewOf(res), http.StatusInternalServerError
		}
		writeJSON(w, status, v)
	})
	return mux
}

func writeErr(w http.ResponseWriter, req *http.Request, err error) {
	b := domainerr.JSON(err, req.Header.Get("X-Request-Id"))
	writeJSON(w, b.Status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
