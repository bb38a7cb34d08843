package scheduler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/ledger"
)

// Sentinel causes of the Runner's refusals; the returned errors are
// *domainerr.Error values wrapping them.
var (
	// ErrUnknownJob: the name is not a configured job (NOT_FOUND).
	ErrUnknownJob = errors.New("unknown job")
	// ErrNoBody: the job is configured but no body is registered for it in
	// this binary yet (NOT_FOUND).
	ErrNoBody = errors.New("job has no registered body")
	// ErrBadInstance: the business date is not YYYY-MM-DD or the slot is
	// not HH:MM (INVALID_REQUEST).
	ErrBadInstance = errors.New("bad business date or slot")
)

// Options configure a Runner.
type Options struct {
	Ledger   *ledger.Ledger
	Registry *Registry
	Config   Config
	Clock    clock.Clock  // nil => clock.System{}
	Logger   *slog.Logger // nil => discard
	Holder   string       // lease holder name; "" => host-pid-random
	Progress io.Writer    // progress bar target; nil => none (see TerminalWriter)
}

// Runner runs job instances. It is safe for concurrent use; two Runners
// (in one process or several) on the same database file never run the same
// job at the same time.
type Runner struct {
	ledger   *ledger.Ledger
	reg      *Registry
	cfg      Config
	clk      clock.Clock
	log      *slog.Logger
	holder   string
	progress io.Writer
}

