// Package jobcli is the logic of `zcgw jobs`: list the configured
// schedules, run a job for a business date (optionally forced with a
// reason), and show the ledger's history and one run in detail. It prints
// exact, stable text for people (and JSON for `show --json`).
//
// It only calls jobs/scheduler and jobs/ledger; it must not implement
// jobs, and it must not read the wall clock except through Env.Clock.
package jobcli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/zcgw/zcgw/coordinator/zclog"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/jobs/ledger"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

// Env is what the command runs with.
type Env struct {
	DataDir  string
	Stdout   io.Writer
	Stderr   io.Writer
	Clock    clock.Clock         // nil => clock.System{}
	Logger   *slog.Logger        // job.* events; nil => discard
	Progress io.Writer           // progress bar; nil => none (scheduler.TerminalWriter)
	Registry *scheduler.Registry // job bodies; nil => the built-in jobs only
	Holder   string              // lease holder name; "" => host-pid-random
}

// Usage is the command's help text.
const Usage = `usage: zcgw jobs COMMAND [args]

  list                                   configured schedules, next fire time and last run
  run NAME [--date YYYY-MM-DD] [--slot HH:MM] [--force --reason R] [--by WHO]
                                         run a job now for a business date (default: today, JST)
  history [NAME] [--limit N]             recent runs, newest first
  show RUN_ID [--json]                   one run with its steps
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
	fs.StringVar(&e.DataDir, "data", e.DataDir, "data folder")
	return fs
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
	led, err := ledger.Open(ctx, ledger.Path(e.DataDir), e.Clock)
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
		fmt.Fprint(e.Stderr, Usage)
		return 2
	}
	e.DataDir = fs.Lookup("data").Value.String()
	r, source, closeFn, err := e.open(ctx)
	if err != nil {
		return e.fail(err)
	}
	defer closeFn()
	cfg := r.Config()
	fmt.Fprintf(e.Stdout, "schedules: %s\n", source)
	fmt.Fprintf(e.Stdout, "lease ttl %s, renew every %s, catch-up at most %d days\n\n", cfg.LeaseTTL, cfg.RenewEvery, cfg.CatchUpMaxDays)
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tINSTANCE\tENABLED\tCATCH-UP\tBODY\tSCHEDULE\tNEXT (JST)\tLAST RUN")
	now := e.Clock.Now()
	for _, name := range cfg.Names() {
		jc := cfg.Jobs[name]
		_, hasBody := r.Registry().Lookup(name)
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, jc.Instance, yesNo(jc.Enabled), yesNo(jc.CatchUp), yesNo(hasBody),
			strings.TrimPrefix(jc.Schedule, scheduler.TZPrefix), next, last)
	}
	tw.Flush()
	fmt.Fprintf(e.Stdout, "\nschedules are %s; BODY no = not implemented in this build yet (run refuses it)\n", strings.TrimSpace(scheduler.TZPrefix))
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
		fmt.Fprint(e.Stderr, Usage)
		return 2
	}
	e.DataDir = fs.Lookup("data").Value.String()
	if *force && strings.TrimSpace(*reason) == "" {
		fmt.Fprintln(e.Stderr, "zcgw jobs run: --force needs --reason")
		return 2
	}
	who := *by
	if who == "" {
		who = "cli"
	}
	r, _, closeFn, err := e.open(ctx)
	if err != nil {
		return e.fail(err)
	}
	defer closeFn()
	res, err := r.Run(ctx, scheduler.Request{Job: pos[0], BusinessDate: *date, Slot: *slot, Force: *force, Reason: *reason, By: who, Trigger: "cli"})
	if res.Run.RunID != 0 {
		run := res.Run
		fmt.Fprintf(e.Stdout, "run %d: %s %s %s %s in %d ms (ran %d of %d steps, %d done earlier)\n",
			run.RunID, run.Job, run.BusinessDate, run.RunKey, run.Status, run.DurationMS, res.Executed, res.Total, res.Skipped)
	}
	if err != nil {
		if res.Run.Status == ledger.Failed {
			fmt.Fprintf(e.Stderr, "zcgw jobs: %v\nrestart it with: zcgw jobs run %s --date %s\n", err, res.Run.Job, res.Run.BusinessDate)
			return 1
		}
		return e.fail(err)
	}
	return 0
}

func (e Env) history(ctx context.Context, args []string) int {
	fs := e.flags("history")
	limit := fs.Int("limit", 20, "how many runs")
	pos, err := parse(fs, args)
	if err != nil || len(pos) > 1 {
		fmt.Fprint(e.Stderr, Usage)
		return 2
	}
	e.DataDir = fs.Lookup("data").Value.String()
	r, _, closeFn, err := e.open(ctx)
	if err != nil {
		return e.fail(err)
	}
	defer closeFn()
	f := ledger.Filter{Limit: *limit}
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
	return 0
}

func (e Env) show(ctx context.Context, args []string) int {
	fs := e.flags("show")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 {
		fmt.Fprint(e.Stderr, Usage)
		return 2
	}
	e.DataDir = fs.Lookup("data").Value.String()
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
