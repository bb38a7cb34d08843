// Package jobcli is the logic of `zcgw jobs`: list the configured
// schedules, run a job for a business date (optionally forced with a
// reason), and show the ledger's history and one run in detail. It prints
// exact, stable text for people (and JSON for `show --json`).
//
// A run goes where the data folder's cores are: through the node serving
// the folder (coordinator/procid tells; POST /internal/cron/{job}), or in
// this process when none does (Env.Open). Either way the same
// scheduler.Runner, lease and fencing decide, and the output is the same.
//
// It calls jobs/scheduler and jobs/ledger (and the node over HTTP); it must
// not implement jobs, it must not import gateway (cmd/zcgw wires Open,
// Catalog and Authorize), and it must not read the wall clock except
// through Env.Clock.
package jobcli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/zclog"
	"github.com/zcgw/zcgw/jobs/ledger"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

// Env is what the command runs with.
type Env struct {
	DataDir  string
	Stdout   io.Writer
	Stderr   io.Writer
	Clock    clock.Clock         // nil => clock.System{}
	Logger   *slog.Logger        // job.* events; nil => JobLog decides
	Progress io.Writer           // progress bar; nil => none (scheduler.TerminalWriter)
	Registry *scheduler.Registry // job bodies when Open is nil; nil => the built-in jobs only
	Holder   string              // lease holder name; "" => host-pid-random
	// JobLog, when Logger is nil, appends the job.* events to
	// <data>/logs/jobs.log of the data folder the command resolved (and to
	// stderr too unless StderrIsTerminal): NewLogger.
	JobLog           bool
	StderrIsTerminal bool
	// Open starts the job bodies in this process for `run` on a data folder
	// no node serves: the node's components without its workers (cmd/zcgw
	// wires gateway/node.Start). It returns their registry and a close
	// function. nil => Registry.
	Open func(ctx context.Context, dataDir string, log *slog.Logger) (*scheduler.Registry, func(), error)
	// Catalog lists the jobs that have a body in this build, by the same
	// registration the node uses (gateway/node.JobCatalog), for `list`.
	// nil => Registry's names.
	Catalog func(ctx context.Context, dataDir string) ([]string, error)
	// Authorize puts the data folder's operator credential on a request to
	// its node (cmd/zcgw: node.json's cron_secret as gateway's
	// X-Cron-Secret): on a folder a node serves, `run` goes through the
	// node's POST /internal/cron/{job}. nil => such a run is refused.
	Authorize func(dataDir string, req *http.Request) error
	// Ledger is where the data folder's job ledger lives (cmd/zcgw: the
	// coordinator database node.json's store block names). nil =>
	// ledger.Path, the SQLite file in the folder.
	Ledger func(dataDir string) (string, error)
	// HTTP is the client of those delegated runs (nil => no timeout: a
	// batch takes as long as it takes; ^C cancels the request, not the run).
	HTTP *http.Client
}

// Usage is the command's help text.
const Usage = `usage: zcgw jobs COMMAND [args]

  list                                   configured schedules, whether this build has the body, next fire time and last run
  run NAME [--date YYYY-MM-DD] [--slot HH:MM] [--force --reason R] [--by WHO]
                                         run a job now for a business date (default: today, JST).
                                         On a data folder a node serves (zcgw serve), the node runs it
                                         (POST /internal/cron/NAME with node.json's cron_secret); otherwise
                                         it runs in this process. A daily job already COMPLETED for the date
                                         is not run again (exit 0; --force --reason runs it again). A manual
                                         run of a repeating job for this minute always runs.
  history [NAME] [--limit N] [--before RUN_ID]
                                         recent runs, newest first, N at a time (default 20); says how many
                                         older runs it did not show and the --before that shows them
  show RUN_ID [--json]                   one run with its steps
  help                                   this text
`

