package scheduler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/ledger"
)

// Two runners with separate store.DB handles on one file, four goroutines
// each, race to run eod for one business date: it runs exactly once. The
// winner is held inside step s2 until all seven others were refused, so the
// attempts really overlap.
func TestTwoInstancesRunDailyJobOnce(t *testing.T) {
	p := newProbe()
	p.blockCh, p.enteredC = make(chan struct{}), make(chan struct{}, 1)
	e := newEnv(t, p.job("eod"))
	other := e.runner(t, e.openLedger(t), "runner-b", nil)
	runners := []*Runner{e.r, other}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var completed []Result
	refusedC := make(chan error, 8)
	start := make(chan struct{})
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := runners[i%2].Run(context.Background(), Request{Job: "eod", BusinessDate: "2026-12-01", Trigger: "test"})
			if err != nil {
				refusedC <- err
				return
			}
			mu.Lock()
			completed = append(completed, res)
			mu.Unlock()
		}()
	}
	close(start)
	<-p.enteredC
	for range 7 {
		if err := <-refusedC; !errors.Is(err, ledger.ErrLeaseHeld) || domainerr.Code(err) != "CONCURRENCY_CONFLICT" {
			t.Errorf("loser: %v", err)
		}
	}
	close(p.blockCh)
	wg.Wait()
	if len(completed) != 1 || len(refusedC) != 0 {
		t.Fatalf("completed %d, extra refusals %d; want 1 and 0", len(completed), len(refusedC))
	}
	if got := keys(p.calls); got != "s1@2026-12-01=1 s2@2026-12-01=1 s3@2026-12-01=1 s4@2026-12-01=1" {
		t.Fatalf("step bodies ran: %s", got)
	}
	if got := keys(e.effects(t)); got != "s1@2026-12-01=1 s3@2026-12-01=1" {
		t.Fatalf("effects: %s", got)
	}
	runs, _ := e.led.History(context.Background(), ledger.Filter{Job: "eod"})
	if len(runs) != 1 || runs[0].Status != ledger.Completed || runs[0].Attempts != 1 || runs[0].Summary != "ran 4 of 4 steps, 0 done earlier" {
		t.Fatalf("runs = %+v", runs)
	}
	// afterwards, either instance is refused as already completed
	for _, r := range runners {
		if _, err := r.Run(context.Background(), Request{Job: "eod", BusinessDate: "2026-12-01"}); !errors.Is(err, ledger.ErrAlreadyCompleted) {
			t.Fatalf("after completion: %v", err)
		}
	}
}

