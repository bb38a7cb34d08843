package main

import (
	"context"
	"os"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/gateway/node"
	"github.com/zcgw/zcgw/jobs/jobcli"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

// zcgw jobs: the batch scheduler's ledger and manual runs (logic in
// jobs/jobcli).
func init() {
	register("jobs", command{
		Summary: "batch jobs: list schedules, run NAME [--date D], history, show RUN",
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
			logger, closeLog, err := jobcli.NewLogger(e.DataDir, e.Stderr, progress != nil)
			if err != nil {
				e.Stderr.Write([]byte("zcgw jobs: " + err.Error() + "\n"))
				return 1
			}
			defer closeLog()
			env := jobcli.Env{DataDir: e.DataDir, Stdout: e.Stdout, Stderr: e.Stderr,
				Clock: clock.System{}, Logger: logger, Progress: progress}
			if rest := fs.Args(); len(rest) > 0 && rest[0] == "run" {
				// Running a job needs its body and what it works on (the
				// coordinator, the adapters and their cores): open the node's
				// components on the data folder, without its workers, on a
				// loopback port of its own.
				n, err := node.Start(ctx, node.Options{DataDir: e.DataDir, Addr: "127.0.0.1:0", NoWorkers: true, Logger: logger})
				if err != nil {
					e.Stderr.Write([]byte("zcgw jobs: " + err.Error() + "\n"))
					return 1
				}
				defer n.Close()
				env.Registry = n.Jobs.Registry()
			}
			return jobcli.Main(ctx, env, fs.Args())
		},
	})
}