// NewRunner checks that every registered body has a configured schedule.
func NewRunner(o Options) (*Runner, error) {
	if o.Ledger == nil || o.Registry == nil || o.Config.Jobs == nil {
		return nil, errors.New("scheduler: NewRunner needs a ledger, a registry and a config")
	}
	for _, n := range o.Registry.Names() {
		if _, ok := o.Config.Jobs[n]; !ok {
			return nil, domainerr.Wrap("NOT_FOUND", ErrUnknownJob,
				fmt.Sprintf("registered job %s is not in the configuration catalogue", n), map[string]any{"job": n})
		}
	}
	r := &Runner{ledger: o.Ledger, reg: o.Registry, cfg: o.Config, clk: o.Clock, log: o.Logger, holder: o.Holder, progress: o.Progress}
	if r.clk == nil {
		r.clk = clock.System{}
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.holder == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		r.holder = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	return r, nil
}

// Holder is the name this runner takes leases under.
func (r *Runner) Holder() string { return r.holder }

// Config is the runner's configuration.
func (r *Runner) Config() Config { return r.cfg }

// Registry is the runner's job bodies.
func (r *Runner) Registry() *Registry { return r.reg }

// Ledger is the runner's ledger.
func (r *Runner) Ledger() *ledger.Ledger { return r.ledger }

// Request asks for one run.
type Request struct {
	Job          string
	BusinessDate string // JST YYYY-MM-DD; "" = today by the clock
	Slot         string // repeating jobs: "HH:MM"; "" = the current JST minute. Ignored for daily jobs.
	Force        bool   // re-run a COMPLETED instance
	Reason       string // required with Force
	By           string // who asked (recorded with Force)
	Trigger      string // cron|catchup|cli|http; "" = manual
}

// Result is a finished (COMPLETED or FAILED) run as recorded.
type Result struct {
	Run      ledger.Run
	Steps    []ledger.Step
	Total    int // steps of the job
	Executed int // step bodies run by this attempt
	Skipped  int // steps already COMPLETED by an earlier attempt
	Resumed  bool
	// AlreadyCompleted: the instance had COMPLETED before this request, so
	// nothing ran; Run and Steps are that completed run, and the error
	// returned beside this Result is ledger.ErrAlreadyCompleted.
	AlreadyCompleted bool
}

// manualTrigger reports whether a run was asked for by a person (CLI,
// HTTP, a test) rather than by the schedule (cron, catch-up).
func manualTrigger(trigger string) bool { return trigger != "cron" && trigger != "catchup" }

// Run runs one job instance:
//  1. resolve the instance: business date (given or today in JST) and slot
//     ("daily" or the JST minute);
//  2. take the job's lease (ledger.ErrLeaseHeld if another runner has it);
//  3. begin the run in the ledger (ledger.ErrAlreadyCompleted unless
//     forced with a reason, with Result.AlreadyCompleted and the completed
//     run; a FAILED or orphaned STARTED run is resumed). A manual run of a
//     repeating job for the current minute (no Slot given) whose slot cron
//     already completed starts the slot's next instance instead of being
//     refused; a Slot named explicitly is that instance, run once;
//  4. run each step not yet COMPLETED, in order, renewing the lease between
//     steps and in the background; every ledger write is fenced;
//  5. record COMPLETED, or FAILED with the step and error, and release the
//     lease.
//
// The returned error is nil only when the run COMPLETED. When a run was
// recorded and failed, Result.Run says so (status FAILED, error text).
func (r *Runner) Run(ctx context.Context, req Request) (Result, error) {
	jc, ok := r.cfg.Jobs[req.Job]
	if !ok {
		return Result{}, domainerr.Wrap("NOT_FOUND", ErrUnknownJob,
			fmt.Sprintf("no job named %q; configured jobs: %s", req.Job, strings.Join(r.cfg.Names(), ", ")), map[string]any{"job": req.Job})
	}
	job, ok := r.reg.Lookup(req.Job)
	if !ok {
		return Result{}, domainerr.Wrap("NOT_FOUND", ErrNoBody,
			fmt.Sprintf("job %s is configured but no body is registered for it in this build", req.Job), map[string]any{"job": req.Job})
	}
	now := r.clk.Now()
	date := req.BusinessDate
	if date == "" {
		date = clock.BusinessDate(now)
	} else if d, err := clock.ParseBusinessDate(date); err != nil || clock.BusinessDate(d) != date {
		return Result{}, domainerr.Wrap("INVALID_REQUEST", ErrBadInstance,
			fmt.Sprintf("business date %q is not YYYY-MM-DD", date), map[string]any{"job": req.Job, "field": "business_date"})
	}
	slot := ledger.DailySlot
	if jc.Instance == Repeating {
		slot = req.Slot
		if slot == "" {
			slot = now.In(clock.JST).Format("15:04")
		} else if _, err := time.Parse("15:04", slot); err != nil {
			return Result{}, domainerr.Wrap("INVALID_REQUEST", ErrBadInstance,
				fmt.Sprintf("slot %q is not HH:MM", slot), map[string]any{"job": req.Job, "field": "slot"})
		}
	}
	trigger := req.Trigger
	if trigger == "" {
		trigger = "manual"
	}

	lease, err := r.ledger.AcquireLease(ctx, req.Job, r.holder, r.cfg.LeaseTTL)
	if err != nil {
		r.log.Info("job.skip", "job", req.Job, "business_date", date, "run_key", slot, "trigger", trigger, "reason", err.Error())
		return Result{}, err
	}
	defer func() {
		if err := r.ledger.ReleaseLease(context.WithoutCancel(ctx), lease); err != nil {
			r.log.Warn("job.lease_release_failed", "job", req.Job, "token", lease.Token, "error", err.Error())
		}
	}()

	begin := ledger.Begin{Job: req.Job, BusinessDate: date, Slot: slot, Trigger: trigger, Force: req.Force, ForcedBy: req.By, Reason: req.Reason}
	if jc.Instance == Repeating && manualTrigger(trigger) && !req.Force && req.Slot == "" {
		begin.Again, begin.Reason = true, "manual "+trigger+" run; slot "+slot+" had already run"
		if begin.ForcedBy == "" {
			begin.ForcedBy = trigger
		}
	}
	run, resumed, err := r.ledger.BeginRun(ctx, lease, begin)
	if err != nil {
		r.log.Info("job.skip", "job", req.Job, "business_date", date, "run_key", slot, "trigger", trigger, "reason", err.Error())
		if errors.Is(err, ledger.ErrAlreadyCompleted) && run.RunID != 0 {
			res := Result{Run: run, Total: len(job.Steps), AlreadyCompleted: true}
			if steps, serr := r.ledger.Steps(ctx, run.RunID); serr == nil {
				res.Steps, res.Skipped = steps, len(steps)
			}
			return res, err
		}
		return Result{}, err
	}
	startAttrs := []any{"job", run.Job, "business_date", run.BusinessDate, "run_key", run.RunKey, "run_id", run.RunID,
		"status", run.Status, "attempt", run.Attempts, "trigger", trigger, "resumed", resumed, "holder", lease.Holder, "token", lease.Token}
	if run.Rerun > 0 {
		startAttrs = append(startAttrs, "forced_by", run.ForcedBy, "force_reason", run.ForceReason, "supersedes_run_id", run.SupersedesRunID)
	}
	r.log.Info("job.start", startAttrs...)

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if jc.Timeout > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeout(runCtx, jc.Timeout)
		defer stop()
	}
	stopRenew := r.renewInBackground(runCtx, cancel, lease)
	executed, skipped, failedStep, runErr := r.runSteps(runCtx, job, run, lease)
	stopRenew()

	recordCtx := context.WithoutCancel(ctx)
	if runErr == nil {
		runErr = r.ledger.FinishRun(recordCtx, lease, run.RunID, fmt.Sprintf("ran %d of %d steps, %d done earlier", executed, len(job.Steps), skipped))
	} else {
		stepErr := runErr
		if failedStep.err != nil {
			stepErr = failedStep.err
		}
		if ferr := r.ledger.FailRun(recordCtx, lease, run.RunID, failedStep.seq, failedStep.name, stepErr.Error(), runErr.Error()); ferr != nil {
			runErr = errors.Join(runErr, ferr)
		}
	}
	res := Result{Total: len(job.Steps), Executed: executed, Skipped: skipped, Resumed: resumed}
	var rerr error
	if res.Run, rerr = r.ledger.RunByID(recordCtx, run.RunID); rerr == nil {
		res.Steps, rerr = r.ledger.Steps(recordCtx, run.RunID)
	}
	endAttrs := []any{"job", run.Job, "business_date", run.BusinessDate, "run_key", run.RunKey, "run_id", run.RunID,
		"status", res.Run.Status, "duration_ms", res.Run.DurationMS, "executed_steps", executed, "skipped_steps", skipped}
	if runErr != nil {
		endAttrs = append(endAttrs, "failed_step", failedStep.name, "error", runErr.Error())
		r.log.Error("job.end", endAttrs...)
		return res, fmt.Errorf("scheduler: %s %s run %d: %w", run.Job, run.BusinessDate, run.RunID, runErr)
	}
	r.log.Info("job.end", endAttrs...)
	return res, rerr
}