func TestCompletedRunRefusedAndForcedRerunRecorded(t *testing.T) {
	ctx := context.Background()
	p := newProbe()
	e := newEnv(t, p.job("eod"))
	first, err := e.r.Run(ctx, Request{Job: "eod"})
	if err != nil || first.Run.BusinessDate != "2026-12-01" || first.Run.RunKey != "daily" || first.Executed != 4 {
		t.Fatalf("first run = %+v, %v", first, err)
	}
	_, err = e.r.Run(ctx, Request{Job: "eod", BusinessDate: "2026-12-01"})
	if !errors.Is(err, ledger.ErrAlreadyCompleted) || domainerr.Code(err) != "ALREADY_PROCESSED" {
		t.Fatalf("second run: %v", err)
	}
	de, _ := domainerr.As(err)
	if de.HTTPStatus() != 409 || de.Details["run_id"] != first.Run.RunID {
		t.Fatalf("refusal = %+v", de)
	}
	if _, err := e.r.Run(ctx, Request{Job: "eod", Force: true, By: "alice"}); domainerr.Code(err) != "MISSING_FIELD" {
		t.Fatalf("force without reason: %v", err)
	}
	e.clk.Advance(10 * time.Minute)
	re, err := e.r.Run(ctx, Request{Job: "eod", Force: true, By: "alice", Reason: "bank 002 resent its file", Trigger: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	r := re.Run
	if r.RunKey != "daily/rerun-1" || r.ForcedBy != "alice" || r.ForceReason != "bank 002 resent its file" ||
		!r.ForcedAt.Equal(eodTime.Add(10*time.Minute)) || r.SupersedesRunID != first.Run.RunID || r.Trigger != "cli" || re.Executed != 4 {
		t.Fatalf("forced run = %+v", re)
	}
	if got := keys(p.calls); got != "s1@2026-12-01=2 s2@2026-12-01=2 s3@2026-12-01=2 s4@2026-12-01=2" {
		t.Fatalf("bodies: %s", got)
	}
	if _, err := e.r.Run(ctx, Request{Job: "eod"}); !errors.Is(err, ledger.ErrAlreadyCompleted) || !strings.Contains(err.Error(), "daily/rerun-1") {
		t.Fatalf("after the forced run: %v", err)
	}
}

// A crash (error or panic) at every step, then a restart: the run
// completes as the same run_id, completed steps are skipped, and every
// step's effect is applied exactly once.
func TestCrashAtEveryStepThenRestart(t *testing.T) {
	ctx := context.Background()
	for _, panicky := range []bool{false, true} {
		for crashAt := 1; crashAt <= 4; crashAt++ {
			p := newProbe()
			p.panicky = panicky
			step := []string{"s1", "s2", "s3", "s4"}[crashAt-1]
			p.fail[step] = 1
			e := newEnv(t, p.job("eod"))
			res, err := e.r.Run(ctx, Request{Job: "eod"})
			if err == nil || res.Run.Status != ledger.Failed || !strings.Contains(res.Run.Error, "crash in "+step) {
				t.Fatalf("panic=%v crash at %s: run = %+v, %v", panicky, step, res.Run, err)
			}
			for i, s := range res.Steps {
				want := ledger.Completed
				if i+1 == crashAt {
					want = ledger.Failed
				}
				if s.Status != want || i+1 > crashAt {
					t.Fatalf("panic=%v crash at %s: steps after crash = %+v", panicky, step, res.Steps)
				}
			}
			e.clk.Advance(time.Minute)
			again, err := e.r.Run(ctx, Request{Job: "eod"})
			if err != nil {
				t.Fatalf("panic=%v crash at %s: restart: %v", panicky, step, err)
			}
			if again.Run.RunID != res.Run.RunID || again.Run.Attempts != 2 || !again.Resumed ||
				again.Skipped != crashAt-1 || again.Executed != 5-crashAt || again.Run.Status != ledger.Completed {
				t.Fatalf("panic=%v crash at %s: restart = %+v", panicky, step, again)
			}
			if got := keys(e.effects(t)); got != "s1@2026-12-01=1 s3@2026-12-01=1" {
				t.Fatalf("panic=%v crash at %s: effects %s", panicky, step, got)
			}
			if got := keys(p.done); got != "s2@2026-12-01=1 s4@2026-12-01=1" {
				t.Fatalf("panic=%v crash at %s: plain steps done %s", panicky, step, got)
			}
			for _, s := range []string{"s1", "s2", "s3", "s4"} {
				want := 1
				if s == step {
					want = 2
				}
				if p.calls[s+"@2026-12-01"] != want {
					t.Fatalf("panic=%v crash at %s: %s called %d times, want %d", panicky, step, s, p.calls[s+"@2026-12-01"], want)
				}
			}
			for _, s := range again.Steps {
				wantAttempts := 1
				if s.Name == step {
					wantAttempts = 2
				}
				if s.Status != ledger.Completed || s.Attempts != wantAttempts || s.Summary == "" {
					t.Fatalf("panic=%v crash at %s: step row %+v", panicky, step, s)
				}
			}
		}
	}
}

// A runner that dies mid-run (lease not released, run left STARTED) is
// replaced after its lease expires: the new holder resumes after the last
// completed step, and the dead holder's late writes are fenced.
func TestOrphanedRunResumedAndStaleHolderFenced(t *testing.T) {
	ctx := context.Background()
	p := newProbe()
	e := newEnv(t, p.job("eod"))
	dead, err := e.led.AcquireLease(ctx, "eod", "dead", e.cfg.LeaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	run, _, err := e.led.BeginRun(ctx, dead, ledger.Begin{Job: "eod", BusinessDate: "2026-12-01", Slot: ledger.DailySlot, Trigger: "cron"})
	if err != nil {
		t.Fatal(err)
	}
	sc := StepContext{Job: "eod", BusinessDate: "2026-12-01", RunID: run.RunID, Lease: dead, Ledger: e.led, Clock: e.clk}
	var sum string
	if err := RunTxStep(ctx, sc, "s1", 1, p.job("eod").Steps[0].RunTx, &sum); err != nil {
		t.Fatal(err)
	}
	if err := e.led.StartStep(ctx, dead, run.RunID, 2, "s2", 0); err != nil {
		t.Fatal(err)
	}
	// the process dies here
	if _, err := e.r.Run(ctx, Request{Job: "eod"}); !errors.Is(err, ledger.ErrLeaseHeld) {
		t.Fatalf("run while the dead lease is live: %v", err)
	}
	e.clk.Advance(e.cfg.LeaseTTL + time.Second)
	res, err := e.r.Run(ctx, Request{Job: "eod"})
	if err != nil || res.Run.RunID != run.RunID || !res.Resumed || res.Skipped != 1 || res.Executed != 3 || res.Run.Token != 2 {
		t.Fatalf("resume = %+v, %v", res, err)
	}
	if got := keys(p.calls); got != "s1@2026-12-01=1 s2@2026-12-01=1 s3@2026-12-01=1 s4@2026-12-01=1" {
		t.Fatalf("bodies: %s", got)
	}
	if err := RunTxStep(ctx, sc, "s3", 3, p.job("eod").Steps[2].RunTx, &sum); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("stale TxStep: %v", err)
	}
	if err := e.led.FailRun(ctx, dead, run.RunID, 2, "s2", "late", "step s2: late"); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("stale FailRun: %v", err)
	}
	if got := keys(e.effects(t)); got != "s1@2026-12-01=1 s3@2026-12-01=1" {
		t.Fatalf("effects: %s", got)
	}
	final, _ := e.led.RunByID(ctx, run.RunID)
	if final.Status != ledger.Completed || final.Attempts != 2 || final.Holder != "runner-a" {
		t.Fatalf("final = %+v", final)
	}
}

// Catch-up after two missed days runs the missed dates in date order,
// interleaving jobs by their due time.
func TestCatchUpTwoMissedDaysInDateOrder(t *testing.T) {
	ctx := context.Background()
	p := newProbe()
	e := newEnv(t, p.job("eod"), p.job("dns-kick"))
	e.clk.Set(time.Date(2026, 12, 1, 23, 45, 0, 0, e.clk.Now().Location()))
	for _, j := range []string{"eod", "dns-kick"} {
		if _, err := e.r.Run(ctx, Request{Job: j, BusinessDate: "2026-12-01"}); err != nil {
			t.Fatal(err)
		}
	}
	p.order = nil
	// down until 2026-12-04 10:00 JST: eod and dns-kick of 12-02 and 12-03 are missed
	e.clk.Set(time.Date(2026, 12, 4, 10, 0, 0, 0, eodTime.Location()))
	plan, pending, err := e.r.CatchUpPlan(ctx)
	if err != nil || len(pending) != 0 || len(plan) != 4 {
		t.Fatalf("plan = %+v, pending %v, %v", plan, pending, err)
	}
	results, err := e.r.CatchUp(ctx)
	if err != nil || len(results) != 4 {
		t.Fatalf("catch-up = %d results, %v", len(results), err)
	}
	want := "dns-kick@2026-12-02 eod@2026-12-02 dns-kick@2026-12-03 eod@2026-12-03"
	if got := strings.Join(p.order, " "); got != want {
		t.Fatalf("order = %s, want %s", got, want)
	}
	for _, r := range results {
		if r.Run.Trigger != "catchup" || r.Run.Status != ledger.Completed {
			t.Fatalf("caught-up run = %+v", r.Run)
		}
	}
	if again, err := e.r.CatchUp(ctx); err != nil || len(again) != 0 {
		t.Fatalf("second catch-up = %d, %v", len(again), err)
	}
}

func TestCatchUpBoundedAndStopsAtFailure(t *testing.T) {
	ctx := context.Background()
	p := newProbe()
	e := newEnv(t, p.job("eod"))
	if _, err := e.r.Run(ctx, Request{Job: "eod"}); err != nil {
		t.Fatal(err)
	}
	e.clk.Set(time.Date(2026, 12, 5, 23, 59, 0, 0, eodTime.Location())) // 12-02..12-05 missed
	e.r.cfg.CatchUpMaxDays = 3
	plan, pending, err := e.r.CatchUpPlan(ctx)
	if err != nil || len(plan) != 3 || plan[0].BusinessDate != "2026-12-02" || plan[2].BusinessDate != "2026-12-04" || pending["eod"] != 1 {
		t.Fatalf("plan = %+v, pending %v, %v", plan, pending, err)
	}
	p.fail["s3"] = 1 // 12-02 fails: 12-03 must not run
	p.order = nil
	if _, err := e.r.CatchUp(ctx); err == nil || !strings.Contains(err.Error(), "eod 2026-12-02") {
		t.Fatalf("catch-up with a failure: %v", err)
	}
	if got := strings.Join(p.order, " "); got != "eod@2026-12-02" {
		t.Fatalf("ran %s", got)
	}
	res, err := e.r.CatchUp(ctx) // resumes 12-02 at s3, then 12-03 and 12-04
	if err != nil || len(res) != 3 || res[0].Skipped != 2 || res[2].Run.BusinessDate != "2026-12-04" {
		t.Fatalf("second catch-up = %+v, %v", res, err)
	}
	if got := keys(e.effects(t)); got != "s1@2026-12-01=1 s1@2026-12-02=1 s1@2026-12-03=1 s1@2026-12-04=1 s3@2026-12-01=1 s3@2026-12-02=1 s3@2026-12-03=1 s3@2026-12-04=1" {
		t.Fatalf("effects %s", got)
	}
}

// Repeating jobs are keyed by their JST trigger minute. cron runs a slot
// once; a manual run (CLI, HTTP) right after cron ran the slot is not
// refused: it runs the slot's next instance, recorded as such.
func TestRepeatingJobKeyedBySlot(t *testing.T) {
	ctx := context.Background()
	p := newProbe()
	e := newEnv(t, p.job("timeout-sweep"))
	e.clk.Set(time.Date(2026, 12, 2, 10, 21, 30, 0, eodTime.Location()))
	a, err := e.r.Run(ctx, Request{Job: "timeout-sweep", Trigger: "cron"})
	if err != nil || a.Run.RunKey != "10:21" || a.Run.BusinessDate != "2026-12-02" {
		t.Fatalf("first = %+v, %v", a.Run, err)
	}
	if res, err := e.r.Run(ctx, Request{Job: "timeout-sweep", Trigger: "cron"}); !errors.Is(err, ledger.ErrAlreadyCompleted) ||
		!res.AlreadyCompleted || res.Run.RunID != a.Run.RunID {
		t.Fatalf("cron again in the same minute: %+v, %v", res, err)
	}
	for i, trigger := range []string{"cli", "http"} {
		m, err := e.r.Run(ctx, Request{Job: "timeout-sweep", Trigger: trigger, By: "alice"})
		want := fmt.Sprintf("10:21/rerun-%d", i+1)
		if err != nil || m.Run.RunKey != want || m.Run.Status != ledger.Completed || m.Executed != 4 ||
			m.Run.ForcedBy != "alice" || m.Run.ForceReason != "manual "+trigger+" run; slot 10:21 had already run" {
			t.Fatalf("manual %s run after cron = %+v, %v", trigger, m.Run, err)
		}
	}
	// A slot named explicitly is that instance: completed, it does not run.
	if res, err := e.r.Run(ctx, Request{Job: "timeout-sweep", Trigger: "cli", Slot: "10:21"}); !errors.Is(err, ledger.ErrAlreadyCompleted) ||
		!res.AlreadyCompleted || res.Run.RunKey != "10:21/rerun-2" {
		t.Fatalf("manual run of the named slot 10:21: %+v, %v", res.Run, err)
	}
	if got := keys(e.effects(t)); got != "s1@2026-12-02=3 s3@2026-12-02=3" {
		t.Fatalf("effects %s: want the step run by cron and by both manual runs", got)
	}
	e.clk.Advance(time.Minute)
	b, err := e.r.Run(ctx, Request{Job: "timeout-sweep", Trigger: "cron"})
	if err != nil || b.Run.RunKey != "10:22" {
		t.Fatalf("next minute = %+v, %v", b.Run, err)
	}
}

func TestRunRefusesUnknownAndUnwiredJobs(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		req   Request
		cause error
		code  string
	}{
		{Request{Job: "eodd"}, ErrUnknownJob, "NOT_FOUND"},
		{Request{Job: "eod"}, ErrNoBody, "NOT_FOUND"},
	}
	for _, c := range cases {
		_, err := e.r.Run(context.Background(), c.req)
		if !errors.Is(err, c.cause) || domainerr.Code(err) != c.code {
			t.Errorf("%s: %v", c.req.Job, err)
		}
	}
	p := newProbe()
	e2 := newEnv(t, p.job("eod"))
	for _, d := range []string{"2026-13-01", "20261201", "2026-02-30"} {
		if _, err := e2.r.Run(context.Background(), Request{Job: "eod", BusinessDate: d}); !errors.Is(err, ErrBadInstance) || domainerr.Code(err) != "INVALID_REQUEST" {
			t.Errorf("date %s: %v", d, err)
		}
	}
	if len(p.calls) != 0 {
		t.Fatalf("bodies ran: %v", p.calls)
	}
}

