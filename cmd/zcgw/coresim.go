package main

import (
	"context"
	"fmt"
	"github.com/zcgw/zcgw/coordinator/zclog"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/adapter/mq/embedded"
)

// openFlags collects repeated --open ACCOUNT:NAME:BALANCE flags.
type openFlags []string

func (o *openFlags) String() string     { return strings.Join(*o, ",") }
func (o *openFlags) Set(v string) error { *o = append(*o, v); return nil }

func init() {
	register("coresim", command{
		Summary: "run a simulated legacy core for one bank (serves its MQ request queue)",
		Run:     runCoresim,
	})
}

func runCoresim(ctx context.Context, e *env, args []string) int {
	fs := e.flagSet("coresim")
	bank := fs.String("bank", "", "bank code, e.g. 001 (required)")
	online := fs.String("online", "", "online windows in JST, HH:MM-HH:MM[,...] (default: always online)")
	mqPath := fs.String("mq", "", "embedded MQ queue file (default DATA/mq.db)")
	dbPath := fs.String("db", "", "the core's own database (default DATA/core-BANK.db)")
	batchWin := fs.String("batch-window", "", "batch windows in JST, HH:MM-HH:MM[,...] (default: any time)")
	runBatch := fs.String("run-batch", "", "process this overnight posting file, write --result, and exit")
	result := fs.String("result", "", "result file for --run-batch")
	var opens openFlags
	fs.Var(&opens, "open", "open an account if absent: ACCOUNT:NAME:BALANCE (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *bank == "" {
		fmt.Fprintln(e.Stderr, "zcgw coresim: --bank is required")
		return 2
	}
	windows, err := coresim.ParseWindows(*online)
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw coresim:", err)
		return 2
	}
	batch, err := coresim.ParseWindows(*batchWin)
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw coresim:", err)
		return 2
	}
	if *runBatch != "" && *result == "" {
		fmt.Fprintln(e.Stderr, "zcgw coresim: --run-batch needs --result")
		return 2
	}
	if *mqPath == "" {
		*mqPath = filepath.Join(e.DataDir, "mq.db")
	}
	if *dbPath == "" {
		*dbPath = filepath.Join(e.DataDir, "core-"+*bank+".db")
	}
	if filepath.Clean(*mqPath) == filepath.Join(e.DataDir, "mq.db") || filepath.Clean(*dbPath) == filepath.Join(e.DataDir, "core-"+*bank+".db") {
		if code, refused := refuseIfServed(e, "coresim", "runs bank "+*bank+"'s core on its queues itself (a second consumer would break exactly-once)"); refused {
			return code
		}
	}
	logger := zclog.New(e.Stderr, zclog.Options{})
	core, err := coresim.Open(ctx, coresim.Config{Bank: *bank, DBPath: *dbPath, Logger: logger, Online: windows, Batch: batch})
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw coresim:", err)
		return 1
	}
	defer core.Close()
	for _, o := range opens {
		parts := strings.Split(o, ":")
		if len(parts) != 3 {
			fmt.Fprintf(e.Stderr, "zcgw coresim: --open %q: want ACCOUNT:NAME:BALANCE\n", o)
			return 2
		}
		bal, err := strconv.ParseInt(parts[2], 10, 64)
		if err != nil {
			fmt.Fprintf(e.Stderr, "zcgw coresim: --open %q: balance: %v\n", o, err)
			return 2
		}
		if b, err := core.Balance(ctx, parts[0]); err == nil && b.Found {
			continue
		}
		if err := core.OpenAccount(ctx, parts[0], parts[1], bal); err != nil {
			fmt.Fprintln(e.Stderr, "zcgw coresim:", err)
			return 1
		}
	}
	if *runBatch != "" {
		sum, err := core.RunBatchFile(ctx, *runBatch, *result)
		if err != nil {
			fmt.Fprintln(e.Stderr, "zcgw coresim:", err)
			return 1
		}
		fmt.Fprintf(e.Stdout, "coresim %s: batch %s: %d records, %d applied, %d refused (replayed %v); result %s\n",
			*bank, *runBatch, sum.Records, sum.Applied, sum.Refused, sum.Replayed, *result)
		return 0
	}
	conn, err := embedded.New(*mqPath, embedded.Options{Logger: logger, App: "zcgw coresim --bank " + *bank}).Connect(ctx)
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw coresim:", err)
		return 1
	}
	defer conn.Close()
	claim, err := core.Claim(ctx, conn, coresim.ServeConfig{})
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw coresim:", err)
		return 1
	}
	fmt.Fprintf(e.Stdout, "coresim %s: serving %s on %s (core db %s)\n", *bank, claim.Queue(), *mqPath, *dbPath)
	if err := core.Serve(ctx, conn, coresim.ServeConfig{Claim: claim}); err != nil {
		fmt.Fprintln(e.Stderr, "zcgw coresim:", err)
		return 1
	}
	return 0
}
