package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/gateway"
	"github.com/zcgw/zcgw/gateway/node"
	"github.com/zcgw/zcgw/jobs/dns"
)

// zcgw refund and zcgw dns: the back office's reversal of a failed
// transfer (orchestrator RequestRefund) and the DNS HOLD operations
// (fund-and-resume, cancel). On a folder a node serves, they go through
// that node's /internal routes with its operator credential; otherwise
// they start the folder's node components in this process (no workers,
// loopback port, the node lock held for the duration) and act directly.

const refundUsage = `usage:
  zcgw refund TXID --by OPERATOR [--evidence REF] [--note TEXT]
  zcgw refund show TXID

Reverses a FAILED_EXECUTION transfer whose payer was debited: the payer
bank is sent compensate and queues a REVERSAL posting in its outbox, so the
payer's core balance is restored once. The proof that the credit failed is
the payee bank's refusal on the transfer's chain; without one, --evidence
names the outside evidence (else EVIDENCE_REQUIRED and a Case is opened).
Asking again shows the same reversal and sends nothing new.

Exit status: 0 reversed (or already), 3 decided but the payer bank has not
answered yet (the node retries it), 1 refused or failed, 2 usage.
`

const dnsUsage = `usage:
  zcgw dns fund CYCLE_ID [--bank BANK --amount N]
  zcgw dns cancel CYCLE_ID --reason TEXT --by OPERATOR

fund credits bridge liquidity to the central-bank account of each short net
debtor of a HOLD_ACTIVE cycle (exactly its gap; or N to --bank) and resumes
the cycle: it settles once every gap is covered.
cancel ends a HOLD_ACTIVE cycle without settling it: its transactions go
back to ZC's ownership and the date's next cycle nets them again.
`

const correctUsage = `usage:
  zcgw correct TXID --value V --by OPERATOR --approved-by OPERATOR --evidence REF [--field payee_account_hash] [--note TEXT]

Misrecord-correct: the payee account of a transfer was recorded wrong, so
the payee bank refused the credit (SUSPENDED / EXEC_CREDIT_FAILED; the payer
is debited). Two operators correct it with evidence; the transfer is sent to
the corrected account and settles. Refused: EVIDENCE_REQUIRED,
FOUR_EYES_REQUIRED, NOT_CORRECTABLE, B_CONFIRMED (credited: reverse it),
WINDOW_EXPIRED (FAILED_EXECUTION: zcgw refund).
`

func init() {
	register("correct", command{
		Summary: "misrecord-correct: fix a transfer's misrecorded payee account (four eyes, evidence)",
		Usage:   func(w io.Writer) { io.WriteString(w, correctUsage) },
		Run:     runCorrect,
	})
	register("refund", command{
		Summary: "reverse a failed transfer: refund its payer exactly once, or show the reversal",
		Usage:   func(w io.Writer) { io.WriteString(w, refundUsage) },
		Run:     runRefund,
	})
	register("dns", command{
		Summary: "DNS HOLD operations: fund (and resume) or cancel a held cycle",
		Usage:   func(w io.Writer) { io.WriteString(w, dnsUsage) },
		Run:     runDNS,
	})
}

