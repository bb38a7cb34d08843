package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/params"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/gateway"
	"github.com/zcgw/zcgw/gateway/node"
)

// zcgw params: the PR-* parameter ledger's operator path (coordinator/params).
// On a served folder it goes through the node (GET /internal/params,
// POST /internal/params/{name}); on an unserved one it acts on zc.db here,
// holding the folder's node lock for a change.
func init() {
	register("params", command{
		Summary: "list, show or change the PR-* parameters (HV threshold, limits, timeouts, SLA, skew)",
		Run:     runParams,
		Usage:   paramsUsage,
	})
}

func paramsUsage(w io.Writer) {
	fmt.Fprint(w, `usage: zcgw params list [--bank ID] [--json]
       zcgw params show NAME [--bank ID] [--json]
       zcgw params set NAME VALUE --evidence-ref REF --reason TEXT [--by NAME] [--old VALUE] [--bank ID]

The PR-* parameters (spec 002 §12.9) zcgw reads: PR-HV-THRESHOLD (JPY),
PR-EXEC-TIMEOUT, PR-PAYEE-PROOF-TIMEOUT, PR-SUSPENDED-TIMEOUT (durations),
PR-ADAPTER-DOWN-AFTER (a count), PR-CASE-SLA and PR-SIGNATURE-SKEW (durations),
PR-RTP-ATTEMPT-MAX (a count), PR-RTP-MAX-LIFETIME (a duration) and
PR-RTP-ATTEMPT-SCHEDULE (JST times on the hour or half hour, such as
09:00,12:00,15:00, or none), and per
bank (--bank): PR-H-LIMIT, PR-TX-AMOUNT-LIMIT, PR-DAILY-AMOUNT-LIMIT and
the bank's own PR-HV-THRESHOLD (JPY; "none": no limit, or the system value).
list prints each one's value, whether it is the default, its bounds, who reads
it and its last change; show prints one.
set changes one: VALUE is an integer (JPY, a count, seconds), a duration such
as 90s, 4h, 1h30m, or for a schedule comma-separated JST times. The change applies only while the parameter still has the
value you read (--old, default: the value read just before), is refused outside
the bounds, without --evidence-ref (EVIDENCE_REQUIRED), and for a timeout that
would not stay longer than the orchestrator's work-item lease. It takes effect
at the next use, without a restart, and writes one ParameterChanged entry on
the GLOBAL chain with the old and new values, the evidence_ref, the reason and
who made it. --by defaults to $USER.
When a node serves the data folder the command goes through it.
`)
}

func runParams(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		paramsUsage(e.Stderr)
		return 2
	}
	verb := args[0]
	fs := e.flagSet("params " + verb)
	asJSON := fs.Bool("json", false, "print JSON")
	bank := fs.String("bank", "", "a bank's per-bank values (limits, its own hv_threshold)")
	var evidence, reason, by, old *string
	if verb == "set" {
		evidence = fs.String("evidence-ref", "", "the change's evidence (required; recorded on the GLOBAL chain)")
		reason = fs.String("reason", "", "why (required; recorded)")
		by = fs.String("by", os.Getenv("USER"), "the operator making the change (recorded)")
		old = fs.String("old", "", "the value the change starts from (default: the current value)")
	}
	// Positional arguments come first (NAME VALUE), flags after.
	var pos []string
	rest := args[1:]
	for len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		pos, rest = append(pos, rest[0]), rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return 2
	}
	pos = append(pos, fs.Args()...)
	want := map[string]int{"list": 0, "show": 1, "set": 2}
	n, ok := want[verb]
	if !ok {
		fmt.Fprintf(e.Stderr, "zcgw params: unknown action %q\n\n", verb)
		paramsUsage(e.Stderr)
		return 2
	}
	if len(pos) != n {
		fmt.Fprintf(e.Stderr, "zcgw params %s: want %d argument(s), got %d (zcgw params --help)\n", verb, n, len(pos))
		return 2
	}
	switch verb {
	case "list":
		return paramsList(ctx, e, *bank, *asJSON)
	case "show":
		return paramsShow(ctx, e, params.Name(pos[0]), *bank, *asJSON)
	}
	const recorded = "recorded with the change on the GLOBAL chain"
	if missingFlags(e, "zcgw params set", requiredFlag{"--evidence-ref", *evidence, recorded},
		requiredFlag{"--reason", *reason, recorded}, requiredFlag{"--by", *by, recorded}) {
		return 2
	}
	return paramsSet(ctx, e, params.Change{Name: params.Name(pos[0]), BankID: *bank, EvidenceRef: strings.TrimSpace(*evidence),
		Reason: strings.TrimSpace(*reason), By: strings.TrimSpace(*by)}, pos[1], *old, *asJSON)
}

