package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/gateway/node"
	"github.com/zcgw/zcgw/jobs/scheduler"
	"github.com/zcgw/zcgw/outbox"
)

// zcgwIn runs the zcgw command line in this process.
func zcgwIn(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// ledgerRow is what the job ledger recorded about a job's runs.
type ledgerRow struct {
	RunKey, Status, Trigger, Holder string
	Attempts, Steps, StepAttempts   int
}

func ledgerRows(t *testing.T, dir, job, date string) []ledgerRow {
	t.Helper()
	ctx := context.Background()
	db, err := store.OpenCoordinator(ctx, filepath.Join(dir, "zc.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []ledgerRow
	err = db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT r.run_key, r.status, r.trigger_source, r.holder, r.attempts,
			(SELECT COUNT(*) FROM JobSteps s WHERE s.run_id = r.run_id AND s.status = 'COMPLETED'),
			(SELECT COALESCE(SUM(attempts), 0) FROM JobSteps s WHERE s.run_id = r.run_id)
			FROM JobRuns r WHERE r.job = ? AND (? = '' OR r.business_date = ?) ORDER BY r.run_id`, job, date, date)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r ledgerRow
			if err := rows.Scan(&r.RunKey, &r.Status, &r.Trigger, &r.Holder, &r.Attempts, &r.Steps, &r.StepAttempts); err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func countRows(t *testing.T, dir, query string, args ...any) int {
	t.Helper()
	ctx := context.Background()
	db, err := store.OpenCoordinator(ctx, filepath.Join(dir, "zc.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.Read(ctx, func(tx *store.Tx) error { return tx.QueryRowContext(ctx, query, args...).Scan(&n) }); err != nil {
		t.Fatal(err)
	}
	return n
}

var eodDone = regexp.MustCompile(`^run (\d+): eod 2026-11-30 daily COMPLETED in \d+ ms \(ran 5 of 5 steps, 0 done earlier\)\n$`)

// checkEODTwice runs EOD for 2026-11-30 through the CLI twice on dir and
// checks what an operator relies on: the first run completes every step,
// the second does nothing, says so and exits 0, and the day is closed and
// audited exactly once.
func checkEODTwice(t *testing.T, ctx context.Context, dir string) (first ledgerRow, stderr string) {
	t.Helper()
	// --data after the job's flags, as an operator types it.
	code, out, errs := zcgwIn(ctx, "jobs", "run", "eod", "--date", "2026-11-30", "--data", dir)
	m := eodDone.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("first EOD: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	code, out2, errs2 := zcgwIn(ctx, "--data", dir, "jobs", "run", "eod", "--date", "2026-11-30")
	want := regexp.MustCompile(`^eod 2026-11-30 \(daily\) was already completed at 20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ as run ` + m[1] +
		`: nothing to do \(zcgw jobs show ` + m[1] + `; run it again with --force --reason\)\n$`)
	if code != 0 || !want.MatchString(out2) {
		t.Fatalf("second EOD: exit %d\nstdout:\n%s\nstderr:\n%s", code, out2, errs2)
	}
	rows := ledgerRows(t, dir, "eod", "2026-11-30")
	if len(rows) != 1 || rows[0].Status != "COMPLETED" || rows[0].RunKey != "daily" || rows[0].Attempts != 1 ||
		rows[0].Steps != 5 || rows[0].StepAttempts != 5 || rows[0].Trigger != "cli" {
		t.Fatalf("eod ledger rows after two runs = %+v, want one COMPLETED run whose 5 steps each ran once", rows)
	}
	for table, n := range map[string]int{"EodBusinessDates": 1, "EodChainAudits": 1, "EodWorkbooks": 1} {
		if got := countRows(t, dir, `SELECT COUNT(*) FROM `+table+` WHERE business_date = '2026-11-30'`); got != n {
			t.Errorf("%s rows for 2026-11-30 = %d, want %d", table, got, n)
		}
	}
	return rows[0], errs + errs2
}

// EOD from the CLI on a data folder no node serves: it runs in this
// process, every step completes, and a second run does nothing.
func TestJobsRunEODOnFreshFolder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	checkEODTwice(t, ctx, dir)
	if got := countRows(t, dir, `SELECT COUNT(*) FROM EodReconciliations WHERE business_date = '2026-11-30'`); got != 2 {
		t.Errorf("EodReconciliations = %d, want one per bank (2)", got)
	}
}

// startNode serves dir with a real node in this process (its data folder
// lock taken, its /internal routes up), as `zcgw serve` does.
func startNode(t *testing.T, dir string) *node.Node {
	t.Helper()
	n, err := node.Start(context.Background(), node.Options{DataDir: dir, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// EOD from the CLI on a data folder a node serves: the CLI must not open
// the cores and MQ a second time, so the node runs it (its lease holder is
// in the ledger), and a second run does nothing.
func TestJobsRunEODOnServedFolderGoesThroughTheNode(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	n := startNode(t, dir)
	row, stderr := checkEODTwice(t, ctx, dir)
	if row.Holder != n.Jobs.Holder() {
		t.Fatalf("eod ran under lease holder %q, want the serving node's runner %q", row.Holder, n.Jobs.Holder())
	}
	addr := strings.TrimPrefix(n.URL, "http://")
	if !strings.Contains(stderr, fmt.Sprintf("(pid %d, addr %s) serves %s: asking it to run eod", os.Getpid(), addr, dir)) {
		t.Fatalf("stderr does not name the node the run went to:\n%s", stderr)
	}
}

// `zcgw jobs list` says BODY yes for exactly the jobs a node registers a
// body for (one registration for both), on a fresh folder and on a served
// one.
func TestJobsListTellsWhichJobsHaveABody(t *testing.T) {
	ctx := context.Background()
	fresh, served := t.TempDir(), t.TempDir()
	n := startNode(t, served)
	for _, dir := range []string{fresh, served} {
		code, out, errs := zcgwIn(ctx, "jobs", "list", "--data", dir)
		if code != 0 {
			t.Fatalf("jobs list: exit %d\n%s%s", code, out, errs)
		}
		seen := 0
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) < 6 || f[0] == "JOB" {
				continue
			}
			if _, ok := scheduler.DefaultConfig().Jobs[f[0]]; !ok {
				continue
			}
			seen++
			_, has := n.Jobs.Registry().Lookup(f[0])
			if want := map[bool]string{true: "yes", false: "no"}[has]; f[4] != want {
				t.Errorf("%s: job %s BODY %s, but the node has a body: %v", dir, f[0], f[4], has)
			}
		}
		if seen != len(scheduler.DefaultConfig().Jobs) {
			t.Fatalf("jobs list showed %d jobs, want %d:\n%s", seen, len(scheduler.DefaultConfig().Jobs), out)
		}
		for _, job := range []string{"eod", "dns-kick", "outbox-drain", "finality-audit"} {
			if _, ok := n.Jobs.Registry().Lookup(job); !ok {
				t.Fatalf("the node has no body for %s", job)
			}
		}
	}
}

// A manual `zcgw jobs run outbox-drain` right after cron ran it in the
// same minute is not refused: it runs (the slot's next instance).
func TestJobsRunOutboxDrainRightAfterCron(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	n := startNode(t, dir)
	n.Jobs.Trigger(ctx, "outbox-drain") // what the cron entry runs
	cron := ledgerRows(t, dir, "outbox-drain", "")
	if len(cron) != 1 || cron[0].Status != "COMPLETED" || cron[0].Trigger != "cron" {
		t.Fatalf("cron run = %+v", cron)
	}
	code, out, errs := zcgwIn(ctx, "--data", dir, "jobs", "run", "outbox-drain")
	if code != 0 || !regexp.MustCompile(`^run \d+: outbox-drain \d{4}-\d\d-\d\d \d\d:\d\d(/rerun-1)? COMPLETED in \d+ ms \(ran 1 of 1 steps, 0 done earlier\)\n$`).MatchString(out) {
		t.Fatalf("manual outbox-drain after cron: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	rows := ledgerRows(t, dir, "outbox-drain", "")
	if len(rows) != 2 || rows[1].Status != "COMPLETED" || rows[1].Trigger != "cli" || rows[1].Steps != 1 {
		t.Fatalf("outbox-drain runs = %+v, want cron's and the manual one, both COMPLETED", rows)
	}
	if rows[1].RunKey != cron[0].RunKey && rows[1].RunKey != cron[0].RunKey+"/rerun-1" && !strings.Contains(out, rows[1].RunKey) {
		t.Fatalf("manual run key %q after cron's %q", rows[1].RunKey, cron[0].RunKey)
	}
}

// The finality-audit API answers spec 004's fields, and every call audits
// again.
func TestFinalityAuditAPIRerunsOnDemand(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	startNode(t, dir)
	for i := 1; i <= 2; i++ {
		code, out, errs := zcgwIn(ctx, "--data", dir, "jobs", "run", "finality-audit")
		if code != 0 || !regexp.MustCompile(`\nresult: \{"broken_chains":\[\],"case_ids":\[\],"cases_opened":0,"chains_checked":\d+,"entries_checked":\d+\}\n$`).MatchString(out) {
			t.Fatalf("finality-audit #%d: exit %d\nstdout:\n%s\nstderr:\n%s", i, code, out, errs)
		}
	}
	if got := countRows(t, dir, `SELECT COUNT(*) FROM FinalityAudits`); got != 2 {
		t.Fatalf("FinalityAudits rows = %d, want one per run (2)", got)
	}
}

// `zcgw outbox list` shows a page, says how many rows it did not show, and
// the next page (keyset on id) shows them.
func TestOutboxListPages(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, filepath.Join(dir, "adapter-001.db"), adapter.Schema)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ob, err := outbox.New(outbox.Config{DB: db, Core: refusingCore{}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := 0; i < 5; i++ {
		err := db.Write(ctx, func(tx *store.Tx) error {
			id, err := ob.Enqueue(ctx, tx, outbox.Posting{Ref: fmt.Sprintf("REF-%d", i), TxID: fmt.Sprintf("TX-%d", i), Bank: "001",
				Account: "001-1-0000001", Kind: outbox.Debit, Amount: 100})
			ids = append(ids, id)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	shown := func(out string) []string {
		var refs []string
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 2 && strings.HasPrefix(f[2], "REF-") {
				refs = append(refs, f[2])
			}
		}
		return refs
	}
	code, out, errs := zcgwIn(ctx, "--data", dir, "outbox", "list", "--bank", "001", "--limit", "2")
	wantNext := fmt.Sprintf("3 more rows not shown; next page: zcgw outbox list --bank 001 --limit 2 --after %d\n", ids[1])
	if code != 0 || strings.Join(shown(out), ",") != "REF-0,REF-1" || !strings.HasSuffix(out, wantNext) {
		t.Fatalf("page 1: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = zcgwIn(ctx, "--data", dir, "outbox", "list", "--bank", "001", "--limit", "2", "--after", strconv.FormatInt(ids[1], 10))
	if code != 0 || strings.Join(shown(out), ",") != "REF-2,REF-3" || !strings.HasSuffix(out, "1 more row not shown; next page: zcgw outbox list --bank 001 --limit 2 --after "+strconv.FormatInt(ids[3], 10)+"\n") {
		t.Fatalf("page 2: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = zcgwIn(ctx, "--data", dir, "outbox", "list", "--bank", "001", "--limit", "2", "--after", strconv.FormatInt(ids[3], 10))
	if code != 0 || strings.Join(shown(out), ",") != "REF-4" || strings.Contains(out, "not shown") {
		t.Fatalf("last page: exit %d\n%s%s", code, out, errs)
	}
}

// `zcgw help CMD` and `zcgw CMD --help` print the command's usage on
// stdout and exit 0, for every command.
func TestHelpForEveryCommand(t *testing.T) {
	ctx := context.Background()
	if code, out, errs := zcgwIn(ctx, "help"); code != 0 || !strings.Contains(out, "usage: zcgw") || errs != "" {
		t.Fatalf("zcgw help: exit %d\n%s%s", code, out, errs)
	}
	dir := t.TempDir()
	for name, c := range commands {
		var first string
		for i, args := range [][]string{{"help", name}, {name, "--help"}, {name, "-h"}} {
			code, out, errs := zcgwIn(ctx, append([]string{"--data", dir}, args...)...)
			head := "zcgw " + name + ": " + c.Summary + "\n\n"
			if code != 0 || errs != "" || !strings.HasPrefix(out, head) || !strings.Contains(strings.ToLower(out[len(head):]), "usage") {
				t.Errorf("zcgw %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
				continue
			}
			if i == 0 {
				first = out
			} else if out != first {
				t.Errorf("zcgw %s prints other usage than zcgw help %s:\n%s\n---\n%s", strings.Join(args, " "), name, out, first)
			}
		}
	}
	if code, out, _ := zcgwIn(ctx, "jobs", "run", "--help"); code != 0 || !strings.Contains(out, "usage: zcgw jobs") {
		t.Errorf("zcgw jobs run --help: exit %d\n%s", code, out)
	}
	if code, _, errs := zcgwIn(ctx, "help", "nosuch"); code != 2 || !strings.Contains(errs, `unknown command "nosuch"`) {
		t.Errorf("zcgw help nosuch: exit %d %s", code, errs)
	}
}

// A command that needs a served folder's cores and cannot go through its
// node refuses, naming the node: `zcgw coresim` would be a second consumer
// of the core's request queue.
func TestCoresimOnServedFolderRefusesNamingTheNode(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	code, out, errs := zcgwIn(ctx, "--data", dir, "coresim", "--bank", "001")
	want := fmt.Sprintf("zcgw coresim: refused: the data folder %s is served by node %s (pid %d, addr %s), which runs bank 001's core",
		dir, n.ID.Node, os.Getpid(), strings.TrimPrefix(n.URL, "http://"))
	if code != 1 || !strings.HasPrefix(errs, want) {
		t.Fatalf("coresim on a served folder: exit %d\nstdout:\n%s\nstderr:\n%s\nwant stderr starting %q", code, out, errs, want)
	}
}

// Every job of the catalogue has a body and completes from the CLI, on a
// folder no node serves (in this process) and on a served one (through the
// node).
func TestEveryJobRunsFromTheCLI(t *testing.T) {
	ctx := context.Background()
	fresh, served := t.TempDir(), t.TempDir()
	startNode(t, served)
	for _, dir := range []string{fresh, served} {
		for _, job := range scheduler.DefaultConfig().Names() {
			code, out, errs := zcgwIn(ctx, "--data", dir, "jobs", "run", job, "--date", "2026-11-30")
			ok := regexp.MustCompile(`^run \d+: ` + regexp.QuoteMeta(job) + ` 2026-11-30 \S+ COMPLETED in \d+ ms \(ran (\d+) of (\d+) steps, 0 done earlier\)\n`).FindStringSubmatch(out)
			if code != 0 || ok == nil || ok[1] != ok[2] {
				t.Errorf("%s: zcgw jobs run %s: exit %d\nstdout:\n%s\nstderr:\n%s", dir, job, code, out, errs)
			}
		}
	}
}
