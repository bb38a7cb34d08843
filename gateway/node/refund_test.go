package node

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
)

// TestRefundOverHTTP: the operator route of a node reverses a transfer
// whose credit the payee bank refused, through the signed bank client, the
// gateway's ingress and the payer adapter's compensate: the payer's core
// balance is restored once, and asking again replays the reversal.
func TestRefundOverHTTP(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	n, err := Start(context.Background(), Options{DataDir: scratch(t), Config: &cfg, Orchestrator: func(c *orchestrator.Config) {
		c.Timeouts.Suspended = 2 * time.Second
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	payerCore := n.Config.Banks[0].Accounts[0].CoreAccount
	p0 := n.coreBalance(t, "001", payerCore)
	a := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody("refund-1", 1300, "h:001-0001", "h:002-gone"))
	if a.status != 201 {
		t.Fatalf("POST: %d %s", a.status, a.body)
	}
	txid := a.field("txid")
	n.waitState(t, txid, "SUSPENDED", 20*time.Second)
	n.waitBalances(t, map[[2]string]int64{{"001", payerCore}: p0 - 1300})
	cron := map[string]string{"X-Cron-Secret": n.Config.CronSecret}
	if r := n.do(t, "POST", "/internal/transfers/"+txid+"/refund", "", cron, `{"requested_by":"ops-1"}`); r.status != 409 {
		t.Fatalf("refund while SUSPENDED: %d %s", r.status, r.body)
	}
	time.Sleep(2100 * time.Millisecond)
	if r := n.do(t, "POST", "/internal/cron/timeout-sweep", "", cron, ""); r.status != 200 {
		t.Fatalf("sweep: %d %s", r.status, r.body)
	}
	n.waitState(t, txid, "FAILED_EXECUTION", 5*time.Second)
	if r := n.do(t, "POST", "/internal/transfers/"+txid+"/refund", "", nil, `{"requested_by":"ops-1"}`); r.status != 401 && r.status != 403 {
		t.Fatalf("refund without the operator credential: %d %s", r.status, r.body)
	}
	r := n.do(t, "POST", "/internal/transfers/"+txid+"/refund", "", cron, `{"requested_by":"ops-1","note":"payee account closed"}`)
	var rev orchestrator.Reversal
	if err := json.Unmarshal(r.body, &rev); err != nil || r.status != 200 || rev.Status != orchestrator.ReversalCompleted || len(rev.Reversals) != 1 {
		t.Fatalf("refund: %d %s", r.status, r.body)
	}
	n.waitBalances(t, map[[2]string]int64{{"001", payerCore}: p0})
	again := n.do(t, "POST", "/internal/transfers/"+txid+"/refund", "", cron, `{"requested_by":"ops-2"}`)
	if err := json.Unmarshal(again.body, &rev); err != nil || again.status != 200 || !rev.Replayed || rev.RequestedBy != "ops-1" {
		t.Fatalf("second refund: %d %s", again.status, again.body)
	}
	if g := n.do(t, "GET", "/internal/transfers/"+txid+"/refund", "", cron, ""); g.status != 200 || g.field("status") != "COMPLETED" {
		t.Fatalf("show: %d %s", g.status, g.body)
	}
	time.Sleep(100 * time.Millisecond)
	if got := n.coreBalance(t, "001", payerCore); got != p0 {
		t.Fatalf("payer core balance %d after a second request, want %d", got, p0)
	}
}

// TestMisrecordCorrectOverHTTP: a transfer sent to a wrong payee account
// is corrected through the operator route by two operators and settles on
// the right account at the payee's core.
func TestMisrecordCorrectOverHTTP(t *testing.T) {
	n := start(t)
	payerCore, payeeCore := n.Config.Banks[0].Accounts[0].CoreAccount, n.Config.Banks[1].Accounts[0].CoreAccount
	p0, q0 := n.coreBalance(t, "001", payerCore), n.coreBalance(t, "002", payeeCore)
	a := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody("misrecord-1", 800, "h:001-0001", "h:002-typo"))
	if a.status != 201 {
		t.Fatalf("POST: %d %s", a.status, a.body)
	}
	txid := a.field("txid")
	n.waitState(t, txid, "SUSPENDED", 20*time.Second)
	cron := map[string]string{"X-Cron-Secret": n.Config.CronSecret}
	path := "/api/transfers/" + txid + "/misrecord-correct"
	if r := n.do(t, "POST", path, "", cron, `{"field":"payee_account_hash","value":"h:002-0001","requested_by":"ops-1","approved_by":"ops-1","evidence_ref":"CALL-1"}`); r.status != 422 || r.field("reason_code") != "FOUR_EYES_REQUIRED" {
		t.Fatalf("one operator: %d %s", r.status, r.body)
	}
	r := n.do(t, "POST", path, "", cron, `{"field":"payee_account_hash","value":"h:002-0001","requested_by":"ops-1","approved_by":"ops-2","evidence_ref":"CALL-1"}`)
	if r.status != 200 || r.field("new_value") != "h:002-0001" {
		t.Fatalf("correct: %d %s", r.status, r.body)
	}
	n.waitState(t, txid, "SETTLED", 20*time.Second)
	n.waitBalances(t, map[[2]string]int64{{"001", payerCore}: p0 - 800, {"002", payeeCore}: q0 + 800})
}

// TestHoldCycleCancelledThroughTheNode: a transfer settled over HTTP is
// taken by the day's DNS cycle, which holds (the payer bank's central-bank
// account is short); the operator cancels the cycle through the node and
// the transfer is back in ZC's hands with no cycle; the next cycle, once
// funded, settles it.
func TestHoldCycleCancelledThroughTheNode(t *testing.T) {
	n := start(t)
	ctx := context.Background()
	a := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody("hold-1", 1500, "h:001-0001", "h:002-0001"))
	if a.status != 201 {
		t.Fatalf("POST: %d %s", a.status, a.body)
	}
	txid := a.field("txid")
	n.waitState(t, txid, "SETTLED", 20*time.Second)
	owner := func() (o, cycle string) {
		var c sql.NullString
		if err := n.DB.Read(ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(ctx, `SELECT owner, dns_cycle_id FROM Transactions WHERE txid = ?`, txid).Scan(&o, &c)
		}); err != nil {
			t.Fatal(err)
		}
		return o, c.String
	}
	deadline := time.Now().Add(20 * time.Second)
	for open := 1; open > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("queue work of %s still open", txid)
		}
		if err := n.DB.Read(ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM OrchestratorQueue WHERE txid = ? AND status NOT IN ('DONE', 'ACKED')", txid).Scan(&open)
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The payer bank's central-bank account holds 1000 of the 1500 it owes.
	if err := n.DB.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE SettlementPositions SET balance = 1000 WHERE bank_id = '001' AND venue = 'BOJ'`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	secret := map[string]string{"X-Cron-Secret": n.Config.CronSecret}
	for _, job := range []string{"dns-kick", "dns-settle"} {
		if r := n.do(t, "POST", "/internal/cron/"+job, "", secret, ""); r.status != 200 {
			t.Fatalf("%s: %d %s", job, r.status, r.body)
		}
	}
	o, cycle := owner()
	if o != "CYCLE:"+cycle || cycle == "" {
		t.Fatalf("after the held settle: owner %s cycle %s", o, cycle)
	}
	r := n.do(t, "POST", "/internal/dns/cancel", "", secret, `{"cycle_id":"`+cycle+`","reason":"no bridge liquidity","actor":"ops-1"}`)
	var cr struct {
		State       string   `json:"state"`
		Released    []string `json:"released"`
		NextCycleID string   `json:"next_cycle_id"`
	}
	if err := json.Unmarshal(r.body, &cr); err != nil || r.status != 200 || cr.State != "CANCELLED" || len(cr.Released) != 1 || cr.Released[0] != txid {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	if o, c := owner(); o != "ZC" || c != "" {
		t.Fatalf("after cancel: owner %s cycle %q", o, c)
	}
	var bal int64
	n.DB.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT balance FROM SettlementPositions WHERE bank_id = '001' AND venue = 'BOJ'`).Scan(&bal)
	})
	if bal != 1000 {
		t.Fatalf("cancel moved BOJ: %d", bal)
	}
	// The next cycle takes it again; funded, it settles.
	if r := n.do(t, "POST", "/internal/dns/intraday-cutoff", "", secret, `{}`); r.status != 200 || r.field("state") != "HOLD_ACTIVE" {
		t.Fatalf("next cycle: %d %s", r.status, r.body)
	}
	_, next := owner()
	if next != cr.NextCycleID {
		t.Fatalf("taken by %s, want %s", next, cr.NextCycleID)
	}
	if r := n.do(t, "POST", "/internal/dns/fund", "", secret, `{"cycle_id":"`+next+`"}`); r.status != 200 || r.field("state") != "SETTLED" {
		t.Fatalf("fund: %d %s", r.status, r.body)
	}
	if o, _ := owner(); o != "ZC" {
		t.Fatalf("after settle: owner %s", o)
	}
}
