package main

import (
	"context"
	"fmt"
	"os"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/zclog"
	"github.com/zcgw/zcgw/gateway/node"
)

func init() {
	register("serve", command{
		Summary: "run the gateway, the coordinator and the banks' adapters on the embedded defaults",
		Run:     runServe,
	})
}

func runServe(ctx context.Context, e *env, args []string) int {
	fs := e.flagSet("serve")
	addr := fs.String("addr", "", "listen address (default: node.json addr, 127.0.0.1:8080)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	logger := zclog.New(e.Stderr, zclog.Options{})
	opts := node.Options{DataDir: e.DataDir, Addr: *addr, Logger: logger, WatchFiles: true, Schedule: true}
	if os.Getenv("ZC_ALLOW_UNAUTHENTICATED_UI") == "true" {
		cfg, err := node.LoadOrInitConfig(e.DataDir)
		if err != nil {
			fmt.Fprintln(e.Stderr, "zcgw serve:", err)
			return 1
		}
		cfg.AllowUnauthenticatedUI = true
		opts.Config = &cfg
	}
	n, err := node.Start(ctx, opts)
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw serve:", err)
		return 1
	}
	where := "data " + e.DataDir
	if n.Stores.Postgres() {
		where += ", databases in " + store.Redact(n.Stores.URL)
	}
	fmt.Fprintf(e.Stdout, "zcgw serving on %s (%s; credentials in %s/%s)\n", n.URL, where, e.DataDir, node.ConfigFile)
	<-ctx.Done() // main cancels ctx on SIGINT/SIGTERM
	fmt.Fprintln(e.Stdout, "zcgw: shutting down (draining in-flight requests)")
	if err := n.Close(); err != nil {
		fmt.Fprintln(e.Stderr, "zcgw serve:", err)
		return 1
	}
	return 0
}