// Every run logs job.start and job.end with the fields operators search by.
func TestRunLogsStartAndEnd(t *testing.T) {
	p := newProbe()
	p.fail["s2"] = 1
	e := newEnv(t, p.job("eod"))
	e.clk.Set(eodTime)
	_, _ = e.r.Run(context.Background(), Request{Job: "eod", Trigger: "cron"})
	var got []string
	for _, ev := range logEvents(t, e.logs) {
		switch ev["msg"] {
		case "job.start":
			if ev["job"] != "eod" || ev["business_date"] != "2026-12-01" || ev["run_id"] != 1.0 || ev["trigger"] != "cron" || ev["attempt"] != 1.0 {
				t.Fatalf("job.start = %v", ev)
			}
		case "job.end":
			if ev["status"] != "FAILED" || ev["run_id"] != 1.0 || ev["duration_ms"] != 0.0 || ev["failed_step"] != "s2" || ev["level"] != "ERROR" {
				t.Fatalf("job.end = %v", ev)
			}
		}
		got = append(got, ev["msg"].(string))
	}
	if strings.Join(got, ",") != "job.start,job.step,job.step,job.end" {
		t.Fatalf("events = %v", got)
	}
}

func TestProgressBarOutput(t *testing.T) {
	p := newProbe()
	e := newEnv(t, p.job("eod"))
	var buf bytes.Buffer
	e.r.progress = &buf
	if _, err := e.r.Run(context.Background(), Request{Job: "eod"}); err != nil {
		t.Fatal(err)
	}
	want := "\r\x1b[2Keod 2026-12-01 daily [--------------------] 0/4 " +
		"\r\x1b[2Keod 2026-12-01 daily [#####---------------] 1/4 s1" +
		"\r\x1b[2Keod 2026-12-01 daily [##########----------] 2/4 s2" +
		"\r\x1b[2Keod 2026-12-01 daily [###############-----] 3/4 s3" +
		"\r\x1b[2Keod 2026-12-01 daily [####################] 4/4 s4\n"
	if buf.String() != want {
		t.Fatalf("progress = %q\nwant       %q", buf.String(), want)
	}
}

