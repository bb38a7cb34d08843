package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/gateway/bench"
	"github.com/zcgw/zcgw/gateway/node"
)

// zcgw bench: starts a node in-process on a fresh data folder, drives it
// over HTTP as banks do, prints throughput, latency, commits per database
// and CPU, and exits 1 when an invariant is breached (issue 13 item 1).
func init() {
	register("bench", command{
		Summary: "measure settled transfers/s on a fresh in-process node, then check the invariants",
		Run:     runBench,
		Usage:   benchUsage,
	})
}

// benchBeforeCheck, when set (tests), runs after the load and before the
// invariant checks: a test breaks an invariant there on purpose.
var benchBeforeCheck func(ctx context.Context, n *node.Node) error

func benchUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: zcgw bench [-n N] [-c C | --rate R | --idle D [--max-idle-cpu P] | --file N [--accepted-only]] [--banks K] [--lanes EXPRESS=100] [--mq KIND] [--store postgres [--store-url URL] [--nodes N]] [--data DIR [--keep]] [--json] [--cpuprofile FILE]")
	fmt.Fprintln(w, "Starts a node in this process on a fresh data folder (a temporary one unless --data names an empty or")
	fmt.Fprintln(w, "new folder; removed at the end unless --keep) with K banks (default 4), 3 funded accounts each, the")
	fmt.Fprintln(w, "embedded MQ and synchronous=FULL, and drives it over HTTP as banks do: POST /api/transfers with the")
	fmt.Fprintln(w, "payer bank's API key and an idempotency key. -n transfers (default 1000) from -c clients (default 16),")
	fmt.Fprintln(w, "each posting its next once its last is SETTLED or CANCELLED (closed loop); --rate R posts R transfers/s")
	fmt.Fprintln(w, "whatever is in flight (open loop). --lanes gives each lane's percent, of EXPRESS and STANDARD (both")
	fmt.Fprintln(w, "settle online; STANDARD adds the payer's authority and the payee's name checks); a mixed run reports")
	fmt.Fprintln(w, "each lane too. One progress line a second on")
	fmt.Fprintln(w, "stderr, then the report: settled transfers/s, POST and POST->SETTLED latency (p50, p99, p99.9; the")
	fmt.Fprintln(w, "SETTLED instant is its FinalityLog entry, read after the run), commits per settled transfer for each")
	fmt.Fprintln(w, "database (each commit is one WAL fsync under synchronous=FULL), CPU seconds per 1,000 transfers and")
	fmt.Fprintln(w, "peak RSS. Then the invariants: every transfer terminal, each account and bank's money conserved,")
	fmt.Fprintln(w, "every posting applied exactly once at its core, every FinalityLog chain verifying.")
	fmt.Fprintln(w, "--nodes N starts N nodes in this process on the --store postgres databases (each its own data folder) and posts round robin;")
	fmt.Fprintln(w, "--store postgres puts the node's databases in PostgreSQL (--store-url, default "+benchPostgres+"),")
	fmt.Fprintln(w, "each in a schema of a fresh prefix bench_XXXXXXXX_ (zc, ingress_nonces, mq, adapter_001, core_001, …),")
	fmt.Fprintln(w, "dropped at the end unless --keep; commits are then PostgreSQL commits (WAL flushes, synchronous_commit on).")
	fmt.Fprintln(w, "--idle D (e.g. 20s) is the idle mode: the node runs D with no request (after 1s to finish its start) and")
	fmt.Fprintln(w, "the report gives the CPU the process used over D (getrusage user+sys) in percent of one core; with")
	fmt.Fprintln(w, "--max-idle-cpu P the run fails (exit 1) above P percent.")
	fmt.Fprintln(w, "--file N: bank 001 drops a generated N-record 総合振込 file through the node's folder watcher instead;")
	fmt.Fprintln(w, "reports the time to every transfer accepted, the BULK window, all settled and the result file (docs/filedrop.md);")
	fmt.Fprintln(w, "--accepted-only stops at accepted: commits, CPU and peak RSS up to there, then checks every record is one")
	fmt.Fprintln(w, "BULK transfer in RECEIVED and every FinalityLog chain verifies.")
	fmt.Fprintln(w, "Exit 0: all held; 1: an invariant was breached (named on stderr) or the run failed; 2: bad usage.")
}