func runRefund(ctx context.Context, e *env, args []string) int {
	fs := e.flagSet("refund")
	fs.Usage = func() { io.WriteString(e.Stderr, refundUsage) }
	by := fs.String("by", "", "operator id (required)")
	evidence := fs.String("evidence", "", "outside evidence that the credit failed")
	note := fs.String("note", "", "note recorded with the decision")
	if err := fs.Parse(reorder(args)); err != nil {
		return 2
	}
	rest := fs.Args()
	show := len(rest) == 2 && rest[0] == "show"
	if !show && len(rest) != 1 {
		fs.Usage()
		return 2
	}
	txid := rest[len(rest)-1]
	if !show && *by == "" {
		fmt.Fprintln(e.Stderr, "zcgw refund: --by OPERATOR is required")
		return 2
	}
	var rev orchestrator.Reversal
	path := "/internal/transfers/" + url.PathEscape(txid) + "/refund"
	method, body := http.MethodPost, any(gateway.RefundBody{RequestedBy: *by, EvidenceRef: *evidence, Note: *note})
	if show {
		method, body = http.MethodGet, nil
	}
	err := onNode(ctx, e, "refund", method, path, body, &rev, func(n *node.Node) error {
		var err error
		if show {
			rev, err = n.Orchestrator.Reversal(ctx, txid)
			return err
		}
		if rev, err = n.Orchestrator.RequestRefund(ctx, orchestrator.RefundRequest{TxID: txid, RequestedBy: *by,
			EvidenceRef: *evidence, Note: *note}); err != nil {
			return err
		}
		if b := n.Banks[rev.PayerBankID]; b != nil && rev.Status == orchestrator.ReversalCompleted {
			// No node drains this folder's outboxes: hand the reversal
			// to the core now; what does not go stays PENDING for the node.
			if _, err := b.Adapter.Outbox().Drain(ctx, 100); err != nil {
				fmt.Fprintf(e.Stderr, "zcgw refund: the reversal is queued at bank %s; its core is not reached yet (%v): the next `zcgw serve` posts it\n", rev.PayerBankID, err)
			}
		}
		return nil
	})
	if err != nil {
		return cliFail(e, "refund", err)
	}
	out, _ := json.MarshalIndent(rev, "", "  ")
	fmt.Fprintln(e.Stdout, string(out))
	if rev.Status == orchestrator.ReversalRequested {
		fmt.Fprintf(e.Stderr, "zcgw refund: decided; the payer bank has not answered yet (%s): the REFUND work item retries it\n", rev.Pending)
		return 3
	}
	return 0
}

func runCorrect(ctx context.Context, e *env, args []string) int {
	fs := e.flagSet("correct")
	fs.Usage = func() { io.WriteString(e.Stderr, correctUsage) }
	field := fs.String("field", "payee_account_hash", "the misrecorded field")
	value := fs.String("value", "", "the correct value (required)")
	by := fs.String("by", "", "requesting operator (required)")
	approved := fs.String("approved-by", "", "approving operator, not the requester (required)")
	evidence := fs.String("evidence", "", "evidence of the misrecord (required)")
	note := fs.String("note", "", "note recorded with the correction")
	if err := fs.Parse(reorder(args)); err != nil {
		return 2
	}
	if fs.NArg() != 1 || *value == "" || *by == "" {
		fs.Usage()
		return 2
	}
	txid := fs.Arg(0)
	req := orchestrator.MisrecordRequest{TxID: txid, Field: *field, Value: *value, RequestedBy: *by, ApprovedBy: *approved,
		EvidenceRef: *evidence, Note: *note}
	var out orchestrator.Correction
	err := onNode(ctx, e, "correct", http.MethodPost, "/api/transfers/"+url.PathEscape(txid)+"/misrecord-correct",
		gateway.MisrecordBody{Field: req.Field, Value: req.Value, RequestedBy: req.RequestedBy, ApprovedBy: req.ApprovedBy,
			EvidenceRef: req.EvidenceRef, Note: req.Note}, &out, func(n *node.Node) error {
			var err error
			out, err = n.Orchestrator.CorrectMisrecord(ctx, req)
			return err
		})
	if err != nil {
		return cliFail(e, "correct", err)
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	fmt.Fprintln(e.Stdout, string(b))
	fmt.Fprintln(e.Stderr, "zcgw correct: corrected; the transfer is requeued and settles once a node works it")
	return 0
}

func runDNS(ctx context.Context, e *env, args []string) int {
	fs := e.flagSet("dns")
	fs.Usage = func() { io.WriteString(e.Stderr, dnsUsage) }
	bank := fs.String("bank", "", "fund: the bank to credit")
	amount := fs.Int64("amount", 0, "fund: the amount to credit (minor units)")
	reason := fs.String("reason", "", "cancel: why (required)")
	by := fs.String("by", "", "cancel: operator id (required)")
	if err := fs.Parse(reorder(args)); err != nil {
		return 2
	}
	rest := fs.Args()
	if len(rest) != 2 || (rest[0] != "fund" && rest[0] != "cancel") {
		fs.Usage()
		return 2
	}
	op, cycle := rest[0], rest[1]
	var out any
	var err error
	switch op {
	case "fund":
		var resp dns.FundResponse
		err = onNode(ctx, e, "dns fund", http.MethodPost, "/internal/dns/fund",
			dns.Request{CycleID: cycle, BankID: *bank, Amount: *amount}, &resp, func(n *node.Node) error {
				r, err := n.DNS.FundAndResume(ctx, cycle, *bank, *amount)
				if err == nil {
					resp = dns.FundResponse{Fundings: r.Fundings}
					resp.CycleID, resp.State, resp.IgsMode, resp.Applied = r.Settle.Cycle.CycleID, r.Settle.Cycle.State, r.Settle.Cycle.IgsMode, r.Settle.Applied
					resp.Shortfalls, resp.Postings = r.Settle.Shortfalls, r.Settle.Postings
				}
				return err
			})
		out = resp
	case "cancel":
		if *reason == "" || *by == "" {
			fmt.Fprintln(e.Stderr, "zcgw dns cancel: --reason and --by are required")
			return 2
		}
		var resp dns.CancelResponse
		err = onNode(ctx, e, "dns cancel", http.MethodPost, "/internal/dns/cancel",
			dns.Request{CycleID: cycle, Reason: *reason, Actor: *by}, &resp, func(n *node.Node) error {
				r, err := n.DNS.Cancel(ctx, cycle, *reason, *by)
				resp = dns.CancelResponse{CycleID: r.Cycle.CycleID, State: r.Cycle.State, Applied: r.Applied, Released: r.Released, NextCycleID: r.Next.CycleID}
				return err
			})
		out = resp
	}
	if err != nil {
		return cliFail(e, "dns "+op, err)
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	fmt.Fprintln(e.Stdout, string(b))
	return 0
}

// reorder moves flags before positional arguments so `refund TXID --by X`
// parses like `refund --by X TXID` (the flag package stops at the first
// positional argument).
func reorder(args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			flags = append(flags, a)
			if !strings.Contains(a, "=") && i+1 < len(args) && !isBoolFlag(a) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			pos = append(pos, a)
		}
	}
	return append(flags, pos...)
}