// When another runner takes the lease over (this runner stalled past its
// expiry), the background renewal finds itself fenced and cancels the run;
// nothing the stale runner does afterwards is recorded.
func TestLostLeaseCancelsTheRun(t *testing.T) {
	ctx := context.Background()
	entered := make(chan struct{})
	job := Job{Name: "eod", Steps: []Step{{Name: "wait", Run: func(ctx context.Context, sc StepContext) (string, error) {
		close(entered)
		<-ctx.Done()
		return "", context.Cause(ctx)
	}}}}
	e := newEnv(t, job)
	e.r.cfg.RenewEvery = 5 * time.Millisecond
	type out struct {
		res Result
		err error
	}
	done := make(chan out, 1)
	go func() { res, err := e.r.Run(ctx, Request{Job: "eod"}); done <- out{res, err} }()
	<-entered
	var thief ledger.Lease
	for i := 0; ; i++ {
		e.clk.Advance(e.cfg.LeaseTTL + time.Second)
		l, err := e.led.AcquireLease(ctx, "eod", "thief", time.Hour)
		if err == nil {
			thief = l
			break
		}
		if !errors.Is(err, ledger.ErrLeaseHeld) || i == 1000 {
			t.Fatalf("takeover: %v", err)
		}
	}
	o := <-done
	if !errors.Is(o.err, ledger.ErrFenced) {
		t.Fatalf("run error = %v, want ErrFenced", o.err)
	}
	run, _ := e.led.History(ctx, ledger.Filter{Job: "eod"})
	steps, _ := e.led.Steps(ctx, run[0].RunID)
	if run[0].Status != ledger.Started || run[0].Token != 1 || len(steps) != 1 || steps[0].Status != ledger.Started {
		t.Fatalf("stale runner recorded something: %+v %+v", run[0], steps)
	}
	cur, _, _ := e.led.CurrentLease(ctx, "eod")
	if cur.Holder != "thief" || cur.Token != thief.Token {
		t.Fatalf("lease = %+v", cur)
	}
}

