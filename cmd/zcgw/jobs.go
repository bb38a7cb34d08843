package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/gateway"
	"github.com/zcgw/zcgw/gateway/node"
	"github.com/zcgw/zcgw/jobs/jobcli"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

// zcgw jobs: the batch scheduler's ledger and manual runs (logic in
// jobs/jobcli). This file only wires the node to it: the job bodies
// (gateway/node), how a served folder's node is reached, and the terminal.
func init() {
	register("jobs", command{
		Summary: "batch jobs: list schedules, run NAME [--date D], history, show RUN",
		Usage:   func(w io.Writer) { io.WriteString(w, jobcli.Usage) },
		Run: func(ctx context.Context, e *env, args []string) int {
			fs := e.flagSet("jobs")
			fs.Usage = func() { e.Stderr.Write([]byte(jobcli.Usage)) }
			if err := fs.Parse(args); err != nil {
				return 2
			}
			progress := scheduler.TerminalWriter(os.Stderr)
			if e.Stderr != os.Stderr {
				progress = nil
			}
			env := jobcli.Env{DataDir: e.DataDir, Stdout: e.Stdout, Stderr: e.Stderr, Clock: clock.System{}, Progress: progress,
				JobLog: true, StderrIsTerminal: progress != nil, Open: openJobNode, Authorize: authorizeNode,
				Ledger: func(dataDir string) (string, error) {
					l, err := node.Stores(dataDir)
					return l.Location(store.CoordinatorDB), err
				},
				Catalog: func(ctx context.Context, dataDir string) ([]string, error) {
					return node.JobCatalog(ctx, dataDir, clock.System{})
				}}
			return jobcli.Main(ctx, env, fs.Args())
		},
	})
}

// openJobNode opens the node's components on an unserved data folder,
// without its workers, on a loopback port of its own, for a job run in
// this process. It takes the folder's node lock, so a `zcgw serve` started
// meanwhile is refused until the run ends.
func openJobNode(ctx context.Context, dataDir string, log *slog.Logger) (*scheduler.Registry, func(), error) {
	n, err := node.Start(ctx, node.Options{DataDir: dataDir, Addr: "127.0.0.1:0", NoWorkers: true, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	return n.Jobs.Registry(), func() { n.Close() }, nil
}

// authorizeNode puts the served folder's operator credential (node.json
// cron_secret) on a request to its node's /internal routes.
func authorizeNode(dataDir string, req *http.Request) error {
	cfg, err := node.LoadOrInitConfig(dataDir)
	if err != nil {
		return err
	}
	req.Header.Set(gateway.HeaderCronSecret, cfg.CronSecret)
	return nil
}
