package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
	"github.com/zcgw/zcgw/gateway"
	"github.com/zcgw/zcgw/gateway/node"
)

// zcgw mode: the operator's read-only controls of spec 000 ch. 6. A change
// is the sysmode Controller's guarded update with its GLOBAL-chain event in
// the same transaction. On a served folder the command goes through the
// node (GET /internal/system-mode, POST .../bcp-activate|bcp-deactivate);
// on an unserved one it acts on zc.db here, holding the folder's node lock.
func init() {
	register("mode", command{
		Summary: "show the system mode; declare or lift BCP read-only (bcp on|off --reason)",
		Run:     runMode,
		Usage:   modeUsage,
	})
}

func modeUsage(w io.Writer) {
	fmt.Fprint(w, `usage: zcgw mode show [--json]
       zcgw mode bcp on  --reason TEXT [--by NAME]
       zcgw mode bcp off --reason TEXT [--by NAME]

show prints the effective mode (NORMAL, BCP_READONLY, QUORUM_LOSS_READONLY) and,
for each flag, whether it is on, since when, by whom and why.
bcp on declares BCP read-only: every write (new transfers, participant changes)
is refused with SYSTEM_BCP_READ_ONLY while every read keeps working. bcp off
lifts it (QUORUM_LOSS_READONLY stays until quorum returns: only a quorum report,
POST /internal/system-mode/quorum-report, moves it). Each change writes one
SystemBcpActivated/SystemBcpDeactivated event on the GLOBAL chain; a change to
the value the flag already has writes nothing and exits 0.
--reason is required; --by defaults to $USER.
When a node serves the data folder the command goes through it.
`)
}

func runMode(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		modeUsage(e.Stderr)
		return 2
	}
	switch verb := args[0]; verb {
	case "show":
		fs := e.flagSet("mode show")
		asJSON := fs.Bool("json", false, "print the mode as JSON")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		if fs.NArg() > 0 {
			fmt.Fprintf(e.Stderr, "zcgw mode show: unexpected argument %q\n", fs.Arg(0))
			return 2
		}
		return modeShow(ctx, e, *asJSON)
	case "bcp":
		if len(args) < 2 || (args[1] != "on" && args[1] != "off") {
			fmt.Fprintln(e.Stderr, "zcgw mode bcp: say on or off (zcgw mode bcp on --reason TEXT)")
			return 2
		}
		on := args[1] == "on"
		fs := e.flagSet("mode bcp " + args[1])
		reason := fs.String("reason", "", "why (required; recorded on the GLOBAL chain)")
		by := fs.String("by", os.Getenv("USER"), "the operator making the change (recorded)")
		if err := fs.Parse(args[2:]); err != nil {
			return 2
		}
		if fs.NArg() > 0 {
			fmt.Fprintf(e.Stderr, "zcgw mode bcp %s: unexpected argument %q\n", args[1], fs.Arg(0))
			return 2
		}
		if missingFlags(e, "zcgw mode bcp "+args[1], requiredFlag{"--reason", *reason, "it is recorded with the change"},
			requiredFlag{"--by", *by, "$USER is not set"}) {
			return 2
		}
		return modeBCP(ctx, e, on, strings.TrimSpace(*by), strings.TrimSpace(*reason))
	default:
		fmt.Fprintf(e.Stderr, "zcgw mode: unknown action %q\n\n", verb)
		modeUsage(e.Stderr)
		return 2
	}
}

func modeFail(e *env, err error) int {
	fmt.Fprintf(e.Stderr, "zcgw mode: %v\n", err)
	return 1
}

func modeShow(ctx context.Context, e *env, asJSON bool) int {
	info, served, err := procid.Running(e.DataDir)
	if err != nil {
		return modeFail(e, err)
	}
	var v sysmode.View
	var where string
	switch {
	case served:
		if err := callNode(ctx, e, info, http.MethodGet, "/internal/system-mode", nil, &v); err != nil {
			return modeFail(e, err)
		}
		where = fmt.Sprintf("node %s (pid %d, addr %s)", info.Node, info.PID, info.Addr)
	default:
		zc, err := e.locate(ctx, store.CoordinatorDB)
		if err != nil {
			return modeFail(e, err)
		}
		if !zc.Exists {
			// Nothing to read, and nothing is created: no node ever ran here.
			v = sysmode.View{Modes: []sysmode.Mode{sysmode.Normal}, Writable: true,
				Flags: []sysmode.FlagState{{Mode: sysmode.BCPReadOnly}, {Mode: sysmode.QuorumLossReadOnly}}}
			where = e.DataDir + " (no " + zc.Name + " yet: no node has run there)"
			break
		}
		db, err := store.OpenCoordinator(ctx, zc.Location)
		if err != nil {
			return modeFail(e, err)
		}
		defer db.Close()
		if err := db.Read(ctx, func(tx *store.Tx) (err error) { v, err = sysmode.ReadView(ctx, tx); return err }); err != nil {
			return modeFail(e, err)
		}
		where = store.Redact(zc.Location) + " (no node serves it)"
	}
	if asJSON {
		b, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintf(e.Stdout, "%s\n", b)
		return 0
	}
	printMode(e.Stdout, v, where)
	return 0
}

