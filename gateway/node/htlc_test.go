package node

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"
)

// TestHTLCOverHTTP: POST /api/transfers with lane HTLC points at the HTLC
// endpoint; POST /api/htlc/create locks through the signed bank ingress,
// the payee claims with the preimage and the transfer settles at the
// cores; the claim repeated answers the same; a non-party and the payer
// cannot claim.
func TestHTLCOverHTTP(t *testing.T) {
	n := start(t)
	payerCore, payeeCore := n.Config.Banks[0].Accounts[0].CoreAccount, n.Config.Banks[1].Accounts[0].CoreAccount
	p0, q0 := n.coreBalance(t, "001", payerCore), n.coreBalance(t, "002", payeeCore)
	wrongLane := `{"lane":"HTLC","amount":{"value":10,"currency":"JPY"},"payer":{"bank_id":"001","account_hash":"h:001-0001"},` +
		`"payee":{"bank_id":"002","account_hash":"h:002-0001"},"schema_version":"1.1","idempotency_key":"h-lane"}`
	if a := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, wrongLane); a.status != 422 || a.field("reason_code") != "USE_HTLC_ENDPOINT" {
		t.Fatalf("lane HTLC on /api/transfers: %d %s", a.status, a.body)
	}
	pre := sha256.Sum256([]byte("over-http"))
	hl := sha256.Sum256(pre[:])
	body := fmt.Sprintf(`{"amount":{"value":2100,"currency":"JPY"},"payer":{"bank_id":"001","account_hash":"h:001-0001"},`+
		`"payee":{"bank_id":"002","account_hash":"h:002-0001"},"hash_alg":"SHA-256","hashlock":"%s","timelock_expires_at":"%s","idempotency_key":"h-1"}`,
		hex.EncodeToString(hl[:]), time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	c := n.do(t, "POST", "/api/htlc/create", n.Config.KeyFor("001"), nil, body)
	if c.status != 201 || c.field("htlc_id") == "" {
		t.Fatalf("create: %d %s", c.status, c.body)
	}
	if again := n.do(t, "POST", "/api/htlc/create", n.Config.KeyFor("001"), nil, body); again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("create replay: %d %s", again.status, again.body)
	}
	id, txid := c.field("htlc_id"), c.field("txid")
	n.waitState(t, txid, "HTLC_LOCKED", 20*time.Second)
	claim := fmt.Sprintf(`{"preimage":"%s","presenter_org_id":"002"}`, hex.EncodeToString(pre[:]))
	if a := n.do(t, "POST", "/api/htlc/"+id+"/claim", n.Config.KeyFor("001"), nil, claim); a.status != 404 || a.field("reason_code") != "HTLC_NOT_FOUND" {
		t.Fatalf("claim by the payer: %d %s", a.status, a.body)
	}
	if a := n.do(t, "POST", "/api/htlc/"+id+"/claim", n.Config.KeyFor("002"), nil, `{"preimage":"00"}`); a.status != 400 || a.field("reason_code") != "PREIMAGE_MISMATCH" {
		t.Fatalf("wrong preimage: %d %s", a.status, a.body)
	}
	a := n.do(t, "POST", "/api/htlc/"+id+"/claim", n.Config.KeyFor("002"), nil, claim)
	if a.status != 200 || a.field("tx_state") == "HTLC_LOCKED" {
		t.Fatalf("claim: %d %s", a.status, a.body)
	}
	n.waitState(t, txid, "SETTLED", 20*time.Second)
	n.waitBalances(t, map[[2]string]int64{{"001", payerCore}: p0 - 2100, {"002", payeeCore}: q0 + 2100})
	if r := n.do(t, "POST", "/api/htlc/"+id+"/claim", n.Config.KeyFor("002"), nil, claim); r.status != 200 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("second claim: %d %s", r.status, r.body)
	}
	if g := n.do(t, "GET", "/api/htlc/"+id, n.Config.KeyFor("002"), map[string]string{"X-Purpose-Code": "P01"}, ""); g.status != 200 || g.field("state") != "HTLC_FULFILL_REQUESTED" || g.field("tx_state") != "SETTLED" {
		t.Fatalf("GET: %d %s", g.status, g.body)
	}
	n.waitBalances(t, map[[2]string]int64{{"001", payerCore}: p0 - 2100, {"002", payeeCore}: q0 + 2100})
}