func paramsFail(e *env, err error) int {
	fmt.Fprintf(e.Stderr, "zcgw params: %v\n", err)
	return 1
}

// readParams reads every parameter (bank's per-bank values when bank is
// set) through the node serving the folder, or from zc.db (the defaults
// when there is none yet, creating nothing).
func readParams(ctx context.Context, e *env, bank string) ([]params.Value, string, error) {
	info, served, err := procid.Running(e.DataDir)
	if err != nil {
		return nil, "", err
	}
	if served {
		var l gateway.ParamList
		path := "/internal/params"
		if bank != "" {
			path += "?bank_id=" + url.QueryEscape(bank)
		}
		if err := callNode(ctx, e, info, http.MethodGet, path, nil, &l); err != nil {
			return nil, "", err
		}
		return l.Parameters, fmt.Sprintf("node %s (pid %d, addr %s)", info.Node, info.PID, info.Addr), nil
	}
	zc, err := e.locate(ctx, store.CoordinatorDB)
	if err != nil {
		return nil, "", err
	}
	if !zc.Exists {
		if bank != "" {
			return nil, "", fmt.Errorf("%s has no %s: no node has run there, so there are no participants (start it once with zcgw serve)", e.DataDir, zc.Name)
		}
		var vs []params.Value
		for _, d := range params.Defs() {
			vs = append(vs, params.DefaultValue(d))
		}
		return vs, e.DataDir + " (no " + zc.Name + " yet: every parameter has its default)", nil
	}
	db, err := store.OpenCoordinator(ctx, zc.Location)
	if err != nil {
		return nil, "", err
	}
	defer db.Close()
	var vs []params.Value
	if bank != "" {
		vs, err = params.ListBank(ctx, db, bank)
	} else {
		vs, err = params.List(ctx, db)
	}
	return vs, store.Redact(zc.Location) + " (no node serves it)", err
}

