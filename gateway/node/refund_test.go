package node

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/orchestrator"
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
	path := "/internal/transfers/" + txid + "/misrecord-correct"
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