// Main runs `zcgw jobs args...` and returns the exit code: 0 done, 1 the
// job failed or was refused, 2 usage error.
func Main(ctx context.Context, e Env, args []string) int {
	if e.Clock == nil {
		e.Clock = clock.System{}
	}
	if len(args) == 0 {
		fmt.Fprint(e.Stderr, Usage)
		return 2
	}
	switch args[0] {
	case "list":
		return e.list(ctx, args[1:])
	case "run":
		return e.run(ctx, args[1:])
	case "history":
		return e.history(ctx, args[1:])
	case "show":
		return e.show(ctx, args[1:])
	case "help", "-h", "--help":
		fmt.Fprint(e.Stdout, Usage)
		return 0
	}
	fmt.Fprintf(e.Stderr, "zcgw jobs: unknown command %q\n\n%s", args[0], Usage)
	return 2
}

// parse parses flags that may come before or after positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func (e Env) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("zcgw jobs "+name, flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	fs.Usage = func() {}
	fs.StringVar(&e.DataDir, "data", e.DataDir, "data folder")
	return fs
}

// badArgs answers a parse failure: usage on stdout and 0 for -h/--help,
// usage on stderr and 2 otherwise.
func (e Env) badArgs(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(e.Stdout, Usage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(e.Stderr, "zcgw jobs: %v\n", err)
	}
	fmt.Fprint(e.Stderr, Usage)
	return 2
}

// setup takes the data folder the subcommand's flags resolved and creates
// the job log there when asked (JobLog).
func (e *Env) setup(fs *flag.FlagSet) (func(), error) {
	e.DataDir = fs.Lookup("data").Value.String()
	if e.Logger != nil || !e.JobLog {
		return func() {}, nil
	}
	l, closeFn, err := NewLogger(e.DataDir, e.Stderr, e.StderrIsTerminal)
	if err != nil {
		return nil, err
	}
	e.Logger = l
	return closeFn, nil
}

// open loads the configuration and opens the ledger and a runner.
func (e Env) open(ctx context.Context) (*scheduler.Runner, string, func(), error) {
	cfgPath := filepath.Join(e.DataDir, scheduler.ConfigFileName)
	cfg, err := scheduler.LoadConfig(cfgPath)
	if err != nil {
		return nil, "", nil, err
	}
	source := cfgPath
	if _, statErr := os.Stat(cfgPath); statErr != nil {
		source = "built-in defaults (" + cfgPath + " absent)"
	}
	reg := e.Registry
	if reg == nil {
		reg = scheduler.NewRegistry()
		if err := scheduler.RegisterBuiltins(reg); err != nil {
			return nil, "", nil, err
		}
	}
	where := ledger.Path(e.DataDir)
	if e.Ledger != nil {
		if where, err = e.Ledger(e.DataDir); err != nil {
			return nil, "", nil, err
		}
	}
	led, err := ledger.Open(ctx, where, e.Clock)
	if err != nil {
		return nil, "", nil, err
	}
	r, err := scheduler.NewRunner(scheduler.Options{Ledger: led, Registry: reg, Config: cfg, Clock: e.Clock,
		Logger: e.Logger, Holder: e.Holder, Progress: e.Progress})
	if err != nil {
		led.Close()
		return nil, "", nil, err
	}
	return r, source, func() { led.Close() }, nil
}