func modeBCP(ctx context.Context, e *env, on bool, by, reason string) int {
	info, served, err := procid.Running(e.DataDir)
	if err != nil {
		return modeFail(e, err)
	}
	var ch gateway.ModeChange
	if served {
		path := "/internal/system-mode/bcp-deactivate"
		if on {
			path = "/internal/system-mode/bcp-activate"
		}
		if err := callNode(ctx, e, info, http.MethodPost, path, gateway.BCPRequest{Operator: by, Reason: reason}, &ch); err != nil {
			return modeFail(e, err)
		}
	} else {
		if zc, err := e.locate(ctx, store.CoordinatorDB); err != nil {
			return modeFail(e, err)
		} else if !zc.Exists {
			return modeFail(e, fmt.Errorf("%s has no %s: no node has run there, so there is no mode to change (start it once with zcgw serve)", e.DataDir, zc.Name))
		}
		ctl, closeFn, err := node.OpenModes(ctx, e.DataDir, clock.System{})
		if err != nil {
			return modeFail(e, err)
		}
		defer closeFn()
		change := ctl.DeactivateBCP
		if on {
			change = ctl.ActivateBCP
		}
		if _, ch.Changed, err = change(ctx, by, reason); err != nil {
			return modeFail(e, err)
		}
		if ch.Mode, err = ctl.Show(ctx); err != nil {
			return modeFail(e, err)
		}
	}
	state := map[bool]string{true: "on", false: "off"}[on]
	bcp := flagOf(ch.Mode, sysmode.BCPReadOnly)
	if ch.Changed {
		fmt.Fprintf(e.Stdout, "BCP_READONLY is now %s (%s by %s: %s); the change is on the GLOBAL chain\n",
			state, shownStamp(bcp.ChangedAt), bcp.Actor, bcp.Reason)
	} else if bcp.ChangedAt == "" {
		fmt.Fprintf(e.Stdout, "BCP_READONLY was already %s (never declared): nothing changed\n", state)
	} else {
		fmt.Fprintf(e.Stdout, "BCP_READONLY was already %s (since %s by %s: %s): nothing changed\n",
			state, shownStamp(bcp.ChangedAt), orDash(bcp.Actor), orDash(bcp.Reason))
	}
	fmt.Fprintf(e.Stdout, "mode: %s\n", effective(ch.Mode))
	return 0
}

// effective is the mode line: the active modes and what they mean.
func effective(v sysmode.View) string {
	names := make([]string, len(v.Modes))
	for i, m := range v.Modes {
		names[i] = string(m)
	}
	s := strings.Join(names, "+")
	if v.Writable {
		return s + " (writes accepted)"
	}
	return s + " (read-only: writes refused, reads served)"
}

func printMode(w io.Writer, v sysmode.View, where string) {
	fmt.Fprintf(w, "mode: %s   [%s]\n", effective(v), where)
	flags := append([]sysmode.FlagState(nil), v.Flags...)
	sort.Slice(flags, func(i, j int) bool { return flags[i].Mode < flags[j].Mode })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FLAG\tSTATE\tSINCE\tBY\tWHY")
	for _, f := range flags {
		state := map[bool]string{true: "ON", false: "off"}[f.Active]
		why := f.Reason
		if up, ok := f.Detail["replicas_up"]; ok {
			why = fmt.Sprintf("%s (%v of %v replicas up, %v needed)", why, up, f.Detail["replicas_configured"], f.Detail["required"])
		}
		since := "-"
		if f.ChangedAt != "" {
			since = shownStamp(f.ChangedAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Mode, state, since, orDash(f.Actor), orDash(why))
	}
	tw.Flush()
}

func flagOf(v sysmode.View, m sysmode.Mode) sysmode.FlagState {
	for _, f := range v.Flags {
		if f.Mode == m {
			return f
		}
	}
	return sysmode.FlagState{Mode: m}
}

// shownStamp prints a stored stamp as RFC3339 UTC to the second.
func shownStamp(s string) string {
	if t, err := clock.ParseStamp(s); err == nil {
		return t.UTC().Format(time.RFC3339)
	}
	return orDash(s)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
