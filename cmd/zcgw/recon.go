package main

import (
	"context"
	"fmt"
	"os"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/eod"
	"github.com/zcgw/zcgw/outbox"
)

// zcgw recon apply FILE: apply the decisions of a reviewed reconciliation
// workbook (logic in jobs/eod and jobs/workbook).
func init() {
	register("recon", command{
		Summary: "reconciliation workbook: apply FILE [--date D] [--by WHO]",
		Run:     runRecon,
	})
}

func runRecon(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] != "apply" {
		fmt.Fprintln(e.Stderr, "usage: zcgw recon apply FILE [--date YYYY-MM-DD] [--by WHO]")
		return 2
	}
	fs := e.flagSet("recon apply")
	date := fs.String("date", "", "business date the workbook must be for (default: the latest date EOD closed)")
	by := fs.String("by", os.Getenv("USER"), "operator recorded with each decision")
	// FILE may come before or after the flags.
	rest := args[1:]
	var file string
	if len(rest) > 0 && len(rest[0]) > 0 && rest[0][0] != '-' {
		file, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return 2
	}
	if file == "" && fs.NArg() == 1 {
		file = fs.Arg(0)
	}
	if file == "" {
		fmt.Fprintln(e.Stderr, "zcgw recon apply: FILE is required")
		return 2
	}
	cfg, stores, err := e.folderConfig()
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw recon apply:", err)
		return 1
	}
	db, err := store.OpenCoordinator(ctx, stores.Location(store.CoordinatorDB))
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw recon apply:", err)
		return 1
	}
	defer db.Close()
	if err := eod.EnsureSchema(ctx, db); err != nil {
		fmt.Fprintln(e.Stderr, "zcgw recon apply:", err)
		return 1
	}
	want := *date
	if want == "" {
		if want, err = eod.LatestClosedDate(ctx, db); err != nil || want == "" {
			fmt.Fprintln(e.Stderr, "zcgw recon apply: no business date closed by EOD yet; give --date")
			return 1
		}
	}
	// Every configured bank's adapter database that a node has created.
	outboxes := map[string]*outbox.Outbox{}
	for _, b := range cfg.Banks {
		loc, err := locateIn(ctx, stores, store.AdapterDB(b.BankID))
		if err != nil {
			fmt.Fprintln(e.Stderr, "zcgw recon apply:", err)
			return 1
		}
		if !loc.Exists {
			continue
		}
		adb, err := adapter.OpenDB(ctx, loc.Location)
		if err != nil {
			fmt.Fprintln(e.Stderr, "zcgw recon apply:", err)
			return 1
		}
		defer adb.Close()
		ob, err := outbox.New(outbox.Config{DB: adb, Clock: clock.System{}, Actor: "OPS"})
		if err != nil {
			fmt.Fprintln(e.Stderr, "zcgw recon apply:", err)
			return 1
		}
		outboxes[b.BankID] = ob
	}
	rep, err := eod.ApplyWorkbook(ctx, eod.ApplyConfig{DB: db, DataDir: e.DataDir, Outboxes: outboxes, Cases: cases.New(clock.System{}, nil, 0),
		Operator: *by, Clock: clock.System{}}, file, want)
	for _, a := range rep.Results {
		fmt.Fprintf(e.Stdout, "row %d %s %s: %s %s\n", a.Row, a.Key, a.Resolution, a.Outcome, a.Detail)
	}
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw recon apply:", err)
		return 1
	}
	switch {
	case len(rep.Results) == 0:
		fmt.Fprintf(e.Stdout, "%s: %d exception rows checked, no decisions to apply\n", rep.BusinessDate, rep.Rows)
	case rep.Count(eod.OutcomeAlreadyApplied) == len(rep.Results):
		fmt.Fprintf(e.Stdout, "%s: nothing to do: all %d decisions were applied before\n", rep.BusinessDate, len(rep.Results))
	default:
		fmt.Fprintf(e.Stdout, "%s: %d rows checked, %d decisions: %d applied, %d already applied, %d stale, %d skipped\n",
			rep.BusinessDate, rep.Rows, len(rep.Results), rep.Count(eod.OutcomeApplied), rep.Count(eod.OutcomeAlreadyApplied),
			rep.Count(eod.OutcomeStale), rep.Count(eod.OutcomeSkipped))
	}
	return 0
}
