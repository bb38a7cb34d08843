package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/gateway"
	"github.com/zcgw/zcgw/jobs/eod"
)

// zcgw cases: the back office's Case list and decisions (issue 11 item 3).
// Reads use zc.db directly; a resolve or close on a folder a node serves
// goes through the node's POST /api/cases/{id}/{resolve|close} (so it is
// written to AccessAuditLog), else straight into zc.db. Either way the move
// is one guarded transition with its EntityStateLog row (cases.DecideTx).
func init() {
	register("cases", command{
		Summary: "list, show, resolve or close exception Cases",
		Run:     runCases,
		Usage:   casesUsage,
	})
}

func casesUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: zcgw cases list [--status S] [--bank ID] [--cause C] [--sla-before T | --overdue] [--limit N] [--after CASE] [--json]")
	fmt.Fprintln(w, "       zcgw cases show CASE [--json]")
	fmt.Fprintln(w, "       zcgw cases resolve|close CASE --note TEXT [--by WHO]")
	fmt.Fprintln(w, "       zcgw cases resolve CASE --drift adjust|accept --note TEXT [--by WHO]")
	fmt.Fprintln(w, "list shows the Cases still open (OPEN, IN_PROGRESS, ESCALATED) by SLA deadline, most urgent first;")
	fmt.Fprintln(w, "--status picks one state (OPEN, IN_PROGRESS, ESCALATED, RESOLVED) or ALL. --bank is the bank that caused")
	fmt.Fprintln(w, "it, --cause a reason code (RECON_DRIFT) or a cause key (CAUSE:001:BANK_ERROR), --sla-before an RFC3339")
	fmt.Fprintln(w, "time, --overdue the SLA passed. It shows N rows (default 100) and says how many it did not show; the next")
	fmt.Fprintln(w, "page is --after <the last case shown>.")
	fmt.Fprintln(w, "resolve (the cause was fixed) and close (ended without a fix: accepted, duplicate) move the Case to")
	fmt.Fprintln(w, "RESOLVED with the note and who did it in its history; a RESOLVED Case is final. On a folder a node")
	fmt.Fprintln(w, "serves, they go through the node (recorded in its access audit log).")
	fmt.Fprintln(w, "A RECON_DRIFT Case ends with its drift: --drift adjust queues an adjusting posting in the bank's outbox")
	fmt.Fprintln(w, "that brings the core back to the shadow balance; --drift accept has the shadow adopt the core balance.")
	fmt.Fprintln(w, "Both resolve the adapter's drift row and the Case, each with the note (run again after a failure: nothing")
	fmt.Fprintln(w, "is posted twice). On a served folder this too goes through the node.")
}

