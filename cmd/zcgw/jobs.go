package main

import (
	"context"
	"os"

	"github.com/zcgw/zcgw/coordinator/clock"
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
			return jobcli.Main(ctx, jobcli.Env{DataDir: e.DataDir, Stdout: e.Stdout, Stderr: e.Stderr,
				Clock: clock.System{}, Logger: logger, Progress: progress}, fs.Args())
		},
	})
}
