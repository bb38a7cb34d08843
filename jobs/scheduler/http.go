package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
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
		SupersedesRunID: run.SupersedesRunID, ExecutedSteps: res.Executed, SkippedSteps: res.Skipped, Steps: []StepView{}}
	for _, s := range res.Steps {
		v.Steps = append(v.Steps, StepView{Seq: s.Seq, Step: s.Name, Status: string(s.Status), Attempts: s.Attempts,
			DurationMS: s.DurationMS, Summary: s.Summary, Error: s.Error})
	}
	return v
}

// Handler serves POST /internal/cron/{job}: it runs the job through the
// same Runner.Run as cron and the CLI (trigger "http"), detached from the
// request's cancellation so a dropped connection does not abort a batch.
// Responses: 200 with the RunView when COMPLETED; 500 with the RunView
// (status FAILED, error) when the run was recorded and failed; otherwise
// the domainerr catalog body (404 unknown job or no body, 409 lease held
// or already completed, 400 bad date or force without reason). It checks
// no credentials: the gateway mounts it behind X-Cron-Secret.
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
		by := body.RequestedBy
		if by == "" {
			by = "http"
		}
		res, err := r.Run(context.WithoutCancel(req.Context()), Request{Job: req.PathValue("job"), BusinessDate: body.BusinessDate,
			Slot: body.Slot, Force: body.Force, Reason: body.Reason, By: by, Trigger: "http"})
		if err != nil && res.Run.RunID == 0 {
			writeErr(w, req, err)
			return
		}
		status := http.StatusOK
		if err != nil || res.Run.Status != ledger.Completed {
			status = http.StatusInternalServerError
		}
		writeJSON(w, status, ViewOf(res))
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