type stepRef struct {
	seq  int
	name string
	err  error // the step body's own error, recorded on its JobSteps row
}

func (r *Runner) runSteps(ctx context.Context, job Job, run ledger.Run, lease ledger.Lease) (executed, skipped int, failed stepRef, err error) {
	done := map[string]bool{}
	steps, err := r.ledger.Steps(ctx, run.RunID)
	if err != nil {
		return 0, 0, stepRef{}, err
	}
	for _, s := range steps {
		if s.Status == ledger.Completed {
			done[s.Name] = true
		}
	}
	bar := newProgressBar(r.progress, run.Job+" "+run.BusinessDate+" "+run.RunKey, len(job.Steps))
	defer bar.finish()
	for i, step := range job.Steps {
		seq := i + 1
		if done[step.Name] {
			skipped++
			bar.advance(seq, step.Name+" (done earlier)")
			continue
		}
		ref := stepRef{seq: seq, name: step.Name}
		if err := context.Cause(ctx); err != nil {
			return executed, skipped, ref, fmt.Errorf("before step %s: %w", step.Name, err)
		}
		if err := r.ledger.StartStep(ctx, lease, run.RunID, seq, step.Name, r.cfg.LeaseTTL); err != nil {
			return executed, skipped, ref, fmt.Errorf("before step %s: %w", step.Name, err)
		}
		sc := StepContext{Job: run.Job, BusinessDate: run.BusinessDate, RunKey: run.RunKey, RunID: run.RunID,
			Attempt: run.Attempts, Lease: lease, Ledger: r.ledger, Clock: r.clk, Logger: r.log}
		started := r.clk.Now()
		summary, err := r.runStep(ctx, step, sc, seq)
		if err != nil {
			r.log.Error("job.step", "job", run.Job, "run_id", run.RunID, "step", step.Name, "seq", seq, "status", ledger.Failed,
				"duration_ms", r.clk.Now().Sub(started).Milliseconds(), "error", err.Error())
			ref.err = err
			return executed, skipped, ref, fmt.Errorf("step %s: %w", step.Name, err)
		}
		executed++
		r.log.Info("job.step", "job", run.Job, "run_id", run.RunID, "step", step.Name, "seq", seq, "status", ledger.Completed,
			"duration_ms", r.clk.Now().Sub(started).Milliseconds(), "summary", summary)
		bar.advance(seq, step.Name)
	}
	return executed, skipped, stepRef{}, nil
}

