package jobcli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

type cli struct {
	t   *testing.T
	env Env
	clk *clock.Manual
}

func newCLI(t *testing.T, reg *scheduler.Registry) *cli {
	clk := clock.NewManual(time.Date(2026, 12, 1, 23, 30, 0, 0, clock.JST))
	return &cli{t: t, clk: clk, env: Env{DataDir: t.TempDir(), Clock: clk, Registry: reg, Holder: "ops-1"}}
}

func (c *cli) run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	e := c.env
	e.Stdout, e.Stderr = &out, &errb
	code = Main(context.Background(), e, args)
	return code, out.String(), errb.String()
}

func (c *cli) expect(wantCode int, wantOut, wantErr string, args ...string) {
	c.t.Helper()
	code, out, errs := c.run(args...)
	if code != wantCode || out != wantOut || errs != wantErr {
		c.t.Fatalf("zcgw jobs %s\n code %d, want %d\n stdout:\n%s\n want:\n%s\n stderr:\n%s\n want:\n%s",
			strings.Join(args, " "), code, wantCode, out, wantOut, errs, wantErr)
	}
}

func builtins(t *testing.T) *scheduler.Registry {
	reg := scheduler.NewRegistry()
	if err := scheduler.RegisterBuiltins(reg); err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestListShowsSchedulesBodiesAndLastRun(t *testing.T) {
	c := newCLI(t, builtins(t))
	c.expect(0, "run 1: jobs-ledger-prune 2026-12-01 daily COMPLETED in 0 ms (ran 1 of 1 steps, 0 done earlier)\n", "",
		"run", "jobs-ledger-prune")
	cfgPath := filepath.Join(c.env.DataDir, "jobs.json")
	if err := os.WriteFile(cfgPath, []byte(`{"catch_up_max_days": 3, "jobs": {"outbox-drain": {"enabled": false}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c.expect(0, "schedules: "+cfgPath+`
lease ttl 2m0s, renew every 40s, catch-up at most 3 days

JOB                      INSTANCE   ENABLED  CATCH-UP  BODY  SCHEDULE            NEXT (JST)        LAST RUN
bulk-window              repeating  yes      no        no    0 9,11,13,15 * * *  2026-12-02 09:00  -
case-sla-escalation      repeating  yes      no        no    */5 * * * *         2026-12-01 23:35  -
deferred-window          daily      yes      yes       no    0 18 * * *          2026-12-02 18:00  -
dns-intraday-cutoff      repeating  yes      no        no    0 12 * * *          2026-12-02 12:00  -
dns-kick                 daily      yes      yes       no    0 16 * * *          2026-12-02 16:00  -
dns-settle               daily      yes      yes       no    15 16 * * *         2026-12-02 16:15  -
eod                      daily      yes      yes       no    30 23 * * *         2026-12-02 23:30  -
finality-audit           repeating  no       no        no    0 2 * * *           -                 -
idempotency-ttl-cleanup  daily      yes      no        no    15 3 * * *          2026-12-02 03:15  -
jobs-ledger-prune        daily      yes      no        yes   45 4 * * *          2026-12-02 04:45  run 1 2026-12-01 daily COMPLETED
outbox-drain             repeating  no       no        no    * * * * *           -                 -
overnight-receive        daily      yes      yes       no    0 6 * * *           2026-12-02 06:00  -
overnight-send           daily      yes      yes       no    0 22 * * *          2026-12-02 22:00  -
timeout-sweep            repeating  yes      no        no    * * * * *           2026-12-01 23:31  -

schedules are CRON_TZ=Asia/Tokyo; BODY no = not implemented in this build (run refuses it)
`, "", "list")
	if err := os.WriteFile(cfgPath, []byte(`{"jobs": {"eod": {"schedule": "30 23 * * *"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c.expect(1, "", `zcgw jobs: jobs.json: job "eod": field "schedule": "30 23 * * *" must start with "CRON_TZ=Asia/Tokyo " (business time is JST)`+"\n", "list")
}

func TestRunRefusalsForceHistoryAndShow(t *testing.T) {
	c := newCLI(t, builtins(t))
	c.expect(0, "run 1: jobs-ledger-prune 2026-11-30 daily COMPLETED in 0 ms (ran 1 of 1 steps, 0 done earlier)\n", "",
		"run", "jobs-ledger-prune", "--date", "2026-11-30")
	c.expect(0, "jobs-ledger-prune 2026-11-30 (daily) was already completed at 2026-12-01T14:30:00Z as run 1: nothing to do (zcgw jobs show 1; run it again with --force --reason)\n", "",
		"run", "--date", "2026-11-30", "jobs-ledger-prune")
	c.expect(2, "", "zcgw jobs run: --force needs --reason\n", "run", "jobs-ledger-prune", "--date", "2026-11-30", "--force")
	c.expect(1, "", "zcgw jobs: NOT_FOUND: job eod is configured but no body is registered for it in this build: job has no registered body\n",
		"run", "eod")
	c.expect(1, "", `zcgw jobs: NOT_FOUND: no job named "eodd"; configured jobs: bulk-window, case-sla-escalation, deferred-window, dns-intraday-cutoff, dns-kick, dns-settle, eod, finality-audit, idempotency-ttl-cleanup, jobs-ledger-prune, outbox-drain, overnight-receive, overnight-send, timeout-sweep: unknown job`+"\n",
		"run", "eodd")
	c.clk.Advance(90 * time.Second)
	c.expect(0, "run 2: jobs-ledger-prune 2026-11-30 daily/rerun-1 COMPLETED in 0 ms (ran 1 of 1 steps, 0 done earlier)\n", "",
		"run", "jobs-ledger-prune", "--date", "2026-11-30", "--force", "--reason", "ledger restored from backup", "--by", "alice")
	c.expect(0, `RUN  JOB                BUSINESS DATE  RUN KEY        STATUS     ATTEMPTS  TRIGGER  STARTED (UTC)         DURATION
2    jobs-ledger-prune  2026-11-30     daily/rerun-1  COMPLETED  1         cli      2026-12-01T14:31:30Z  0 ms
1    jobs-ledger-prune  2026-11-30     daily          COMPLETED  1         cli      2026-12-01T14:30:00Z  0 ms
`, "", "history")
	c.expect(0, `RUN  JOB                BUSINESS DATE  RUN KEY        STATUS     ATTEMPTS  TRIGGER  STARTED (UTC)         DURATION
2    jobs-ledger-prune  2026-11-30     daily/rerun-1  COMPLETED  1         cli      2026-12-01T14:31:30Z  0 ms
1 older run not shown; next page: zcgw jobs history jobs-ledger-prune --limit 1 --before 2
`, "", "history", "jobs-ledger-prune", "--limit", "1")
	c.expect(0, `RUN  JOB                BUSINESS DATE  RUN KEY  STATUS     ATTEMPTS  TRIGGER  STARTED (UTC)         DURATION
1    jobs-ledger-prune  2026-11-30     daily    COMPLETED  1         cli      2026-12-01T14:30:00Z  0 ms
`, "", "history", "jobs-ledger-prune", "--limit", "1", "--before", "2")
	c.expect(0, "no runs recorded\n", "", "history", "eod")
	c.expect(0, `run            2
job            jobs-ledger-prune
business date  2026-11-30
run key        daily/rerun-1
status         COMPLETED
attempts       1
trigger        cli
first started  2026-12-01T14:31:30Z
started        2026-12-01T14:31:30Z
ended          2026-12-01T14:31:30Z
duration       0 ms
summary        ran 1 of 1 steps, 0 done earlier
error          -
holder         ops-1 (token 3)
forced by      alice at 2026-12-01T14:31:30Z
force reason   ledger restored from backup
supersedes     run 1

SEQ  STEP                  STATUS     ATTEMPTS  DURATION  SUMMARY / ERROR
1    prune-repeating-runs  COMPLETED  1         0 ms      deleted 0 repeating-job runs dated before 2026-10-31
`, "", "show", "2")
	c.expect(1, "", "zcgw jobs: no run 99\n", "show", "99")
	c.expect(2, "", "zcgw jobs show: RUN_ID \"x\" is not a positive number\n", "show", "x")

	code, out, _ := c.run("show", "--json", "2")
	var v scheduler.RunView
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 {
		t.Fatalf("show --json: %d %q %v", code, out, err)
	}
	if v.RunID != 2 || v.ForcedBy != "alice" || v.ForceReason != "ledger restored from backup" || v.SupersedesRunID != 1 ||
		v.ForcedAt != "2026-12-01T14:31:30.000000000Z" || len(v.Steps) != 1 || v.Steps[0].Status != "COMPLETED" {
		t.Fatalf("show --json = %+v", v)
	}
}

func TestFailedRunShowsStepAndRestartHint(t *testing.T) {
	reg := builtins(t)
	fail := true
	if err := reg.Register(scheduler.Job{Name: "eod", Steps: []scheduler.Step{
		{Name: "close-date", Run: func(ctx context.Context, sc scheduler.StepContext) (string, error) { return "closed", nil }},
		{Name: "reconcile", Run: func(ctx context.Context, sc scheduler.StepContext) (string, error) {
			if fail {
				return "", errors.New("core 002 unreachable")
			}
			return "3 banks agree", nil
		}},
	}}); err != nil {
		t.Fatal(err)
	}
	c := newCLI(t, reg)
	c.expect(1, "run 1: eod 2026-12-01 daily FAILED in 0 ms (ran 1 of 2 steps, 0 done earlier)\n",
		"zcgw jobs: eod 2026-12-01 run 1: step reconcile: core 002 unreachable\nrestart it with: zcgw jobs run eod --date 2026-12-01\n",
		"run", "eod")
	c.expect(0, `run            1
job            eod
business date  2026-12-01
run key        daily
status         FAILED
attempts       1
trigger        cli
first started  2026-12-01T14:30:00Z
started        2026-12-01T14:30:00Z
ended          2026-12-01T14:30:00Z
duration       0 ms
summary        -
error          step reconcile: core 002 unreachable
holder         ops-1 (token 1)

SEQ  STEP        STATUS     ATTEMPTS  DURATION  SUMMARY / ERROR
1    close-date  COMPLETED  1         0 ms      closed
2    reconcile   FAILED     1         0 ms      core 002 unreachable
`, "", "show", "1")
	fail = false
	c.clk.Advance(time.Minute)
	c.expect(0, "run 1: eod 2026-12-01 daily COMPLETED in 0 ms (ran 1 of 2 steps, 1 done earlier)\n", "", "run", "eod", "--date", "2026-12-01")
}

func TestUsageErrors(t *testing.T) {
	c := newCLI(t, nil)
	c.expect(2, "", Usage, "run")
	c.expect(2, "", "zcgw jobs: unknown command \"rn\"\n\n"+Usage, "rn")
	c.expect(2, "", Usage)
}

// On a data folder a node serves, a run goes through that node; when the
// node cannot be reached (no address yet, or no way to authorize), the run
// is refused naming the node, and nothing runs here.
func TestRunOnServedFolderWithoutReachableNodeRefuses(t *testing.T) {
	c := newCLI(t, builtins(t))
	lock, err := procid.Acquire(c.env.DataDir, procid.Info{PID: 4242, Node: "node-abc", Epoch: "e1"})
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	code, out, errs := c.run("run", "jobs-ledger-prune", "--date", "2026-11-30")
	want := "zcgw jobs run: the data folder " + c.env.DataDir + " is served by node node-abc (pid 4242, addr ); a job runs there only through that node"
	if code != 1 || out != "" || !strings.HasPrefix(errs, want) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	lock.Close()
	c.expect(0, "no runs recorded\n", "", "history")
}