func runCases(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		casesUsage(e.Stderr)
		return 2
	}
	verb := args[0]
	fs := e.flagSet("cases " + verb)
	status := fs.String("status", "", "list: OPEN, IN_PROGRESS, ESCALATED, RESOLVED or ALL (default: every state but RESOLVED)")
	bank := fs.String("bank", "", "list: the bank that caused the Case")
	cause := fs.String("cause", "", "list: a reason code or a cause key")
	slaBefore := fs.String("sla-before", "", "list: only Cases whose SLA deadline is before this RFC3339 time")
	overdue := fs.Bool("overdue", false, "list: only Cases whose SLA deadline has passed")
	limit := fs.Int("limit", 100, "list: rows per page (1..1000)")
	after := fs.String("after", "", "list: show the Cases after this one (the next page)")
	asJSON := fs.Bool("json", false, "list, show: print JSON")
	note := fs.String("note", "", "resolve, close: why (required; recorded)")
	by := fs.String("by", os.Getenv("USER"), "resolve, close: who decides (recorded)")
	purpose := fs.String("purpose", "P01", "resolve, close on a served folder: the X-Purpose-Code sent to the node")
	drift := fs.String("drift", "", "resolve a RECON_DRIFT Case: adjust (adjusting posting) or accept (the core balance)")
	// CASE may come before or after the flags.
	rest := args[1:]
	var id string
	if len(rest) > 0 && rest[0] != "" && rest[0][0] != '-' {
		id, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return 2
	}
	if id == "" && fs.NArg() == 1 {
		id = fs.Arg(0)
	} else if fs.NArg() > 0 {
		fmt.Fprintf(e.Stderr, "zcgw cases %s: unexpected arguments %q\n", verb, fs.Args())
		return 2
	}
	switch verb {
	case "list":
		q := url.Values{"status": {*status}, "bank": {*bank}, "cause": {*cause}, "sla_before": {*slaBefore},
			"after": {*after}, "limit": {strconv.Itoa(*limit)}}
		if *overdue {
			q.Set("overdue", "true")
		}
		return casesList(ctx, e, q, *asJSON)
	case "show":
		if id == "" {
			fmt.Fprintln(e.Stderr, "zcgw cases show: CASE is required")
			return 2
		}
		return casesShow(ctx, e, id, *asJSON)
	case "resolve", "close":
		if id == "" {
			fmt.Fprintf(e.Stderr, "zcgw cases %s: CASE is required\n", verb)
			return 2
		}
		if missingFlags(e, "zcgw cases "+verb, requiredFlag{"--by", *by, "who decides; recorded"},
			requiredFlag{"--note", *note, "why; recorded"}) {
			return 2
		}
		switch {
		case *drift != "" && (verb != "resolve" || (*drift != "adjust" && *drift != "accept")):
			fmt.Fprintf(e.Stderr, "zcgw cases %s: --drift is adjust or accept, with resolve\n", verb)
			return 2
		case *drift != "":
			return casesSettleDrift(ctx, e, id, *drift, *by, *note, *purpose)
		}
		return casesDecide(ctx, e, verb, id, *by, *note, *purpose)
	default:
		fmt.Fprintf(e.Stderr, "zcgw cases: unknown verb %q (list, show, resolve, close)\n", verb)
		return 2
	}
}

// errNoZC: the data folder has no zc.db yet, so no Case either (a read
// does not create one).
var errNoZC = errors.New("no zc.db yet")

func casesDB(ctx context.Context, e *env) (*store.DB, error) {
	zc, err := e.locate(ctx, store.CoordinatorDB)
	if err != nil {
		return nil, err
	}
	if !zc.Exists {
		return nil, fmt.Errorf("%w in %s", errNoZC, e.DataDir)
	}
	return store.OpenCoordinator(ctx, zc.Location)
}

func casesFail(e *env, verb string, err error) int {
	fmt.Fprintf(e.Stderr, "zcgw cases %s: %v\n", verb, err)
	return 1
}

func casesList(ctx context.Context, e *env, q url.Values, asJSON bool) int {
	f, err := gateway.CaseFilterOf(q, clock.System{}.Now())
	if err != nil {
		fmt.Fprintf(e.Stderr, "zcgw cases list: %v\n", err)
		return 2
	}
	db, err := casesDB(ctx, e)
	if errors.Is(err, errNoZC) {
		fmt.Fprintf(e.Stdout, "no Cases (%v)\n", err)
		return 0
	}
	if err != nil {
		return casesFail(e, "list", err)
	}
	defer db.Close()
	var p cases.Page
	if err := db.Read(ctx, func(tx *store.Tx) error {
		var err error
		p, err = cases.List(ctx, tx, f)
		return err
	}); err != nil {
		return casesFail(e, "list", err)
	}
	if asJSON {
		out := gateway.CaseList{Cases: []gateway.CaseView{}, More: p.More}
		for _, k := range p.Cases {
			out.Cases = append(out.Cases, gateway.CaseViewOf(k))
		}
		return printJSON(e, out)
	}
	if len(p.Cases) == 0 {
		fmt.Fprintln(e.Stdout, "no Cases")
		return 0
	}
	w := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CASE\tSTATE\tREASON\tBANK\tSLA (UTC)\tTXNS\tTXID\tOPENED (UTC)")
	for _, k := range p.Cases {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", k.CaseID, k.State, k.ReasonCode, dash(k.CausePartyID),
			shortStamp(k.SLADeadline), k.OccurrenceCount, dash(k.RelatedTxID), shortStamp(k.CreatedAt))
	}
	w.Flush()
	if p.More > 0 {
		next := "zcgw cases list"
		for _, k := range []string{"status", "bank", "cause", "sla_before"} {
			if v := q.Get(k); v != "" {
				next += " --" + strings.ReplaceAll(k, "_", "-") + " " + v
			}
		}
		if q.Get("overdue") != "" {
			next += " --overdue"
		}
		noun := "Cases"
		if p.More == 1 {
			noun = "Case"
		}
		fmt.Fprintf(e.Stdout, "%d more %s not shown; next page: %s --limit %s --after %s\n", p.More, noun, next, q.Get("limit"),
			p.Cases[len(p.Cases)-1].CaseID)
	}
	return 0
}