// runStep runs one step body and records its completion. A TxStep's body
// and completion row share one fenced transaction; a plain step's
// completion is a fenced transaction after its body. A panic in the body
// becomes an error (and rolls the TxStep's transaction back).
func (r *Runner) runStep(ctx context.Context, step Step, sc StepContext, seq int) (summary string, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("job.step_panic", "job", sc.Job, "run_id", sc.RunID, "step", step.Name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	if step.RunTx != nil {
		err = RunTxStep(ctx, sc, step.Name, seq, step.RunTx, &summary)
		return summary, err
	}
	if summary, err = step.Run(ctx, sc); err != nil {
		return "", err
	}
	// The body's effects happened: record them even when the run is being
	// cancelled (shutdown), so a restart does not redo them.
	rec := context.WithoutCancel(ctx)
	err = sc.Ledger.WriteFenced(rec, sc.Lease, func(tx *store.Tx) error {
		return sc.Ledger.CompleteStep(rec, tx, sc.RunID, seq, step.Name, summary)
	})
	return summary, err
}

// RunTxStep is the exactly-once helper: it runs body inside one store.Write
// transaction on the ledger's database that first checks the fencing token
// and, when body succeeds, records the step's completion with its summary.
// Either the body's writes and the completion row both commit, or neither
// does (error, panic, stale lease, crash).
func RunTxStep(ctx context.Context, sc StepContext, name string, seq int, body TxStepFunc, summary *string) error {
	return sc.Ledger.WriteFenced(ctx, sc.Lease, func(tx *store.Tx) error {
		s, err := body(ctx, tx, sc)
		if err != nil {
			return err
		}
		*summary = s
		return sc.Ledger.CompleteStep(ctx, tx, sc.RunID, seq, name, s)
	})
}

// renewInBackground renews the lease every RenewEvery (wall time: the
// period is not a business decision; the expiry written is clock-based).
// When the lease was taken over it cancels the run with ledger.ErrFenced.
func (r *Runner) renewInBackground(ctx context.Context, cancel context.CancelCauseFunc, lease ledger.Lease) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(r.cfg.RenewEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := r.ledger.RenewLease(ctx, lease, r.cfg.LeaseTTL); err != nil {
					r.log.Warn("job.lease_renew_failed", "job", lease.Job, "token", lease.Token, "error", err.Error())
					if errors.Is(err, ledger.ErrFenced) {
						cancel(err)
						return
					}
				}
			}
		}
	}()
	return func() { close(done); <-finished }
}