func runBench(ctx context.Context, e *env, args []string) int {
	globalData := e.DataDir
	fs := e.flagSet("bench")
	fs.Usage = func() { benchUsage(e.Stderr) }
	n := fs.Int("n", 1000, "transfers")
	c := fs.Int("c", 16, "concurrent clients (closed loop)")
	rate := fs.Float64("rate", 0, "transfers/s (open loop)")
	banks := fs.Int("banks", 4, "banks")
	lanes := fs.String("lanes", "EXPRESS=100", "lane percents")
	keep := fs.Bool("keep", false, "keep the data folder")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	idle := fs.Duration("idle", 0, "idle mode: run the node this long with no request and report its CPU")
	maxIdle := fs.Float64("max-idle-cpu", 0, "idle mode: fail above this percent of one core")
	mqFlag := mqFlags(fs)
	file := fs.Int("file", 0, "drop a generated N-record 総合振込 file instead of posting transfers")
	storeKind := fs.String("store", string(store.SQLite), "where the node's databases live: sqlite (files in the data folder) or postgres")
	storeURL := fs.String("store-url", "", "the PostgreSQL database of --store postgres (default "+benchPostgres+")")
	nodes := fs.Int("nodes", 1, "nodes in this process sharing the --store postgres databases, the POSTs round robin over them")
	acceptedOnly := fs.Bool("accepted-only", false, "with --file: stop once the file is accepted (no window, no settlement)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	storeCfg, err := benchStore(*storeKind, *storeURL)
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw bench:", err)
		return 2
	}
	mqCfg, err := mqFlag()
	deploy := bench.Deployment{MQ: mqCfg, Store: storeCfg}
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw bench:", err)
		return 2
	}
	if mqCfg != nil { // core queues of this run's own, deleted after it
		mqCfg.Queues = &node.MQQueues{Prefix: "BENCH" + mq.NewID().String()[:8] + ".{bank}."}
		defer func() {
			var ids []string
			for _, b := range bench.Config(*banks).Banks {
				ids = append(ids, b.BankID)
			}
			if err := node.DeleteCoreQueues(context.WithoutCancel(ctx), mqCfg, ids, nil); err != nil {
				fmt.Fprintln(e.Stderr, "zcgw bench: deleting the run's queues:", err)
			}
		}()
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(e.Stderr, "zcgw bench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	ls, err := bench.ParseLanes(*lanes)
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw bench:", err)
		return 2
	}
	if *acceptedOnly && *file == 0 {
		fmt.Fprintln(e.Stderr, "zcgw bench: --accepted-only needs --file N")
		return 2
	}
	if *n <= 0 || *c <= 0 || *rate < 0 || *banks < 2 || *idle < 0 || *maxIdle < 0 {
		fmt.Fprintln(e.Stderr, "zcgw bench: -n and -c must be > 0, --rate, --idle and --max-idle-cpu >= 0, --banks >= 2")
		return 2
	}
	if *nodes < 1 || *nodes > 1 && (storeCfg == nil || *file > 0 || *idle > 0) {
		fmt.Fprintln(e.Stderr, "zcgw bench: --nodes N (N >= 1) above 1 needs --store postgres and the transfer load (not --file, not --idle)")
		return 2
	}
	if *maxIdle > 0 && *idle == 0 {
		fmt.Fprintln(e.Stderr, "zcgw bench: --max-idle-cpu needs --idle")
		return 2
	}
	dir, explicit := e.DataDir, dataGiven(fs, globalData)
	if explicit {
		if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
			fmt.Fprintf(e.Stderr, "zcgw bench: --data %s is not empty: bench needs a fresh folder\n", dir)
			return 2
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			fmt.Fprintln(e.Stderr, "zcgw bench:", err)
			return 1
		}
	} else if dir, err = os.MkdirTemp("", "zcgw-bench-"); err != nil {
		fmt.Fprintln(e.Stderr, "zcgw bench:", err)
		return 1
	}
	if *keep {
		fmt.Fprintf(e.Stderr, "zcgw bench: data folder %s (kept)\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if storeCfg != nil {
		base := bench.Config(*banks)
		if *file > 0 {
			base = bench.FileConfig(*banks)
		}
		cfg := deploy.NodeConfig(base)
		l := cfg.Locator(dir)
		if *keep {
			fmt.Fprintf(e.Stderr, "zcgw bench: schemas %s* in %s (kept)\n", l.Prefix, store.Redact(l.URL))
		} else {
			defer func() {
				for _, comp := range cfg.Components() {
					if err := l.Drop(context.WithoutCancel(ctx), comp); err != nil {
						fmt.Fprintf(e.Stderr, "zcgw bench: dropping %s: %v\n", l.Name(comp), err)
					}
				}
			}()
		}
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(e.Stderr, "zcgw bench:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(e.Stderr, "zcgw bench:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if *file > 0 {
		return runBenchFile(ctx, e, dir, deploy, *file, *banks, *acceptedOnly, *asJSON)
	}
	rep, err := bench.Run(ctx, bench.Options{N: *n, Clients: *c, Rate: *rate, Lanes: ls, Banks: *banks, DataDir: dir, Deployment: deploy,
		Progress: e.Stderr, BeforeCheck: benchBeforeCheck, Idle: *idle, MaxIdleCPU: *maxIdle, Nodes: *nodes})
	var br *bench.Breach
	if err != nil && !errors.As(err, &br) {
		fmt.Fprintln(e.Stderr, "zcgw bench:", err)
		return 1
	}
	if *asJSON {
		if code := printJSON(e, struct {
			bench.Report
			Breach string `json:"breach,omitempty"`
		}{rep, breachText(br)}); code != 0 {
			return code
		}
	} else {
		printBench(e.Stdout, rep)
	}
	if br != nil {
		fmt.Fprintln(e.Stderr, "zcgw bench: FAILED:", br)
		return 1
	}
	if !*asJSON {
		fmt.Fprintf(e.Stdout, "invariants held: %s (%d chains verified)\n", strings.Join(rep.Invariants, ", "), rep.ChainsVerified)
	}
	return 0
}

// benchPostgres is the database of --store postgres without --store-url:
// the local server's postgres database (the run's schemas are dropped).
const benchPostgres = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// benchStore is the store block of a run: nil for SQLite, or PostgreSQL
// at url under a fresh schema prefix.
func benchStore(kind, url string) (*node.StoreConfig, error) {
	switch store.Kind(kind) {
	case store.SQLite:
		if url != "" {
			return nil, errors.New("--store-url needs --store postgres")
		}
		return nil, nil
	case store.Postgres:
	default:
		return nil, fmt.Errorf("--store %q: want sqlite or postgres", kind)
	}
	if url == "" {
		url = benchPostgres
	}
	if p := store.CheckPostgresURL(url); p != "" {
		return nil, fmt.Errorf("--store-url: %s", p)
	}
	return &node.StoreConfig{Kind: kind, URL: url, SchemaPrefix: "bench_" + strings.ToLower(mq.NewID().String()[:8]) + "_"}, nil
}

// dataGiven reports whether the user named the data folder: --data after
// `bench`, or the global --data (which differs from ZCGW_DATA or ./var).
// ZCGW_DATA alone does not count: a bench never runs on a served folder.
func dataGiven(fs *flag.FlagSet, global string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "data" })
	def := os.Getenv("ZCGW_DATA")
	if def == "" {
		def = "./var"
	}
	return given || global != def
}

