package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/store"
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
	})
}

func runOutbox(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(e.Stderr, "usage: zcgw outbox list|requeue|writeoff --bank ID [--status S] [--id N --operator NAME --reason TEXT]")
		return 2
	}
	verb := args[0]
	fs := e.flagSet("outbox " + verb)
	bank := fs.String("bank", "", "bank id whose adapter outbox to use (required)")
	status := fs.String("status", "", "list: only rows in this status (PENDING, CLAIMED, APPLIED, BLOCKED, IN_DOUBT, WRITTEN_OFF)")
	id := fs.Int64("id", 0, "requeue/writeoff: the outbox row id")
	operator := fs.String("operator", "", "requeue/writeoff: who decides (recorded)")
	reason := fs.String("reason", "", "requeue/writeoff: why (recorded)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *bank == "" {
		fmt.Fprintln(e.Stderr, "zcgw outbox: --bank is required")
		return 2
	}
	path := filepath.Join(e.DataDir, "adapter-"+*bank+".db")
	if _, err := os.Stat(path); err != nil {
		fmt.Fprintf(e.Stderr, "zcgw outbox: no adapter database for bank %s at %s: %v\n", *bank, path, err)
		return 1
	}
	db, err := store.Open(ctx, path, adapter.Schema)
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
		rows, err := ob.List(ctx, outbox.Filter{Status: outbox.Status(*status), Bank: *bank})
		if err != nil {
			fmt.Fprintf(e.Stderr, "zcgw outbox: %v\n", err)
			return 1
		}
		w := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tSTATUS\tREF\tTXID\tACCOUNT\tKIND\tAMOUNT\tSENDS\tREASON\tCASE")
		for _, r := range rows {
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", r.ID, r.Status, r.Posting.Ref, r.Posting.TxID,
				r.Posting.Account, r.Posting.Kind, r.Posting.Amount, r.Sends, r.ReasonCode, r.CaseID)
		}
		w.Flush()
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
		return 0
	default:
		fmt.Fprintf(e.Stderr, "zcgw outbox: unknown verb %q (list, requeue, writeoff)\n", verb)
		return 2
	}
}