func (e Env) fail(err error) int {
	fmt.Fprintf(e.Stderr, "zcgw jobs: %v\n", err)
	return 1
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (e Env) list(ctx context.Context, args []string) int {
	fs := e.flags("list")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 0 {
		return e.badArgs(err)
	}
	closeLog, err := e.setup(fs)
	if err != nil {
		return e.fail(err)
	}
	defer closeLog()
	r, source, closeFn, err := e.open(ctx)
	if err != nil {
		return e.fail(err)
	}
	defer closeFn()
	bodies := map[string]bool{}
	names := r.Registry().Names()
	if e.Catalog != nil {
		if names, err = e.Catalog(ctx, e.DataDir); err != nil {
			return e.fail(err)
		}
	}
	for _, n := range names {
		bodies[n] = true
	}
	cfg := r.Config()
	fmt.Fprintf(e.Stdout, "schedules: %s\n", source)
	fmt.Fprintf(e.Stdout, "lease ttl %s, renew every %s, catch-up at most %d days\n\n", cfg.LeaseTTL, cfg.RenewEvery, cfg.CatchUpMaxDays)
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tINSTANCE\tENABLED\tCATCH-UP\tBODY\tSCHEDULE\tNEXT (JST)\tLAST RUN")
	now := e.Clock.Now()
	missing := 0
	for _, name := range cfg.Names() {
		jc := cfg.Jobs[name]
		if !bodies[name] {
			missing++
		}
		last := "-"
		if run, ok, err := r.Ledger().LastRun(ctx, name); err != nil {
			return e.fail(err)
		} else if ok {
			last = fmt.Sprintf("run %d %s %s %s", run.RunID, run.BusinessDate, run.RunKey, run.Status)
		}
		next := "-"
		if jc.Enabled {
			next = jc.Next(now).In(clock.JST).Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, jc.Instance, yesNo(jc.Enabled), yesNo(jc.CatchUp), yesNo(bodies[name]),
			strings.TrimPrefix(jc.Schedule, scheduler.TZPrefix), next, last)
	}
	tw.Flush()
	fmt.Fprintf(e.Stdout, "\nschedules are %s", strings.TrimSpace(scheduler.TZPrefix))
	if missing > 0 {
		fmt.Fprintf(e.Stdout, "; BODY no = not implemented in this build (run refuses it)")
	}
	fmt.Fprintln(e.Stdout)
	return 0
}

func (e Env) run(ctx context.Context, args []string) int {
	fs := e.flags("run")
	date := fs.String("date", "", "JST business date YYYY-MM-DD (default: today)")
	slot := fs.String("slot", "", "repeating jobs: the HH:MM slot (default: the current minute)")
	force := fs.Bool("force", false, "re-run a COMPLETED instance (needs --reason)")
	reason := fs.String("reason", "", "why the forced re-run is needed (recorded)")
	by := fs.String("by", os.Getenv("USER"), "who forces the re-run (recorded)")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 {
		return e.badArgs(err)
	}
	if *force && strings.TrimSpace(*reason) == "" {
		fmt.Fprintln(e.Stderr, "zcgw jobs run: --force needs --reason")
		return 2
	}
	who := *by
	if who == "" {
		who = "cli"
	}
	closeLog, err := e.setup(fs)
	if err != nil {
		return e.fail(err)
	}
	defer closeLog()
	req := scheduler.Request{Job: pos[0], BusinessDate: *date, Slot: *slot, Force: *force, Reason: *reason, By: who, Trigger: "cli"}
	info, served, err := procid.Running(e.DataDir)
	if err != nil {
		return e.fail(err)
	}
	if served {
		return e.runOnNode(ctx, info, req)
	}
	if e.Open != nil {
		reg, closeNode, err := e.Open(ctx, e.DataDir, e.Logger)
		if err != nil {
			return e.fail(err)
		}
		defer closeNode()
		e.Registry = reg
	}
	r, _, closeFn, err := e.open(ctx)
	if err != nil {
		return e.fail(err)
	}
	defer closeFn()
	res, err := r.Run(ctx, req)
	switch {
	case res.AlreadyCompleted:
		return e.alreadyCompleted(res.Run.Job, res.Run.BusinessDate, res.Run.RunKey, res.Run.RunID, clock.Stamp(res.Run.EndedAt))
	case res.Run.RunID == 0:
		return e.fail(err)
	}
	v, verr := r.View(ctx, res)
	if verr != nil {
		return e.printRun(scheduler.ViewOf(res), nil, errors.Join(err, verr))
	}
	raw, verr := json.Marshal(v)
	if verr != nil {
		return e.printRun(scheduler.ViewOf(res), nil, errors.Join(err, verr))
	}
	return e.printRun(scheduler.ViewOf(res), resultFields(raw), err)
}

// printRun prints a recorded run the same way for a run made here and one
// the node made: the run line, the job's result (if it has one), and for a
// failure the error and how to restart. err is the run's error, if any.
func (e Env) printRun(v scheduler.RunView, result []byte, err error) int {
	fmt.Fprintf(e.Stdout, "run %d: %s %s %s %s in %d ms (ran %d of %d steps, %d done earlier)\n",
		v.RunID, v.Job, v.BusinessDate, v.RunKey, v.Status, v.DurationMS, v.ExecutedSteps, v.TotalSteps, v.SkippedSteps)
	if len(result) > 0 {
		fmt.Fprintf(e.Stdout, "result: %s\n", result)
	}
	if v.Status == string(ledger.Completed) && err == nil {
		return 0
	}
	msg := v.Error
	if err != nil && msg == "" {
		msg = err.Error()
	}
	fmt.Fprintf(e.Stderr, "zcgw jobs: %s %s run %d: %s\n", v.Job, v.BusinessDate, v.RunID, msg)
	if v.Status == string(ledger.Failed) {
		fmt.Fprintf(e.Stderr, "restart it with: zcgw jobs run %s --date %s\n", v.Job, v.BusinessDate)
	}
	return 1
}

// alreadyCompleted is the answer to a run of an instance that had
// COMPLETED: nothing ran, which is what was wanted (exit 0).
func (e Env) alreadyCompleted(job, date, key string, runID int64, completedAt string) int {
	at := completedAt
	if t, err := clock.ParseStamp(completedAt); err == nil {
		at = shownTime(t)
	}
	fmt.Fprintf(e.Stdout, "%s %s (%s) was already completed at %s as run %d: nothing to do (zcgw jobs show %d; run it again with --force --reason)\n",
		job, date, key, at, runID, runID)
	return 0
}

// runOnNode delegates a run to the node serving the data folder, through
// its POST /internal/cron/{job} (the node's Runner: its lease, its cores and
// MQ consumers), and prints the node's answer like a local run's.
func (e Env) runOnNode(ctx context.Context, node procid.Info, req scheduler.Request) int {
	who := fmt.Sprintf("node %s (pid %d, addr %s)", node.Node, node.PID, node.Addr)
	if e.Authorize == nil || node.Addr == "" {
		fmt.Fprintf(e.Stderr, "zcgw jobs run: the data folder %s is served by %s; a job runs there only through that node "+
			"(its cores and MQ have one consumer), which this command cannot reach: run it once the node is listening, or stop the node\n",
			e.DataDir, who)
		return 1
	}
	body, _ := json.Marshal(scheduler.TriggerRequest{BusinessDate: req.BusinessDate, Slot: req.Slot, Force: req.Force,
		Reason: req.Reason, RequestedBy: req.By, Via: "cli"})
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+node.Addr+"/internal/cron/"+url.PathEscape(req.Job), bytes.NewReader(body))
	if err != nil {
		return e.fail(err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if err := e.Authorize(e.DataDir, hreq); err != nil {
		return e.fail(fmt.Errorf("credentials for %s: %w", who, err))
	}
	client := e.HTTP
	if client == nil {
		client = &http.Client{}
	}
	fmt.Fprintf(e.Stderr, "zcgw jobs: %s serves %s: asking it to run %s\n", who, e.DataDir, req.Job)
	resp, err := client.Do(hreq)
	if err != nil {
		return e.fail(fmt.Errorf("ask %s to run %s: %w", who, req.Job, err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return e.fail(fmt.Errorf("read the answer of %s: %w", who, err))
	}
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusInternalServerError {
		var v scheduler.RunView
		if json.Unmarshal(raw, &v) == nil && v.RunID != 0 {
			return e.printRun(v, resultFields(raw), nil)
		}
	}
	var eb domainerr.Body
	if json.Unmarshal(raw, &eb) != nil || eb.ReasonCode == "" {
		return e.fail(fmt.Errorf("%s answered %s: %s", who, resp.Status, bytes.TrimSpace(raw)))
	}
	if eb.ReasonCode == "ALREADY_PROCESSED" {
		d := eb.Details
		id, _ := d["run_id"].(float64)
		str := func(k string) string { v, _ := d[k].(string); return v }
		return e.alreadyCompleted(str("job"), str("business_date"), str("run_key"), int64(id), str("completed_at"))
	}
	fmt.Fprintf(e.Stderr, "zcgw jobs: %s: %s (answered by %s)\n", eb.ReasonCode, eb.Error, who)
	return 1
}

// resultFields is the part of a node's run answer that is not the RunView:
// the job's Result fields (scheduler.Runner.View), as compact JSON with
// sorted keys like a local run prints them; nil when there are none.
func resultFields(raw []byte) []byte {
	all := map[string]json.RawMessage{}
	if json.Unmarshal(raw, &all) != nil {
		return nil
	}
	rt := reflect.TypeOf(scheduler.RunView{})
	for i := 0; i < rt.NumField(); i++ {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		delete(all, name)
	}
	if len(all) == 0 {
		return nil
	}
	out, err := json.Marshal(all)
	if err != nil {
		return nil
	}
	return out
}

func (e Env) history(ctx context.Context, args []string) int {
	fs := e.flags("history")
	limit := fs.Int("limit", 20, "how many runs per page")
	before := fs.Int64("before", 0, "show the runs older than this run id (the next page)")
	pos, err := parse(fs, args)
	if err != nil || len(pos) > 1 || *limit <= 0 || *before < 0 {
		return e.badArgs(err)
	}
	closeLog, err := e.setup(fs)
	if err != nil {
		return e.fail(err)
	}
	defer closeLog()
	r, _, closeFn, err := e.open(ctx)
	if err != nil {
		return e.fail(err)
	}
	defer closeFn()
	f := ledger.Filter{Limit: *limit, BeforeID: *before}
	if len(pos) == 1 {
		f.Job = pos[0]
		if _, ok := r.Config().Jobs[f.Job]; !ok {
			return e.fail(fmt.Errorf("no job named %q", f.Job))
		}
	}
	runs, err := r.Ledger().History(ctx, f)
	if err != nil {
		return e.fail(err)
	}
	if len(runs) == 0 {
		fmt.Fprintln(e.Stdout, "no runs recorded")
		return 0
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tJOB\tBUSINESS DATE\tRUN KEY\tSTATUS\tATTEMPTS\tTRIGGER\tSTARTED (UTC)\tDURATION")
	for _, run := range runs {
		dur := "-"
		if run.Status != ledger.Started {
			dur = strconv.FormatInt(run.DurationMS, 10) + " ms"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", run.RunID, run.Job, run.BusinessDate, run.RunKey, run.Status,
			run.Attempts, run.Trigger, shownTime(run.StartedAt), dur)
	}
	tw.Flush()
	last := runs[len(runs)-1].RunID
	more, err := r.Ledger().CountRuns(ctx, ledger.Filter{Job: f.Job, BeforeID: last})
	if err != nil {
		return e.fail(err)
	}
	if more > 0 {
		next := "zcgw jobs history"
		if f.Job != "" {
			next += " " + f.Job
		}
		fmt.Fprintf(e.Stdout, "%d older %s not shown; next page: %s --limit %d --before %d\n", more, plural(more, "run", "runs"), next, *limit, last)
	}
	return 0
}

func (e Env) show(ctx context.Context, args []string) int {
	fs := e.flags("show")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 {
		return e.badArgs(err)
	}
	closeLog, err := e.setup(fs)
	if err != nil {
		return e.fail(err)
	}
	defer closeLog()
	id, err := strconv.ParseInt(pos[0], 10, 64)
	if err != nil || id <= 0 {
		fmt.Fprintf(e.Stderr, "zcgw jobs show: RUN_ID %q is not a positive number\n", pos[0])
		return 2
	}
	r, _, closeFn, err := e.open(ctx)
	if err != nil {
		return e.fail(err)
	}
	defer closeFn()
	run, err := r.Ledger().RunByID(ctx, id)
	if err != nil {
		if errors.Is(err, ledger.ErrRunNotFound) {
			fmt.Fprintf(e.Stderr, "zcgw jobs: no run %d\n", id)
			return 1
		}
		return e.fail(err)
	}
	steps, err := r.Ledger().Steps(ctx, id)
	if err != nil {
		return e.fail(err)
	}
	if *asJSON {
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		v := scheduler.ViewOf(scheduler.Result{Run: run, Steps: steps})
		v.ExecutedSteps, v.SkippedSteps = 0, 0
		if err := enc.Encode(v); err != nil {
			return e.fail(err)
		}
		return 0
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	ended, dur := "-", "-"
	if !run.EndedAt.IsZero() {
		ended, dur = shownTime(run.EndedAt), strconv.FormatInt(run.DurationMS, 10)+" ms"
	}
	fmt.Fprintf(tw, "run\t%d\n", run.RunID)
	fmt.Fprintf(tw, "job\t%s\n", run.Job)
	fmt.Fprintf(tw, "business date\t%s\n", run.BusinessDate)
	fmt.Fprintf(tw, "run key\t%s\n", run.RunKey)
	fmt.Fprintf(tw, "status\t%s\n", run.Status)
	fmt.Fprintf(tw, "attempts\t%d\n", run.Attempts)
	fmt.Fprintf(tw, "trigger\t%s\n", run.Trigger)
	fmt.Fprintf(tw, "first started\t%s\n", shownTime(run.FirstStartedAt))
	fmt.Fprintf(tw, "started\t%s\n", shownTime(run.StartedAt))
	fmt.Fprintf(tw, "ended\t%s\n", ended)
	fmt.Fprintf(tw, "duration\t%s\n", dur)
	fmt.Fprintf(tw, "summary\t%s\n", dash(run.Summary))
	fmt.Fprintf(tw, "error\t%s\n", dash(run.Error))
	fmt.Fprintf(tw, "holder\t%s (token %d)\n", run.Holder, run.Token)
	if run.Rerun > 0 {
		fmt.Fprintf(tw, "forced by\t%s at %s\n", run.ForcedBy, shownTime(run.ForcedAt))
		fmt.Fprintf(tw, "force reason\t%s\n", run.ForceReason)
		fmt.Fprintf(tw, "supersedes\trun %d\n", run.SupersedesRunID)
	}
	tw.Flush()
	fmt.Fprintln(e.Stdout)
	if len(steps) == 0 {
		fmt.Fprintln(e.Stdout, "no steps recorded")
		return 0
	}
	tw = tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tSTEP\tSTATUS\tATTEMPTS\tDURATION\tSUMMARY / ERROR")
	for _, s := range steps {
		note := s.Summary
		if s.Status != ledger.Completed {
			note = s.Error
		}
		sd := "-"
		if !s.EndedAt.IsZero() {
			sd = strconv.FormatInt(s.DurationMS, 10) + " ms"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", s.Seq, s.Name, s.Status, s.Attempts, sd, dash(note))
	}
	tw.Flush()
	return 0
}

// NewLogger is the CLI's job.* event log: slog JSON appended to
// DataDir/logs/jobs.log, and also to stderr when stderr is not a terminal
// (under cron or systemd the collector gets every event; a person at a
// terminal gets the progress bar instead of interleaved JSON).
func NewLogger(dataDir string, stderr io.Writer, stderrIsTerminal bool) (*slog.Logger, func(), error) {
	dir := filepath.Join(dataDir, "logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("jobcli: create %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "jobs.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("jobcli: open job log: %w", err)
	}
	var w io.Writer = f
	if !stderrIsTerminal && stderr != nil {
		w = io.MultiWriter(f, stderr)
	}
	return zclog.New(w, zclog.Options{}), func() { f.Close() }, nil
}

// shownTime is how the CLI prints an instant to a person: UTC to the
// second (the stored form carries nanoseconds).
func shownTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