func casesShow(ctx context.Context, e *env, id string, asJSON bool) int {
	db, err := casesDB(ctx, e)
	if err != nil {
		return casesFail(e, "show", err)
	}
	defer db.Close()
	var d cases.Detail
	if err := db.Read(ctx, func(tx *store.Tx) error {
		var err error
		d, err = cases.Show(ctx, tx, id)
		return err
	}); err != nil {
		return casesFail(e, "show", err)
	}
	v := gateway.CaseDetailOf(d)
	if asJSON {
		return printJSON(e, v)
	}
	w := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	for _, kv := range [][2]string{{"case", v.CaseID}, {"state", v.State}, {"reason", v.ReasonCode}, {"cause", dash(v.CauseKey)},
		{"bank", dash(v.BankID)}, {"detected by", dash(v.DetectionPath)}, {"description", dash(v.Description)},
		{"opened by", v.OpenedBy}, {"transactions", strings.TrimSpace(fmt.Sprintf("%d %s", v.OccurrenceCount, strings.Join(v.Links, " ")))},
		{"sla deadline", shortStamp(v.SLADeadline)}, {"opened", shortStamp(v.CreatedAt)}, {"resolved", shortStamp(v.ResolvedAt)}} {
		fmt.Fprintf(w, "%s:\t%s\n", kv[0], kv[1])
	}
	w.Flush()
	fmt.Fprintln(e.Stdout, "history:")
	w = tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	for _, h := range v.History {
		fmt.Fprintf(w, "  %s\t%s\t%s -> %s\t%s\t%s\t%s\n", shortStamp(h.OccurredAt), h.EventType, dash(h.From), h.To,
			dash(h.ReasonCode), dash(h.Actor), h.Payload)
	}
	w.Flush()
	return 0
}

func casesDecide(ctx context.Context, e *env, verb, id, by, note, purpose string) int {
	decision := map[string]string{"resolve": cases.DecisionResolved, "close": cases.DecisionClosed}[verb]
	info, served, err := procid.Running(e.DataDir)
	if err != nil {
		return casesFail(e, verb, err)
	}
	var out gateway.CaseDecisionResponse
	via := ""
	if served {
		hdr := http.Header{gateway.HeaderPurposeCode: {purpose}}
		if err := callNodeWith(ctx, e, info, http.MethodPost, "/api/cases/"+url.PathEscape(id)+"/"+verb, hdr,
			gateway.CaseDecisionRequest{Operator: by, Note: note}, &out); err != nil {
			return casesFail(e, verb, err)
		}
		via = fmt.Sprintf(" (through node %s)", info.Node)
	} else {
		db, err := casesDB(ctx, e)
		if err != nil {
			return casesFail(e, verb, err)
		}
		defer db.Close()
		d, err := cases.New(clock.System{}, nil, 0).Decide(ctx, db, cases.Decide{CaseID: id, Decision: decision,
			Note: strings.TrimSpace(note), Operator: strings.TrimSpace(by), Source: "cli"})
		if err != nil {
			return casesFail(e, verb, err)
		}
		out = gateway.CaseDecisionResponse{CaseID: d.CaseID, Decision: decision, StateFrom: d.From, StateTo: d.To}
	}
	fmt.Fprintf(e.Stdout, "case %s %s -> %s (%s by %s)%s\n", out.CaseID, out.StateFrom, out.StateTo, out.Decision, by, via)
	return 0
}

