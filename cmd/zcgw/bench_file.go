package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/zcgw/zcgw/gateway/bench"
)

// runBenchFile is `zcgw bench --file N` (gateway/bench.RunFile).
func runBenchFile(ctx context.Context, e *env, dir string, deploy bench.Deployment, records, banks int, acceptedOnly, asJSON bool) int {
	rep, err := bench.RunFile(ctx, bench.FileOptions{Records: records, Banks: banks, DataDir: dir, Deployment: deploy, Progress: e.Stderr, AcceptedOnly: acceptedOnly})
	var br *bench.Breach
	if err != nil && !errors.As(err, &br) {
		fmt.Fprintln(e.Stderr, "zcgw bench:", err)
		return 1
	}
	if asJSON {
		if code := printJSON(e, struct {
			bench.FileReport
			Breach string `json:"breach,omitempty"`
		}{rep, breachText(br)}); code != 0 {
			return code
		}
	} else {
		printBenchFile(e.Stdout, rep, acceptedOnly)
	}
	if br != nil {
		fmt.Fprintln(e.Stderr, "zcgw bench: FAILED:", br)
		return 1
	}
	if !asJSON {
		fmt.Fprintf(e.Stdout, "invariants held: %s (%d chains verified)\n", strings.Join(rep.Invariants, ", "), rep.ChainsVerified)
	}
	return 0
}

func printBenchFile(w io.Writer, r bench.FileReport, acceptedOnly bool) {
	fmt.Fprintf(w, "zcgw bench: a %d-record 総合振込 file (%d bytes) dropped by bank 001, %d banks, store %s\n", r.Records, r.FileBytes, r.Banks, r.Store)
	fmt.Fprintf(w, "accepted           %.2fs after the done-marker: %.0f records/s (every record a BULK transfer in RECEIVED)\n", r.AcceptedSeconds, r.AcceptedPerSec)
	if acceptedOnly {
		fmt.Fprintf(w, "commits up to accepted (= fsyncs: WAL, synchronous=FULL):\n")
		for _, d := range r.DBs {
			if d.Commits > 0 {
				fmt.Fprintf(w, "  %-22s %8d\n", d.File, d.Commits)
			}
		}
		fmt.Fprintf(w, "CPU                %.2f s per 1,000 records (user+sys of this process, drop to accepted)\n", r.CPUPer1000)
		fmt.Fprintf(w, "peak RSS           %.1f MiB (up to accepted)\n", r.PeakRSSMB)
		return
	}
	fmt.Fprintf(w, "bulk window        %.2fs (the bulk-window job: H reserved, transfers handed to the orchestrator)\n", r.WindowSeconds)
	fmt.Fprintf(w, "settled            %d (cancelled %d) %.2fs after the done-marker: %.1f settled transfers/s\n", r.Settled, r.Cancelled, r.SettledSeconds, r.SettledPerSec)
	fmt.Fprintf(w, "result file        %.2fs after the done-marker\n", r.ResultSeconds)
	printDBCosts(w, r.Report)
	fmt.Fprintf(w, "CPU                %.2f s per 1,000 records (user+sys of this process, drop to settled)\n", r.CPUPer1000)
	fmt.Fprintf(w, "peak RSS           %.1f MiB\n", r.PeakRSSMB)
}