func paramsList(ctx context.Context, e *env, bank string, asJSON bool) int {
	vs, where, err := readParams(ctx, e, bank)
	if err != nil {
		return paramsFail(e, err)
	}
	if asJSON {
		return printJSON(e, gateway.ParamList{Parameters: vs})
	}
	if bank != "" {
		where = "bank " + bank + ", " + where
	}
	fmt.Fprintf(e.Stdout, "PR-* parameters   [%s]\n", where)
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVALUE\tUNIT\tDEFAULT\tBOUNDS\tCHANGED\tBY\tEVIDENCE")
	for _, v := range vs {
		changed := "-"
		if v.ChangedAt != "" {
			changed = shownStamp(v.ChangedAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Name, v.Display, v.Unit, defaultShown(v),
			strings.ReplaceAll(v.Bounds(), " .. ", ".."), changed, orDash(v.ChangedBy), orDash(v.EvidenceRef))
	}
	tw.Flush()
	return 0
}

func paramsShow(ctx context.Context, e *env, name params.Name, bank string, asJSON bool) int {
	if _, err := params.Lookup(name); err != nil {
		return paramsFail(e, err)
	}
	vs, where, err := readParams(ctx, e, bank)
	if err != nil {
		return paramsFail(e, err)
	}
	for _, v := range vs {
		if v.Name != name {
			continue
		}
		if asJSON {
			return printJSON(e, v)
		}
		printParam(e.Stdout, v)
		fmt.Fprintf(e.Stdout, "source:    %s\n", where)
		return 0
	}
	return paramsFail(e, fmt.Errorf("%s is not in the answer of %s", name, where))
}

func printParam(w io.Writer, v params.Value) {
	def := ""
	if v.IsDefault {
		def = " (the default)"
	}
	name := string(v.Name)
	if v.BankID != "" {
		name += " of bank " + v.BankID
	}
	fmt.Fprintf(w, "%s = %s%s\n", name, v.Display, def)
	fmt.Fprintf(w, "  %s\n", v.Doc)
	fmt.Fprintf(w, "default:   %s   bounds: %s   unit: %s\n", defaultShown(v), v.Bounds(), v.Unit)
	fmt.Fprintf(w, "read by:   %s\n", v.ReadBy)
	if v.ChangedAt != "" {
		fmt.Fprintf(w, "changed:   %s by %s (version %d)\n", shownStamp(v.ChangedAt), v.ChangedBy, v.Version)
		fmt.Fprintf(w, "evidence:  %s\n", v.EvidenceRef)
		fmt.Fprintf(w, "reason:    %s\n", v.Reason)
		fmt.Fprintf(w, "chain:     GLOBAL entry %s\n", v.LogID)
	}
}

// defaultShown is a parameter's default as list and show print it: none
// for a nullable per-bank value, "-" where there is no default.
func defaultShown(v params.Value) string {
	switch {
	case (v.BankID != "" || v.BankOnly) && v.Nullable:
		return "none"
	case v.BankID != "" || v.BankOnly:
		return "-"
	}
	return v.Format(v.Default)
}

func paramsSet(ctx context.Context, e *env, c params.Change, value, old string, asJSON bool) int {
	d, err := params.Lookup(c.Name)
	if err != nil {
		return paramsFail(e, err)
	}
	if d.BankOnly && c.BankID == "" {
		fmt.Fprintf(e.Stderr, "zcgw params set: %s exists per bank only: give --bank ID\n", c.Name)
		return 2
	}
	if _, err := d.Parse(value); err != nil {
		return paramsFail(e, err)
	}
	if old == "" {
		vs, _, err := readParams(ctx, e, c.BankID)
		if err != nil {
			return paramsFail(e, err)
		}
		for _, v := range vs {
			if v.Name == c.Name {
				old = fmt.Sprint(v.Value)
				if v.BankID != "" && v.IsDefault && d.Nullable {
					old = "none"
				}
			}
		}
	}
	info, served, err := procid.Running(e.DataDir)
	if err != nil {
		return paramsFail(e, err)
	}
	var res params.Result
	if served {
		req := gateway.ParamChangeRequest{OldValue: &old, Value: &value, EvidenceRef: c.EvidenceRef, Reason: c.Reason, Operator: c.By, BankID: c.BankID}
		if err := callNode(ctx, e, info, http.MethodPost, "/internal/params/"+url.PathEscape(string(c.Name)), req, &res); err != nil {
			return paramsFail(e, err)
		}
	} else {
		if zc, err := e.locate(ctx, store.CoordinatorDB); err != nil {
			return paramsFail(e, err)
		} else if !zc.Exists {
			return paramsFail(e, fmt.Errorf("%s has no %s: no node has run there, so there is no ledger to change (start it once with zcgw serve)", e.DataDir, zc.Name))
		}
		if c.Old, err = d.Parse(old); err != nil {
			return paramsFail(e, err)
		}
		if c.New, err = d.Parse(value); err != nil {
			return paramsFail(e, err)
		}
		l, closeFn, err := node.OpenParams(ctx, e.DataDir, clock.System{})
		if err != nil {
			return paramsFail(e, err)
		}
		defer closeFn()
		if res, err = l.Set(ctx, c); err != nil {
			return paramsFail(e, err)
		}
	}
	if asJSON {
		return printJSON(e, res)
	}
	v := res.Value
	name := string(v.Name)
	if v.BankID != "" {
		name += " of bank " + v.BankID
	}
	if !res.Changed {
		fmt.Fprintf(e.Stdout, "%s is already %s: nothing changed\n", name, v.Display)
		return 0
	}
	oldShown := old
	if o, err := d.Parse(old); err == nil {
		oldShown = d.Format(o)
		if v.BankID != "" {
			oldShown = d.FormatBank(o)
		}
	}
	fmt.Fprintf(e.Stdout, "%s: %s -> %s (by %s, evidence %s); the change is on the GLOBAL chain (entry %s) and applies from the next use\n",
		name, oldShown, v.Display, v.ChangedBy, v.EvidenceRef, v.LogID)
	return 0
}
