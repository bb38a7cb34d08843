package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/adapter/mq/embedded"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/zclog"
	"github.com/zcgw/zcgw/formats/coremsg"
	"github.com/zcgw/zcgw/gateway/node"
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
	mqPath := fs.String("mq", "", "the queue manager: an embedded MQ queue store (default: the data folder's, DATA/mq.db or node.json's store) or a broker URL amqp://user:password@host:port/")
	mqKind := fs.String("mq-kind", node.MQRabbitMQ, "protocol for a broker URL: rabbitmq (AMQP 0-9-1) or amqp1 (AMQP 1.0)")
	queuePrefix := fs.String("queue-prefix", "", "prefix of the core's queues, {bank} standing for the bank code (default "+coremsg.DefaultQueuePrefix+")")
	dbPath := fs.String("db", "", "the core's own database, a file or a postgres:// URL (default: the data folder's, DATA/core-BANK.db or node.json's store)")
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
	stores, err := node.Stores(e.DataDir)
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw coresim:", err)
		return 2
	}
	folderMQ, folderCore := stores.Location(store.MQDB), stores.Location(store.CoreDB(*bank))
	broker := strings.HasPrefix(*mqPath, "amqp://") || strings.HasPrefix(*mqPath, "amqps://")
	mqCfg := &node.MQConfig{Kind: node.MQEmbedded}
	if broker {
		mqCfg = &node.MQConfig{Kind: *mqKind, URL: *mqPath}
		if *mqKind == node.MQAMQP1 {
			mqCfg.Declare = "rabbitmq"
		}
	} else if *mqPath == "" {
		*mqPath = folderMQ
	}
	if *queuePrefix != "" {
		mqCfg.Queues = &node.MQQueues{Prefix: *queuePrefix}
	}
	if err := (node.Config{MQ: mqCfg, Banks: []node.BankConfig{{BankID: *bank}}}).Validate(); err != nil {
		fmt.Fprintln(e.Stderr, "zcgw coresim:", strings.TrimPrefix(err.Error(), node.ConfigFile+": "))
		return 2
	}
	if *dbPath == "" {
		*dbPath = folderCore
	}
	if !broker && (sameLocation(*mqPath, folderMQ) || sameLocation(*dbPath, folderCore)) {
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
	app := "zcgw coresim --bank " + *bank
	var tr mq.Transport = embedded.New(*mqPath, embedded.Options{Logger: logger, App: app})
	if broker {
		tr, err = node.OpenTransport(mqCfg, stores, app, logger)
	}
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw coresim:", err)
		return 1
	}
	qs := mqCfg.Naming().For(*bank)
	where := store.Redact(*mqPath)
	if broker {
		where = mq.RedactURL(*mqPath)
	}
	return serveCore(ctx, e, core, tr, coresim.ServeConfig{RequestQueue: qs.Request, BackoutQueue: qs.Backout}, *bank, where, store.Redact(*dbPath), logger)
}

// serveCore serves the core's request queue until ctx ends. A broken
// connection (the broker restarted, or closed it) is not the end: the core
// connects again, claims its queue again and goes on; the requests it held
// uncommitted are redelivered, and answered from its CoreProcessed table
// when they were already applied.
func serveCore(ctx context.Context, e *env, core *coresim.Core, tr mq.Transport, cfg coresim.ServeConfig, bank, where, dbPath string, log *slog.Logger) int {
	for first := true; ; first = false {
		conn, err := tr.Connect(ctx)
		if err == nil {
			cfg.Claim, err = core.Claim(ctx, conn, cfg)
			if err != nil {
				conn.Close()
				if first {
					fmt.Fprintln(e.Stderr, "zcgw coresim:", err)
					return 1
				}
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return 0
			}
			log.Warn("coresim.reconnect_failed", "bank", bank, "error", err.Error())
			if !clock.Sleep(ctx, time.Second) {
				return 0
			}
			continue
		}
		if first {
			fmt.Fprintf(e.Stdout, "coresim %s: serving %s on %s (core db %s)\n", bank, cfg.Claim.Queue(), where, dbPath)
		} else {
			log.Info("coresim.reconnected", "bank", bank, "queue", cfg.Claim.Queue())
		}
		err = core.Serve(ctx, conn, cfg)
		conn.Close()
		switch {
		case ctx.Err() != nil:
			return 0
		case errors.Is(err, mq.ErrConnectionBroken) || errors.Is(err, mq.ErrClosed):
			log.Warn("coresim.connection_lost", "bank", bank, "error", err.Error())
		case err != nil:
			fmt.Fprintln(e.Stderr, "zcgw coresim:", err)
			return 1
		}
	}
}

// sameLocation reports whether two database locations are one: two paths
// to one file, or one URL.
func sameLocation(a, b string) bool {
	if store.IsPostgres(a) || store.IsPostgres(b) {
		return a == b
	}
	return filepath.Clean(a) == filepath.Clean(b)
}
