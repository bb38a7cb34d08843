package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/gateway/node"
)

// failedTransfer runs a node on dir until a transfer to a missing payee
// account is FAILED_EXECUTION, then stops it; it returns the txid, the
// payer's core account and its balance before the transfer.
func failedTransfer(t *testing.T, dir string) (txid, payer string, p0 int64) {
	t.Helper()
	ctx := context.Background()
	n, err := node.Start(ctx, node.Options{DataDir: dir, Addr: "127.0.0.1:0",
		Orchestrator: func(c *orchestrator.Config) { c.Timeouts.Suspended = time.Second }})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	payer = n.Config.Banks[0].Accounts[0].CoreAccount
	b, _ := n.Banks["001"].Core.Balance(ctx, payer)
	p0 = b.Balance
	res, err := n.Orchestrator.Submit(ctx, orchestrator.PaymentInitiated{Lane: orchestrator.LaneExpress,
		Amount: bankapi.Amount{Value: 900, Currency: "JPY"}, Payer: orchestrator.Party{BankID: "001", AccountHash: "h:001-0001"},
		Payee: orchestrator.Party{BankID: "002", AccountHash: "h:002-gone"}, Purpose: "P2P"}, "cli-refund", "001")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, err := n.Orchestrator.Query(ctx, res.TxID)
		if err != nil {
			t.Fatal(err)
		}
		if v.State == "SUSPENDED" {
			time.Sleep(1100 * time.Millisecond)
			if _, err := n.Orchestrator.TimeoutSweep(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if v.State == "FAILED_EXECUTION" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s stuck in %s", res.TxID, v.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return res.TxID, payer, p0
}

// zcgw refund on a folder no node serves acts in this process: the payer
// bank queues the reversal and the command hands it to the core, so the
// payer's core balance is back; a second run replays; usage errors exit 2.
func TestRefundCommandOnAnUnservedFolder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	txid, payer, p0 := failedTransfer(t, dir)
	if code, _, errs := zcgwIn(ctx, "--data", dir, "refund", txid); code != 2 || !strings.Contains(errs, "--by") {
		t.Fatalf("refund without --by: exit %d %s", code, errs)
	}
	code, out, errs := zcgwIn(ctx, "--data", dir, "refund", txid, "--by", "ops-1", "--note", "payee account closed")
	var rev orchestrator.Reversal
	if code != 0 || json.Unmarshal([]byte(out), &rev) != nil || rev.Status != orchestrator.ReversalCompleted || rev.Replayed {
		t.Fatalf("refund: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = zcgwIn(ctx, "--data", dir, "refund", "show", txid)
	if code != 0 || json.Unmarshal([]byte(out), &rev) != nil || rev.Status != orchestrator.ReversalCompleted || rev.RequestedBy != "ops-1" {
		t.Fatalf("show: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, _ := zcgwIn(ctx, "--data", dir, "refund", txid, "--by", "ops-2"); code != 0 || !strings.Contains(out, `"replayed": true`) {
		t.Fatalf("second refund: exit %d\n%s", code, out)
	}
	if code, _, errs := zcgwIn(ctx, "--data", dir, "refund", "TX-NOPE", "--by", "ops-1"); code != 1 || !strings.Contains(errs, "TX_NOT_FOUND") {
		t.Fatalf("unknown transfer: exit %d %s", code, errs)
	}
	n, err := node.Start(ctx, node.Options{DataDir: dir, Addr: "127.0.0.1:0", NoWorkers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if b, err := n.Banks["001"].Core.Balance(ctx, payer); err != nil || b.Balance != p0 {
		t.Fatalf("payer core balance %d (%v), want %d restored once", b.Balance, err, p0)
	}
}
