package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/eod"
	"github.com/zcgw/zcgw/jobs/workbook"
	"github.com/zcgw/zcgw/outbox"
)

// The operator path of the posting outbox (issue 4): list a bank's
// postings, and move a BLOCKED posting back to PENDING once the problem is
// resolved, or write it off. Both moves are recorded in EntityStateLog by
// the outbox itself.
func init() {
	register("outbox", command{
		Summary: "list a bank's outbox postings; requeue or write off a BLOCKED one",
		Run:     runOutbox,
		Usage:   outboxUsage,
	})
}

func outboxUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: zcgw outbox list --bank ID [--status S] [--limit N] [--after ID]")
	fmt.Fprintln(w, "       zcgw outbox requeue|writeoff --bank ID --id N --operator NAME --reason TEXT")
	fmt.Fprintln(w, "list shows N rows (default 100) in id order after --after and says how many it did not show;")
	fmt.Fprintln(w, "the next page is --after <the last id shown>. Status: PENDING, CLAIMED, APPLIED, BLOCKED, IN_DOUBT, WRITTEN_OFF.")
}

func runOutbox(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		outboxUsage(e.Stderr)
		return 2
	}
	verb := args[0]
	fs := e.flagSet("outbox " + verb)
	bank := fs.String("bank", "", "bank id whose adapter outbox to use (required)")
	status := fs.String("status", "", "list: only rows in this status (PENDING, CLAIMED, APPLIED, BLOCKED, IN_DOUBT, WRITTEN_OFF)")
	id := fs.Int64("id", 0, "requeue/writeoff: the outbox row id")
	operator := fs.String("operator", "", "requeue/writeoff: who decides (recorded)")
	reason := fs.String("reason", "", "requeue/writeoff: why (recorded)")
	limit := fs.Int("limit", 100, "list: rows per page")
	after := fs.Int64("after", 0, "list: show the rows after this id (the next page)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *bank == "" {
		fmt.Fprintln(e.Stderr, "zcgw outbox: --bank is required")
		return 2
	}
	adb, err := e.locate(ctx, store.AdapterDB(*bank))
	if err != nil {
		fmt.Fprintf(e.Stderr, "zcgw outbox: %v\n", err)
		return 1
	}
	if !adb.Exists {
		fmt.Fprintf(e.Stderr, "zcgw outbox: no adapter database for bank %s: %s does not exist\n", *bank, adb.Name)
		return 1
	}
	db, err := adapter.OpenDB(ctx, adb.Location)
	if err != nil {
		fmt.Fprintf(e.Stderr, "zcgw outbox: %v\n", err)
		return 1
	}
	defer db.Close()
	ob, err := outbox.New(outbox.Config{DB: db, Actor: "OPS"})
	if err != nil {
		fmt.Fprintf(e.Stderr, "zcgw outbox: %v\n", err)
		return 1
	}
	switch verb {
	case "list":
		if *limit <= 0 || *after < 0 {
			fmt.Fprintln(e.Stderr, "zcgw outbox list: --limit must be positive and --after not negative")
			return 2
		}
		f := outbox.Filter{Status: outbox.Status(*status), Bank: *bank, AfterID: *after, Limit: *limit}
		rows, err := ob.List(ctx, f)
		if err != nil {
			fmt.Fprintf(e.Stderr, "zcgw outbox: %v\n", err)
			return 1
		}
		if len(rows) == 0 {
			fmt.Fprintln(e.Stdout, "no outbox rows")
			return 0
		}
		w := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tSTATUS\tREF\tTXID\tACCOUNT\tKIND\tAMOUNT\tSENDS\tREASON\tCASE")
		for _, r := range rows {
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", r.ID, r.Status, r.Posting.Ref, r.Posting.TxID,
				r.Posting.Account, r.Posting.Kind, r.Posting.Amount, r.Sends, r.ReasonCode, r.CaseID)
		}
		w.Flush()
		f.AfterID = rows[len(rows)-1].ID
		more, err := ob.Count(ctx, f)
		if err != nil {
			fmt.Fprintf(e.Stderr, "zcgw outbox: %v\n", err)
			return 1
		}
		if more > 0 {
			next := "zcgw outbox list --bank " + *bank
			if *status != "" {
				next += " --status " + *status
			}
			noun := "rows"
			if more == 1 {
				noun = "row"
			}
			fmt.Fprintf(e.Stdout, "%d more %s not shown; next page: %s --limit %d --after %d\n", more, noun, next, *limit, f.AfterID)
		}
		return 0
	case "requeue", "writeoff":
		if *id == 0 {
			fmt.Fprintln(e.Stderr, "zcgw outbox: --id is required")
			return 2
		}
		move, done := ob.Requeue, "requeued (BLOCKED -> PENDING)"
		if verb == "writeoff" {
			move, done = ob.WriteOff, "written off (BLOCKED -> WRITTEN_OFF)"
		}
		if err := move(ctx, *id, *operator, *reason); err != nil {
			fmt.Fprintf(e.Stderr, "zcgw outbox %s: %v\n", verb, err)
			return 1
		}
		fmt.Fprintf(e.Stdout, "outbox row %s of bank %s %s by %s\n", strconv.FormatInt(*id, 10), *bank, done, *operator)
		return outboxSettleCase(ctx, e, ob, *id, verb, *operator, *reason)
	default:
		fmt.Fprintf(e.Stderr, "zcgw outbox: unknown verb %q (list, requeue, writeoff)\n", verb)
		return 2
	}
}

// outboxSettleCase moves the Case of a posting just requeued (to
// IN_PROGRESS) or written off (RESOLVED once none of its postings is left
// BLOCKED or IN_DOUBT), as a workbook decision does (eod.SettlePostingCase).
func outboxSettleCase(ctx context.Context, e *env, ob *outbox.Outbox, id int64, verb, operator, reason string) int {
	if row, err := ob.Get(ctx, id); err != nil {
		fmt.Fprintf(e.Stderr, "zcgw outbox %s: the posting moved, but reading it back for its Case failed: %v\n", verb, err)
		return 1
	} else if row.CaseID == "" {
		return 0 // no Case: nothing more to do (and no zc.db to open)
	}
	zc, err := e.openCoordinator(ctx)
	if err != nil {
		fmt.Fprintf(e.Stderr, "zcgw outbox %s: the posting moved, but its Case did not: %v\n", verb, err)
		return 1
	}
	defer zc.Close()
	resolution := workbook.Retry
	if verb == "writeoff" {
		resolution = workbook.WriteOff
	}
	detail, err := eod.SettlePostingCase(ctx, zc, cases.New(clock.System{}, nil, 0), ob, id, resolution, operator, reason, "cli outbox "+verb)
	if err != nil {
		fmt.Fprintf(e.Stderr, "zcgw outbox %s: the posting moved, but its Case did not: %v\n", verb, err)
		return 1
	}
	if detail != "" {
		fmt.Fprintln(e.Stdout, detail)
	}
	return 0
}