// casesSettleDrift ends a RECON_DRIFT Case with its drift (jobs/eod
// SettleDriftCase): through the node serving the folder (POST
// /api/cases/{id}/resolve with "drift"), else in zc.db and the Case's
// bank's adapter database.
func casesSettleDrift(ctx context.Context, e *env, id, drift, by, note, purpose string) int {
	info, served, err := procid.Running(e.DataDir)
	if err != nil {
		return casesFail(e, "resolve", err)
	}
	var out gateway.CaseDecisionResponse
	via := ""
	if served {
		hdr := http.Header{gateway.HeaderPurposeCode: {purpose}}
		if err := callNodeWith(ctx, e, info, http.MethodPost, "/api/cases/"+url.PathEscape(id)+"/resolve", hdr,
			gateway.CaseDecisionRequest{Operator: by, Note: note, Drift: drift}, &out); err != nil {
			return casesFail(e, "resolve", err)
		}
		via = fmt.Sprintf(" (through node %s)", info.Node)
	} else if out, err = casesSettleDriftHere(ctx, e, id, drift, by, note); err != nil {
		return casesFail(e, "resolve", err)
	}
	what := "accepted: the shadow adopted the core balance"
	if out.PostingRef != "" {
		what = fmt.Sprintf("adjusting %s of %d queued in the bank's outbox (ref %s)",
			map[bool]string{true: "debit", false: "credit"}[out.Drift > 0], max(out.Drift, -out.Drift), out.PostingRef)
	}
	if out.DriftAlready {
		what = "the drift was settled before"
	}
	fmt.Fprintf(e.Stdout, "drift %s of %+d on %s: %s%s\n", out.DriftID, out.Drift, out.CoreAccount, what, via)
	if out.StateFrom == "" {
		fmt.Fprintf(e.Stdout, "case %s was already RESOLVED\n", id)
	} else {
		fmt.Fprintf(e.Stdout, "case %s %s -> %s (%s by %s)\n", id, out.StateFrom, out.StateTo, out.Decision, by)
	}
	return 0
}

func casesSettleDriftHere(ctx context.Context, e *env, id, drift, by, note string) (gateway.CaseDecisionResponse, error) {
	var out gateway.CaseDecisionResponse
	db, err := casesDB(ctx, e)
	if err != nil {
		return out, err
	}
	defer db.Close()
	var k cases.Case
	if err := db.Read(ctx, func(tx *store.Tx) error {
		var err error
		k, err = cases.Get(ctx, tx, id)
		return err
	}); err != nil {
		return out, err
	}
	if k.CausePartyID == "" {
		return out, fmt.Errorf("case %s (%s) names no bank with an adapter database in %s", id, k.ReasonCode, e.DataDir)
	}
	adb, err := e.locate(ctx, store.AdapterDB(k.CausePartyID))
	if err != nil {
		return out, err
	}
	if !adb.Exists {
		return out, fmt.Errorf("case %s (%s) names no bank with an adapter database in %s", id, k.ReasonCode, e.DataDir)
	}
	a, err := adapter.Open(ctx, adapter.Config{BankID: k.CausePartyID, DBPath: adb.Location})
	if err != nil {
		return out, err
	}
	defer a.Close()
	how := map[string]string{"adjust": adapter.DriftAdjust, "accept": adapter.DriftAccept}[drift]
	st, err := eod.SettleDriftCase(ctx, db, cases.New(clock.System{}, nil, 0), a, id, how, strings.TrimSpace(by), strings.TrimSpace(note), "cli")
	if err != nil {
		return out, err
	}
	return gateway.CaseDriftResponse(id, st), nil
}

// printJSON writes v as indented JSON to stdout: the --json form of every
// command's answer.
func printJSON(e *env, v any) int {
	enc := json.NewEncoder(e.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintln(e.Stderr, "zcgw:", err)
		return 1
	}
	return 0
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shortStamp prints a stored stamp to the second (RFC3339 UTC).
func shortStamp(s string) string {
	if s == "" {
		return "-"
	}
	t, err := clock.ParseStamp(s)
	if err != nil {
		return s
	}
	return t.UTC().Truncate(time.Second).Format(time.RFC3339)
}
