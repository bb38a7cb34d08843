package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/ledger"
)

// The cron trigger has one entry per enabled job with a body, fires at the
// JST schedule, runs through Runner.Run, and its SkipIfStillRunning chain
// drops a trigger while the previous one still runs.
func TestCronEntriesAndSkipIfStillRunning(t *testing.T) {
	p := newProbe()
	e := newEnv(t, p.job("eod"), p.job("finality-audit")) // finality-audit is disabled by default
	logs := &bytes.Buffer{}
	lg := slog.New(slog.NewJSONHandler(&syncWriter{w: logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r, err := NewRunner(Options{Ledger: e.led, Registry: e.reg, Config: e.cfg, Clock: e.clk, Logger: lg, Holder: "cron-test"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.NewCron(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	entries := c.Entries()
	if len(entries) != 1 {
		t.Fatalf("entries = %d, want only eod", len(entries))
	}
	from := time.Date(2026, 12, 1, 14, 29, 0, 0, time.UTC) // 23:29 JST
	if got := entries[0].Schedule.Next(from); !got.Equal(time.Date(2026, 12, 1, 14, 30, 0, 0, time.UTC)) {
		t.Fatalf("next fire = %v, want 23:30 JST", got)
	}
	p.blockCh, p.enteredC = make(chan struct{}), make(chan struct{}, 1)
	done := make(chan struct{})
	go func() { entries[0].WrappedJob.Run(); close(done) }()
	<-p.enteredC
	entries[0].WrappedJob.Run() // skipped by the chain while the first runs
	close(p.blockCh)
	<-done
	runs, _ := e.led.History(context.Background(), ledger.Filter{})
	if len(runs) != 1 || runs[0].Trigger != "cron" || runs[0].Status != ledger.Completed || runs[0].BusinessDate != "2026-12-01" {
		t.Fatalf("runs = %+v", runs)
	}
	var msgs []string
	for _, ev := range logEvents(t, logs) {
		msgs = append(msgs, ev["msg"].(string))
	}
	all := strings.Join(msgs, ",")
	if !strings.Contains(all, "cron.skip") || strings.Contains(all, "job.skip") || p.calls["s1@2026-12-01"] != 1 {
		t.Fatalf("events %s, calls %v", all, p.calls)
	}
}

func post(t *testing.T, h http.Handler, path, body string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	var m map[string]any
	if rec.Code != http.StatusMethodNotAllowed {
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
			t.Fatalf("%s: body %q: %v", path, rec.Body.String(), err)
		}
	}
	return rec.Code, m
}

func TestHTTPTriggerRunsTheSameCode(t *testing.T) {
	ctx := context.Background()
	p := newProbe()
	p.fail["s4"] = 1
	e := newEnv(t, p.job("eod"))
	if err := RegisterBuiltins(e.reg); err != nil {
		t.Fatal(err)
	}
	// an old repeating run for the prune job to delete
	lease, _ := e.led.AcquireLease(ctx, "timeout-sweep", "seed", time.Minute)
	old, _, err := e.led.BeginRun(ctx, lease, ledger.Begin{Job: "timeout-sweep", BusinessDate: "2026-10-01", Slot: "10:00", Trigger: "cron"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.led.FailRun(ctx, lease, old.RunID, 1, "sweep", "x", "step sweep: x"); err != nil {
		t.Fatal(err)
	}
	h := e.r.Handler()

	code, body := post(t, h, "/internal/cron/jobs-ledger-prune", "")
	steps, _ := body["steps"].([]any)
	if code != 200 || body["status"] != "COMPLETED" || body["run_key"] != "daily" || body["business_date"] != "2026-12-01" ||
		body["trigger"] != "http" || len(steps) != 1 ||
		steps[0].(map[string]any)["summary"] != "deleted 1 repeating-job runs dated before 2026-11-01" {
		t.Fatalf("prune: %d %v", code, body)
	}
	if _, err := e.led.RunByID(ctx, old.RunID); err == nil {
		t.Fatal("old repeating run survived the prune")
	}
	code, body = post(t, h, "/internal/cron/jobs-ledger-prune", "{}")
	if code != 409 || body["reason_code"] != "ALREADY_PROCESSED" {
		t.Fatalf("again: %d %v", code, body)
	}
	code, body = post(t, h, "/internal/cron/jobs-ledger-prune", `{"force": true}`)
	if code != 400 || body["reason_code"] != "MISSING_FIELD" {
		t.Fatalf("force without reason: %d %v", code, body)
	}
	code, body = post(t, h, "/internal/cron/jobs-ledger-prune", `{"force": true, "reason": "ledger restored", "requested_by": "ops"}`)
	if code != 200 || body["run_key"] != "daily/rerun-1" || body["forced_by"] != "ops" || body["force_reason"] != "ledger restored" {
		t.Fatalf("forced: %d %v", code, body)
	}
	code, body = post(t, h, "/internal/cron/eod", `{"business_date": "2026-11-30"}`)
	if code != 500 || body["status"] != "FAILED" || !strings.Contains(body["error"].(string), "step s4: crash in s4") || body["business_date"] != "2026-11-30" {
		t.Fatalf("failing eod: %d %v", code, body)
	}
	code, body = post(t, h, "/internal/cron/eod", `{"business_date": "2026-11-30"}`)
	if code != 200 || body["attempts"] != 2.0 || body["skipped_steps"] != 3.0 || body["executed_steps"] != 1.0 {
		t.Fatalf("resumed eod: %d %v", code, body)
	}
	for _, c := range []struct {
		path, body string
		code       int
		reason     string
	}{
		{"/internal/cron/nope", "", 404, "NOT_FOUND"},
		{"/internal/cron/dns-kick", "", 404, "NOT_FOUND"}, // configured, no body yet
		{"/internal/cron/eod", `{"business_date": "2026/11/30"}`, 400, "INVALID_REQUEST"},
		{"/internal/cron/eod", `{"bogus": 1}`, 400, "INVALID_REQUEST"},
		{"/internal/cron/eod", `{"force": tru`, 400, "INVALID_REQUEST"},
	} {
		code, body = post(t, h, c.path, c.body)
		if code != c.code || body["reason_code"] != c.reason {
			t.Errorf("%s %s: %d %v", c.path, c.body, code, body)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/internal/cron/eod", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("GET = %d", rec.Code)
	}
}

func TestTerminalWriterRefusesPipesAndFiles(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if TerminalWriter(w) != nil {
		t.Fatal("a pipe was taken for a terminal")
	}
	if null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err == nil {
		defer null.Close()
		if TerminalWriter(null) != nil {
			t.Fatal("/dev/null was taken for a terminal")
		}
	}
	if TerminalWriter(f) != nil {
		t.Fatal("a regular file was taken for a terminal")
	}
	if TerminalWriter(nil) != nil {
		t.Fatal("nil file")
	}
}

// Example: register a job body and run it for a business date.
func ExampleRunner_Run() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "jobs-example")
	defer os.RemoveAll(dir)
	clk := clock.NewManual(time.Date(2026, 12, 1, 23, 30, 0, 0, clock.JST))
	led, _ := ledger.Open(ctx, ledger.Path(dir), clk)
	defer led.Close()
	reg := NewRegistry()
	_ = reg.Register(Job{Name: "eod", Steps: []Step{
		{Name: "close-date", RunTx: func(ctx context.Context, tx *store.Tx, sc StepContext) (string, error) {
			return "closed " + sc.BusinessDate, nil // write coordinator rows with tx here
		}},
		{Name: "workbook", Run: func(ctx context.Context, sc StepContext) (string, error) {
			return "wrote recon-" + sc.BusinessDate + ".xlsx", nil // idempotent: same name, same content
		}},
	}})
	r, _ := NewRunner(Options{Ledger: led, Registry: reg, Config: DefaultConfig(), Clock: clk, Holder: "example"})
	res, err := r.Run(ctx, Request{Job: "eod", Trigger: "cli"})
	fmt.Println(res.Run.RunID, res.Run.Job, res.Run.BusinessDate, res.Run.RunKey, res.Run.Status, err)
	for _, s := range res.Steps {
		fmt.Println(s.Seq, s.Name, s.Status, s.Summary)
	}
	_, err = r.Run(ctx, Request{Job: "eod"})
	fmt.Println(err)
	// Output:
	// 1 eod 2026-12-01 daily COMPLETED <nil>
	// 1 close-date COMPLETED closed 2026-12-01
	// 2 workbook COMPLETED wrote recon-2026-12-01.xlsx
	// ALREADY_PROCESSED: job eod for 2026-12-01 (daily) already COMPLETED at 2026-12-01T14:30:00Z as run 1; re-run with force and a reason: job instance already completed
}

// Serve catches up before it starts the cron trigger and returns when its
// context ends; a run interrupted by that shutdown stops at the next step
// boundary (FAILED, completed steps kept) and the next start resumes it.
func TestServeCatchesUpAndShutdownIsResumable(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := newProbe()
	e := newEnv(t, p.job("eod"))
	if _, err := e.r.Run(ctx, Request{Job: "eod"}); err != nil {
		t.Fatal(err)
	}
	e.clk.Set(time.Date(2026, 12, 3, 0, 10, 0, 0, clock.JST)) // 12-02 23:30 was missed
	p.blockCh, p.enteredC = make(chan struct{}), make(chan struct{}, 1)
	served := make(chan error, 1)
	go func() { served <- e.r.Serve(ctx) }()
	<-p.enteredC // catch-up of 12-02 is inside s2
	cancel()     // shutdown
	close(p.blockCh)
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	runs, _ := e.led.History(context.Background(), ledger.Filter{Job: "eod"})
	if len(runs) != 2 || runs[0].BusinessDate != "2026-12-02" || runs[0].Trigger != "catchup" || runs[0].Status != ledger.Failed ||
		runs[0].Error != "before step s3: context canceled" {
		t.Fatalf("runs = %+v", runs)
	}
	steps, _ := e.led.Steps(context.Background(), runs[0].RunID)
	if len(steps) != 3 || steps[1].Status != ledger.Completed || steps[2].Status != ledger.Failed {
		t.Fatalf("steps = %+v", steps)
	}
	p.blockCh = nil
	res, err := e.r.CatchUp(context.Background())
	if err != nil || len(res) != 1 || res[0].Run.RunID != runs[0].RunID || res[0].Skipped != 2 || res[0].Run.Status != ledger.Completed {
		t.Fatalf("resume = %+v, %v", res, err)
	}
	if got := keys(p.done); got != "s2@2026-12-01=1 s2@2026-12-02=1 s4@2026-12-01=1 s4@2026-12-02=1" {
		t.Fatalf("plain steps done %s", got)
	}
}

func TestRegistryAndRunnerRejectBadBodies(t *testing.T) {
	ok := func(context.Context, StepContext) (string, error) { return "", nil }
	okTx := func(context.Context, *store.Tx, StepContext) (string, error) { return "", nil }
	cases := []struct {
		name string
		job  Job
		want string
	}{
		{"no name", Job{Steps: []Step{{Name: "a", Run: ok}}}, "scheduler: register: job without a name"},
		{"no steps", Job{Name: "eod"}, "scheduler: register: job eod has no steps"},
		{"dup step", Job{Name: "eod", Steps: []Step{{Name: "a", Run: ok}, {Name: "a", Run: ok}}}, `scheduler: register: job eod step 2: empty or duplicate name "a"`},
		{"both bodies", Job{Name: "eod", Steps: []Step{{Name: "a", Run: ok, RunTx: okTx}}}, "scheduler: register: job eod step a: set exactly one of Run and RunTx"},
		{"no body", Job{Name: "eod", Steps: []Step{{Name: "a"}}}, "scheduler: register: job eod step a: set exactly one of Run and RunTx"},
	}
	for _, c := range cases {
		if err := NewRegistry().Register(c.job); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	reg := NewRegistry()
	if err := reg.Register(Job{Name: "eod", Steps: []Step{{Name: "a", Run: ok}}}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(Job{Name: "eod", Steps: []Step{{Name: "a", Run: ok}}}); err == nil {
		t.Fatal("duplicate job registered")
	}
	if err := reg.Register(Job{Name: "not-in-config", Steps: []Step{{Name: "a", Run: ok}}}); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	_, err := NewRunner(Options{Ledger: e.led, Registry: reg, Config: DefaultConfig()})
	if !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("runner with an unconfigured body: %v", err)
	}
}
