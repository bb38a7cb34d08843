package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
	"github.com/zcgw/zcgw/gateway/bench"
	"github.com/zcgw/zcgw/gateway/node"
)

// TestBenchRunsAndReports: a small closed-loop run over two lanes settles
// every transfer, reports positive rates, each lane's share and
// per-database commits (the MQ's queue file among them), holds every
// invariant, and removes its data folder (no --keep).
func TestBenchRunsAndReports(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bench")
	code, out, errs := zcgwIn(context.Background(), "bench", "-n", "40", "-c", "4", "--banks", "2", "--lanes", "EXPRESS=75,STANDARD=25", "--data", dir, "--json")
	if code != 0 {
		t.Fatalf("zcgw bench: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	var rep struct {
		Settled       int     `json:"settled"`
		Cancelled     int     `json:"cancelled"`
		SettledPerSec float64 `json:"settled_per_s"`
		Post          struct {
			P50 float64 `json:"p50_ms"`
		} `json:"post_latency"`
		PostToSettled struct {
			P50 float64 `json:"p50_ms"`
			P99 float64 `json:"p99_ms"`
		} `json:"post_to_settled_latency"`
		DBs []struct {
			File       string `json:"file"`
			Commits    int64  `json:"commits"`
			Statements int64  `json:"statements"`
		} `json:"dbs"`
		ByLane []struct {
			Lane          string `json:"lane"`
			Settled       int    `json:"settled"`
			PostToSettled struct {
				P50 float64 `json:"p50_ms"`
			} `json:"post_to_settled_latency"`
		} `json:"by_lane"`
		CommitsPerTx   float64  `json:"commits_per_settled"`
		StmtsPerTx     float64  `json:"statements_per_settled"`
		CPUPer1000     float64  `json:"cpu_s_per_1000"`
		PeakRSSMB      float64  `json:"peak_rss_mb"`
		Invariants     []string `json:"invariants_checked"`
		ChainsVerified int      `json:"chains_verified"`
		Breach         string   `json:"breach"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report is no JSON: %v\n%s", err, out)
	}
	if rep.Settled != 40 || rep.Cancelled != 0 || rep.SettledPerSec <= 0 || rep.Post.P50 <= 0 || rep.PostToSettled.P50 <= 0 || rep.PostToSettled.P99 < rep.PostToSettled.P50 ||
		rep.CommitsPerTx <= 0 || rep.StmtsPerTx < rep.CommitsPerTx || rep.CPUPer1000 <= 0 || rep.PeakRSSMB <= 0 || rep.Breach != "" || rep.ChainsVerified < 40 {
		t.Errorf("report: %+v", rep)
	}
	if got := strings.Join(rep.Invariants, ","); got != "terminal,accounts,conservation,exactly-once,chains-verify" {
		t.Errorf("invariants checked: %s", got)
	}
	if len(rep.ByLane) != 2 || rep.ByLane[0].Lane != "EXPRESS" || rep.ByLane[0].Settled != 30 || rep.ByLane[1].Lane != "STANDARD" || rep.ByLane[1].Settled != 10 ||
		rep.ByLane[1].PostToSettled.P50 <= 0 {
		t.Errorf("by lane: %+v", rep.ByLane)
	}
	files, stmts := map[string]int64{}, map[string]int64{}
	for _, d := range rep.DBs {
		files[d.File], stmts[d.File] = d.Commits, d.Statements
	}
	if _, ok := files["zc.db job ledger"]; !ok {
		t.Errorf("no job ledger in the report: %v", files)
	}
	for _, f := range []string{"zc.db", "mq.db", "bank 001 adapter", "bank 001 core", "bank 002 adapter", "bank 002 core"} {
		if files[f] <= 0 || stmts[f] < files[f] {
			t.Errorf("database %s: %d commits, %d statements in the report", f, files[f], stmts[f])
		}
	}
	// The adapters consume the ingress nonces with their commands
	// (docs/gateway.md "Nonces"): ingress-nonces.db is reported, and
	// commits at most the readiness probe's one transaction.
	if n, ok := files["ingress-nonces.db"]; !ok || n > 1 {
		t.Errorf("ingress-nonces.db: %d commits (reported %v), want at most 1", n, ok)
	}
	if !strings.Contains(errs, "posted") {
		t.Errorf("no progress line on stderr:\n%s", errs)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("data folder %s not removed without --keep: %v", dir, err)
	}
}

// TestBenchExitsNonZeroOnBreach: a run whose cores were tampered with
// after the load (one balance off by one yen; one journal line gone) must
// exit 1 and name the invariant it broke.
func TestBenchExitsNonZeroOnBreach(t *testing.T) {
	for _, tc := range []struct{ name, sql, want string }{
		{"balance", `UPDATE CoreAccounts SET balance = balance + 1 WHERE account = (SELECT MIN(account) FROM CoreAccounts)`, "invariant accounts breached"},
		{"journal", `DELETE FROM CoreJournal WHERE journal_id = (SELECT MAX(journal_id) FROM CoreJournal WHERE source != 'OPENING')`, "invariant exactly-once breached"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			benchBeforeCheck = func(ctx context.Context, n *node.Node) error {
				return n.Banks["001"].Core.DB().Write(ctx, func(tx *store.Tx) error {
					res, err := tx.ExecContext(ctx, tc.sql)
					if err != nil {
						return err
					}
					if k, _ := res.RowsAffected(); k != 1 {
						t.Errorf("tamper changed %d rows", k)
					}
					return nil
				})
			}
			t.Cleanup(func() { benchBeforeCheck = nil })
			code, out, errs := zcgwIn(context.Background(), "bench", "-n", "8", "-c", "2", "--banks", "2")
			if code != 1 || !strings.Contains(errs, "zcgw bench: FAILED: "+tc.want) || strings.Contains(out, "invariants held") {
				t.Fatalf("exit %d, want 1 naming %q\nstdout:\n%s\nstderr:\n%s", code, tc.want, out, errs)
			}
		})
	}
}

// TestBenchIdleMode: --idle runs the node with no request and reports the
// CPU it used over the window; --max-idle-cpu fails the run (exit 1,
// naming the bound) when the node used more.
func TestBenchIdleMode(t *testing.T) {
	code, out, errs := zcgwIn(context.Background(), "bench", "--idle", "1s", "--banks", "2", "--json")
	if code != 0 {
		t.Fatalf("zcgw bench --idle: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	var rep struct {
		Transfers   int      `json:"transfers"`
		IdleSeconds float64  `json:"idle_s"`
		IdleCPU     float64  `json:"idle_cpu_percent_of_one_core"`
		Invariants  []string `json:"invariants_checked"`
		Breach      string   `json:"breach"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report is no JSON: %v\n%s", err, out)
	}
	if rep.Transfers != 0 || rep.IdleSeconds < 1 || rep.IdleCPU <= 0 || len(rep.Invariants) != 5 || rep.Breach != "" {
		t.Errorf("idle report: %+v", rep)
	}
	code, out, errs = zcgwIn(context.Background(), "bench", "--idle", "1s", "--banks", "2", "--max-idle-cpu", "0.0001")
	if code != 1 || !strings.Contains(errs, "zcgw bench: FAILED: bound idle-cpu exceeded") || !strings.Contains(out, "idle CPU") {
		t.Fatalf("exit %d, want 1 naming the idle-cpu bound\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if code, _, errs := zcgwIn(context.Background(), "bench", "--max-idle-cpu", "2"); code != 2 || !strings.Contains(errs, "--max-idle-cpu needs --idle") {
		t.Fatalf("--max-idle-cpu without --idle: exit %d\n%s", code, errs)
	}
}

// TestBenchOnPostgres: --store postgres runs the node with every database
// in a fresh set of PostgreSQL schemas, reports and checks as on SQLite,
// and drops the schemas at the end; with --keep they stay, named on
// stderr. A bad --store is refused (exit 2).
func TestBenchOnPostgres(t *testing.T) {
	if code, _, errs := zcgwIn(context.Background(), "bench", "--store", "mysql"); code != 2 || !strings.Contains(errs, `--store "mysql": want sqlite or postgres`) {
		t.Fatalf("--store mysql: exit %d %s", code, errs)
	}
	if code, _, errs := zcgwIn(context.Background(), "bench", "--store", "postgres", "--store-url", "postgres://h/db?search_path=x"); code != 2 || !strings.Contains(errs, "--store-url: sets search_path") {
		t.Fatalf("--store-url with search_path: exit %d %s", code, errs)
	}
	pg, ok := storetest.Postgres(t)
	if !ok {
		t.Skip("no PostgreSQL server")
	}
	dbURL := storetest.Locator(t, pg, t.TempDir()).URL
	schemas := func(prefix string) int {
		t.Helper()
		db, err := sql.Open("pgx", dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM pg_namespace WHERE left(nspname, length($1)) = $1", prefix).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	code, out, errs := zcgwIn(context.Background(), "bench", "-n", "12", "-c", "3", "--banks", "2", "--store", "postgres", "--store-url", dbURL, "--json")
	if code != 0 {
		t.Fatalf("zcgw bench --store postgres: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report is no JSON: %v\n%s", err, out)
	}
	if !strings.HasPrefix(rep.Store, "postgres ") || rep.Settled != 12 || rep.ChainsVerified < 12 {
		t.Errorf("report: %+v", rep)
	}
	files := map[string]int64{}
	for _, d := range rep.DBs {
		files[d.File] = d.Commits
	}
	for _, f := range []string{"zc", "mq", "bank 001 adapter", "bank 001 core", "bank 002 core"} {
		if files[f] <= 0 {
			t.Errorf("database %s: %d commits in the report %v", f, files[f], files)
		}
	}
	if n, ok := files["ingress-nonces"]; !ok || n > 1 {
		t.Errorf("ingress-nonces: %d commits (reported %v), want at most 1 (the adapters consume the nonces)", n, ok)
	}
	// The run's own schemas (named in the report) are gone; other runs'
	// schemas on the shared server are not this run's business.
	_, named, _ := strings.Cut(rep.Store, "(schemas ")
	runPrefix, _, _ := strings.Cut(named, "*")
	if !strings.HasPrefix(runPrefix, "bench_") {
		t.Fatalf("report names no schema prefix: %q", rep.Store)
	}
	if left := schemas(runPrefix); left != 0 {
		t.Errorf("%d schemas %s* left after the run (not dropped)", left, runPrefix)
	}

	code, _, errs = zcgwIn(context.Background(), "bench", "-n", "4", "-c", "2", "--banks", "2", "--store", "postgres", "--store-url", dbURL, "--keep")
	_, rest, _ := strings.Cut(errs, "zcgw bench: schemas ")
	prefix, _, _ := strings.Cut(rest, "*")
	if code != 0 || !strings.HasPrefix(prefix, "bench_") {
		t.Fatalf("--keep: exit %d\n%s", code, errs)
	}
	t.Cleanup(func() {
		l := store.Locator{Kind: store.Postgres, URL: dbURL, Prefix: prefix}
		for _, c := range (node.Config{Banks: []node.BankConfig{{BankID: "001"}, {BankID: "002"}}}).Components() {
			l.Drop(context.Background(), c)
		}
	})
	if n := schemas(prefix); n != 7 {
		t.Errorf("--keep: %d schemas %s*, want 7 (zc, ingress_nonces, mq, two adapters, two cores)", n, prefix)
	}
}