func breachText(b *bench.Breach) string {
	if b == nil {
		return ""
	}
	return b.Error()
}

func printBench(w io.Writer, r bench.Report) {
	if r.IdleSeconds > 0 {
		fmt.Fprintf(w, "zcgw bench: idle node, %d banks, no request\n", r.Banks)
		bound := ""
		if r.MaxIdleCPU > 0 {
			bound = fmt.Sprintf(" (bound %.2f%%)", r.MaxIdleCPU)
		}
		fmt.Fprintf(w, "idle CPU           %.2f%% of one core over %.1fs (user+sys of this process)%s\n", r.IdleCPUPercent, r.IdleSeconds, bound)
		fmt.Fprintf(w, "peak RSS           %.1f MiB\n", r.PeakRSSMB)
		return
	}
	mode := fmt.Sprintf("closed loop, %d clients", r.Clients)
	if r.Rate > 0 {
		mode = fmt.Sprintf("open loop, %.0f/s", r.Rate)
	}
	fmt.Fprintf(w, "zcgw bench: %d transfers (%s), %d banks, lanes %s, store %s\n", r.Transfers, mode, r.Banks, r.Lanes, r.Store)
	if r.Nodes > 1 {
		fmt.Fprintf(w, "nodes              %d in this process on the shared store, POSTs round robin (commits below: node 1's handles only)\n", r.Nodes)
	}
	fmt.Fprintf(w, "settled            %d (cancelled %d) in %.2fs: %.1f settled transfers/s\n", r.Settled, r.Cancelled, r.Seconds, r.SettledPerSec)
	fmt.Fprintf(w, "POST latency       p50 %8.1f ms  p99 %8.1f ms  p99.9 %8.1f ms\n", r.Post.P50, r.Post.P99, r.Post.P999)
	fmt.Fprintf(w, "POST->SETTLED      p50 %8.1f ms  p99 %8.1f ms  p99.9 %8.1f ms\n", r.PostToSettled.P50, r.PostToSettled.P99, r.PostToSettled.P999)
	for _, l := range r.ByLane {
		fmt.Fprintf(w, "  %-16s %d settled, POST->SETTLED p50 %8.1f ms  p99 %8.1f ms  p99.9 %8.1f ms\n", l.Lane, l.Settled, l.PostToSettled.P50, l.PostToSettled.P99, l.PostToSettled.P999)
	}
	printDBCosts(w, r)
	fmt.Fprintf(w, "CPU                %.2f s per 1,000 transfers (user+sys of this process)\n", r.CPUPer1000)
	fmt.Fprintf(w, "peak RSS           %.1f MiB\n", r.PeakRSSMB)
}

// printDBCosts prints each database's commits (one WAL fsync each on
// SQLite with synchronous=FULL, one WAL flush each on PostgreSQL) and SQL
// statements per settled transfer, and their sums.
func printDBCosts(w io.Writer, r bench.Report) {
	if strings.HasPrefix(r.Store, string(store.Postgres)) {
		fmt.Fprintf(w, "per settled transfer     commits (PostgreSQL: WAL flushes, synchronous_commit on)   SQL statements\n")
	} else {
		fmt.Fprintf(w, "per settled transfer     commits (= fsyncs: WAL, synchronous=FULL)   SQL statements\n")
	}
	for _, d := range r.DBs {
		fmt.Fprintf(w, "  %-22s %8.2f  (%7d commits)  %9.1f  (%9d statements)\n", d.File, d.CommitsPerSettle, d.Commits, d.StatementsPerSettle, d.Statements)
	}
	fmt.Fprintf(w, "  %-22s %8.2f                     %9.1f\n", "all databases", r.CommitsPerTx, r.StmtsPerTx)
}