func isBoolFlag(a string) bool {
	switch strings.TrimLeft(a, "-") {
	case "h", "help":
		return true
	}
	return false
}

// onNode runs an operator action on the data folder: through the serving
// node's /internal route (method, path, body; the answer decoded into
// out) when a node serves it, else in this process on the folder's node
// components started without workers.
func onNode(ctx context.Context, e *env, cmd, method, path string, body, out any, direct func(n *node.Node) error) error {
	info, served, err := procid.Running(e.DataDir)
	if err != nil {
		return err
	}
	if served {
		return askNode(ctx, e, cmd, info, method, path, body, out)
	}
	n, err := node.Start(ctx, node.Options{DataDir: e.DataDir, Addr: "127.0.0.1:0", NoWorkers: true,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer n.Close()
	return direct(n)
}

// askNode is callNode for the refund, correct and dns commands: it says
// which node it asks first.
func askNode(ctx context.Context, e *env, cmd string, info procid.Info, method, path string, body, out any) error {
	fmt.Fprintf(e.Stderr, "zcgw %s: node %s (pid %d, addr %s) serves %s: asking it\n", cmd, info.Node, info.PID, info.Addr, e.DataDir)
	return callNode(ctx, e, info, method, path, body, out)
}

// cliFail prints an error (a catalog error with its reason code and
// details) and returns exit status 1.
func cliFail(e *env, cmd string, err error) int {
	var de *domainerr.Error
	if errors.As(err, &de) {
		d, _ := json.Marshal(de.Details)
		fmt.Fprintf(e.Stderr, "zcgw %s: %s: %s %s\n", cmd, de.Code, de.Message, d)
		return 1
	}
	fmt.Fprintf(e.Stderr, "zcgw %s: %v\n", cmd, err)
	return 1
}
