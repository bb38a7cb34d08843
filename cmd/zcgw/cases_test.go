package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/ledger"
	"github.com/zcgw/zcgw/outbox"
)

// openTestCases opens three Cases in dir's zc.db (banks 001, 002, 001 with
// two reasons) and returns their ids in SLA order.
func openTestCases(t *testing.T, dir string) []string {
	t.Helper()
	ctx := context.Background()
	zc, err := store.OpenCoordinator(ctx, ledger.Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	cs := cases.New(clock.System{}, nil, 0)
	now := time.Now()
	var ids []string
	for i, c := range []struct{ bank, reason string }{{"001", "BANK_ERROR"}, {"002", "BANK_ERROR"}, {"001", "CHAIN_TAMPERED"}} {
		o, err := cs.OpenCaseDB(ctx, zc, cases.OpenRequest{ReasonCode: c.reason, OpenedBy: "ZC", CausePartyID: c.bank,
			RelatedTxID: "TX-" + strconv.Itoa(i), SLADeadline: now.Add(time.Duration(2*i-1) * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, o.CaseID)
	}
	return ids
}

func TestCasesCommandOnUnservedFolder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if code, out, _ := zcgwIn(ctx, "--data", dir, "cases", "list"); code != 0 || !strings.HasPrefix(out, "no Cases (no zc.db yet") {
		t.Fatalf("fresh folder: %d %q", code, out)
	}
	ids := openTestCases(t, dir)
	code, out, errs := zcgwIn(ctx, "--data", dir, "cases", "list", "--bank", "001", "--limit", "1")
	if code != 0 || !strings.Contains(out, ids[0]) || strings.Contains(out, ids[2]) ||
		!strings.Contains(out, "1 more Case not shown; next page: zcgw cases list --bank 001 --limit 1 --after "+ids[0]+"\n") {
		t.Fatalf("list page 1: %d\n%s%s", code, out, errs)
	}
	if code, out, _ = zcgwIn(ctx, "--data", dir, "cases", "list", "--bank", "001", "--limit", "1", "--after", ids[0]); code != 0 ||
		!strings.Contains(out, ids[2]) || strings.Contains(out, "not shown") {
		t.Fatalf("list page 2: %d\n%s", code, out)
	}
	if code, out, _ = zcgwIn(ctx, "--data", dir, "cases", "list", "--overdue"); code != 0 || strings.Count(out, "CASE-") != 1 || !strings.Contains(out, ids[0]) {
		t.Fatalf("overdue: %d\n%s", code, out)
	}
	if code, out, _ = zcgwIn(ctx, "--data", dir, "cases", "list", "--cause", "CHAIN_TAMPERED"); code != 0 || strings.Count(out, "CASE-") != 1 || !strings.Contains(out, ids[2]) {
		t.Fatalf("cause: %d\n%s", code, out)
	}
	if code, _, errs = zcgwIn(ctx, "--data", dir, "cases", "resolve", ids[1], "--by", "sato"); code != 2 || !strings.Contains(errs, "--note is required") {
		t.Fatalf("no note: %d %s", code, errs)
	}
	code, out, errs = zcgwIn(ctx, "--data", dir, "cases", "resolve", ids[1], "--by", "sato", "--note", "core fixed the account")
	if code != 0 || out != "case "+ids[1]+" OPEN -> RESOLVED (RESOLVED by sato)\n" {
		t.Fatalf("resolve: %d %q %s", code, out, errs)
	}
	if code, _, errs = zcgwIn(ctx, "--data", dir, "cases", "close", ids[1], "--by", "kato", "--note", "again"); code != 1 || !strings.Contains(errs, "STATE_GUARD") {
		t.Fatalf("second decision: %d %s", code, errs)
	}
	if n := countRows(t, dir, `SELECT COUNT(*) FROM EntityStateLog WHERE entity_id = ? AND reason_code = 'RESOLVED'
		AND json_extract(payload_json, '$.note') = 'core fixed the account' AND json_extract(payload_json, '$.operator') = 'sato'`, ids[1]); n != 1 {
		t.Fatalf("%d log rows for the resolve", n)
	}
	if code, out, _ = zcgwIn(ctx, "--data", dir, "cases", "show", ids[1]); code != 0 || !strings.Contains(out, "state:         RESOLVED") ||
		!strings.Contains(out, `"note":"core fixed the account"`) {
		t.Fatalf("show: %d\n%s", code, out)
	}
	if code, out, _ = zcgwIn(ctx, "--data", dir, "cases", "list"); code != 0 || strings.Contains(out, ids[1]) || strings.Count(out, "CASE-") != 2 {
		t.Fatalf("open list after resolve: %d\n%s", code, out)
	}
}

// `zcgw outbox writeoff` ends the Case of the posting it writes off, and
// `zcgw outbox requeue` moves it to IN_PROGRESS.
func TestOutboxDecisionsMoveTheirCase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	zc, err := store.OpenCoordinator(ctx, ledger.Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	db, err := store.Open(ctx, filepath.Join(dir, "adapter-001.db"), adapter.Schema)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ob, err := outbox.New(outbox.Config{DB: db, Core: refusingCore{},
		Cases: adapter.CoordinatorCases{DB: zc, Cases: cases.New(clock.System{}, nil, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i, bank := range []string{"001", "009"} { // another cause party: its own Case
		err := db.Write(ctx, func(tx *store.Tx) error {
			id, err := ob.Enqueue(ctx, tx, outbox.Posting{Ref: "REF-" + bank, TxID: "TX-" + bank, Bank: bank,
				Account: "001-1-000000" + strconv.Itoa(i), Kind: outbox.Debit, Amount: 500})
			ids = append(ids, id)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ob.Drain(ctx, 10); err != nil {
		t.Fatal(err)
	}
	var caseIDs []string
	for _, id := range ids {
		e, _ := ob.Get(ctx, id)
		if e.Status != outbox.Blocked || e.CaseID == "" {
			t.Fatalf("row %d: %+v", id, e)
		}
		caseIDs = append(caseIDs, e.CaseID)
	}
	code, out, errs := zcgwIn(ctx, "--data", dir, "outbox", "writeoff", "--bank", "001", "--id", strconv.FormatInt(ids[0], 10),
		"--operator", "sato", "--reason", "duplicate instruction")
	if code != 0 || !strings.Contains(out, "case "+caseIDs[0]+" OPEN -> RESOLVED") {
		t.Fatalf("writeoff: %d %s%s", code, out, errs)
	}
	code, out, errs = zcgwIn(ctx, "--data", dir, "outbox", "requeue", "--bank", "001", "--id", strconv.FormatInt(ids[1], 10),
		"--operator", "sato", "--reason", "customer funded the account")
	if code != 0 || !strings.Contains(out, "case "+caseIDs[1]+" OPEN -> IN_PROGRESS") {
		t.Fatalf("requeue: %d %s%s", code, out, errs)
	}
	for i, want := range []string{"RESOLVED", "IN_PROGRESS"} {
		if n := countRows(t, dir, `SELECT COUNT(*) FROM Cases WHERE case_id = ? AND state = ?`, caseIDs[i], want); n != 1 {
			t.Errorf("case %s is not %s", caseIDs[i], want)
		}
	}
}

// On a served folder resolve and close go through the node's /api route,
// which writes AccessAuditLog.
func TestCasesCloseOnServedFolderGoesThroughTheNode(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	startNode(t, dir)
	ids := openTestCases(t, dir)
	code, out, errs := zcgwIn(ctx, "--data", dir, "cases", "close", ids[0], "--by", "sato", "--note", "duplicate of "+ids[2])
	if code != 0 || !regexp.MustCompile(`^case `+ids[0]+` OPEN -> RESOLVED \(CLOSED by sato\) \(through node .+\)\n$`).MatchString(out) {
		t.Fatalf("close: %d %q %s", code, out, errs)
	}
	if got := countRows(t, dir, `SELECT COUNT(*) FROM AccessAuditLog WHERE resource = ? AND decision = 'PERMIT' AND subject_id = 'cron-secret'`,
		"cases/"+ids[0]+"/close"); got != 1 {
		t.Fatalf("%d audit rows", got)
	}
	if got := countRows(t, dir, `SELECT COUNT(*) FROM EntityStateLog WHERE entity_id = ? AND reason_code = 'CLOSED'
		AND json_extract(payload_json, '$.operator') = 'sato'`, ids[0]); got != 1 {
		t.Fatalf("%d log rows", got)
	}
	if code, _, errs = zcgwIn(ctx, "--data", dir, "cases", "resolve", ids[0], "--by", "kato", "--note", "x"); code != 1 ||
		!strings.Contains(errs, "STATE_GUARD") || !strings.Contains(errs, "answered by node") {
		t.Fatalf("second decision through the node: %d %s", code, errs)
	}
}

// A drift on a served folder: `zcgw cases resolve CASE --drift adjust`
// goes through the node, which ends the drift and the Case and queues the
// adjusting posting; once the outbox applies it the core balance is back,
// once, and the account reconciles.
func TestCasesDriftAdjustOnServedFolder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	n := startNode(t, dir)
	b := n.Banks["001"]
	const acct, hash = "001-1-0009999", "001:drift-try"
	if err := b.Core.OpenAccount(ctx, acct, "YAMADA TARO", 100000); err != nil {
		t.Fatal(err)
	}
	if err := b.Adapter.OpenAccountFromCore(ctx, adapter.Account{Hash: hash, CoreAccount: acct, HolderName: "YAMADA TARO"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Core.AdjustBalanceOutOfBand(ctx, acct, 1500); err != nil {
		t.Fatal(err)
	}
	r, err := b.Adapter.ReconcileAccount(ctx, hash)
	if err != nil || r.Status != adapter.ReconDrift || r.CaseID == "" {
		t.Fatalf("reconcile: %+v %v", r, err)
	}
	if code, _, errs := zcgwIn(ctx, "--data", dir, "cases", "close", r.CaseID, "--by", "sato", "--note", "x"); code != 1 || !strings.Contains(errs, "ends with its drift") {
		t.Fatalf("plain close of a drift Case: %d %s", code, errs)
	}
	for i := range 2 {
		code, out, errs := zcgwIn(ctx, "--data", dir, "cases", "resolve", r.CaseID, "--drift", "adjust", "--by", "sato", "--note", "teller keyed a fee twice")
		want := "adjusting debit of 1500 queued in the bank's outbox"
		if i == 1 {
			want = "the drift was settled before"
		}
		if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "(through node ") {
			t.Fatalf("resolve %d: %d %q %s", i, code, out, errs)
		}
	}
	// The node's outbox worker, or this drain, sends it; once.
	if _, err := b.Adapter.Outbox().Drain(ctx, 10); err != nil {
		t.Fatal(err)
	}
	adj, err := b.Adapter.Outbox().List(ctx, outbox.Filter{TxID: adapter.DriftTxID(r.DriftID)})
	for deadline := time.Now().Add(20 * time.Second); err == nil && (len(adj) != 1 || adj[0].Status != outbox.Applied) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		adj, err = b.Adapter.Outbox().List(ctx, outbox.Filter{TxID: adapter.DriftTxID(r.DriftID)})
	}
	if err != nil || len(adj) != 1 || adj[0].Status != outbox.Applied {
		t.Fatalf("adjusting posting %+v %v", adj, err)
	}
	bal, err := b.Core.Balance(ctx, acct)
	if err != nil || bal.Balance != 100000 {
		t.Fatalf("core balance %+v %v, want 100000", bal, err)
	}
	if r, err := b.Adapter.ReconcileAccount(ctx, hash); err != nil || r.Status != adapter.ReconMatched {
		t.Fatalf("reconcile after: %+v %v", r, err)
	}
	if got := countRows(t, dir, `SELECT COUNT(*) FROM Cases WHERE case_id = ? AND state = 'RESOLVED'`, r.CaseID); got != 1 {
		t.Fatal("case not resolved")
	}
	if got := countRows(t, dir, `SELECT COUNT(*) FROM AccessAuditLog WHERE resource = ? AND decision = 'PERMIT'`, "cases/"+r.CaseID+"/resolve"); got != 2 {
		t.Fatalf("%d audit rows", got)
	}
}