// Manual runs of a repeating job racing in one minute, from separate
// runners: the lease lets one run at a time, the others are refused with
// ErrLeaseHeld (never fenced mid-run), and every run that went through is
// its own instance of the slot (no rerun number twice).
func TestManualRepeatingRunsRace(t *testing.T) {
	ctx := context.Background()
	p := newProbe()
	e := newEnv(t, p.job("outbox-drain"))
	e.clk.Set(time.Date(2026, 12, 2, 10, 21, 30, 0, eodTime.Location()))
	const n = 8
	type out struct {
		res Result
		err error
	}
	outs := make(chan out, n)
	var runners []*Runner
	for i := 0; i < n; i++ {
		runners = append(runners, e.runner(t, e.openLedger(t), fmt.Sprintf("ops-%d", i), &bytes.Buffer{}))
	}
	start := make(chan struct{})
	for _, r := range runners {
		go func() {
			<-start
			res, err := r.Run(ctx, Request{Job: "outbox-drain", Trigger: "cli", By: "ops"})
			outs <- out{res, err}
		}()
	}
	close(start)
	keysSeen := map[string]bool{}
	for i := 0; i < n; i++ {
		o := <-outs
		switch {
		case o.err == nil:
			if o.res.Run.Status != ledger.Completed || keysSeen[o.res.Run.RunKey] {
				t.Fatalf("run %+v: status or duplicate key", o.res.Run)
			}
			keysSeen[o.res.Run.RunKey] = true
		case !errors.Is(o.err, ledger.ErrLeaseHeld):
			t.Fatalf("refusal %v, want ErrLeaseHeld", o.err)
		}
	}
	if len(keysSeen) == 0 {
		t.Fatal("no manual run went through")
	}
	var rows int
	if err := e.led.DB().Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM JobRuns WHERE job = 'outbox-drain' AND status = 'COMPLETED'`).Scan(&rows)
	}); err != nil {
		t.Fatal(err)
	}
	if rows != len(keysSeen) {
		t.Fatalf("JobRuns %d, runs that went through %d", rows, len(keysSeen))
	}
}
