package node

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/gateway"
)

// PR-HV-THRESHOLD changed through POST /internal/params on a running node
// takes effect at the next transfer, without a restart: a transfer at the
// new threshold stays EXPRESS, one unit above it escalates to HIGH_VALUE
// (before the change both were EXPRESS). The change is a verified
// GLOBAL-chain entry with old, new, evidence_ref and who; a stale old
// value, a missing evidence_ref and a timeout that breaks the lease rule
// are refused with their catalog codes.
func TestHVThresholdThroughTheRouteMovesTheLaneBoundary(t *testing.T) {
	n := start(t)
	sec := map[string]string{gateway.HeaderCronSecret: n.Config.CronSecret}
	lane := func(key string, amount int64) string {
		t.Helper()
		a := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody(key, amount, "h:001-0001", "h:002-0001"))
		if a.status != 201 {
			t.Fatalf("POST %s: %d %s", key, a.status, a.body)
		}
		return a.field("lane")
	}
	if got := lane("hv-0", 1001); got != "EXPRESS" {
		t.Fatalf("1001 before the change: %s", got)
	}
	set := func(body string) answer { return n.do(t, "POST", "/internal/params/PR-HV-THRESHOLD", "", sec, body) }
	if r := set(`{"old_value":"100000000","value":"1000","reason":"drill","operator":"alice"}`); r.status != 422 || r.field("reason_code") != "EVIDENCE_REQUIRED" {
		t.Fatalf("without evidence_ref: %d %s", r.status, r.body)
	}
	if r := set(`{"old_value":"5","value":"1000","evidence_ref":"CAB-1","reason":"drill","operator":"alice"}`); r.status != 409 || r.field("reason_code") != "CONCURRENCY_CONFLICT" {
		t.Fatalf("stale old_value: %d %s", r.status, r.body)
	}
	if r := set(`{"old_value":"100000000","value":"0","evidence_ref":"CAB-1","reason":"drill","operator":"alice"}`); r.status != 400 || r.field("reason_code") != "INVALID_REQUEST" {
		t.Fatalf("out of bounds: %d %s", r.status, r.body)
	}
	r := set(`{"old_value":"100000000","value":"1000","evidence_ref":"CAB-1","reason":"drill","operator":"alice"}`)
	if r.status != 200 {
		t.Fatalf("set: %d %s", r.status, r.body)
	}
	if got := lane("hv-1", 1000); got != "EXPRESS" {
		t.Fatalf("1000 at the new threshold: %s", got)
	}
	if got := lane("hv-2", 1001); got != "HIGH_VALUE" {
		t.Fatalf("1001 above the new threshold: %s", got)
	}
	g := n.do(t, "GET", "/internal/params/PR-HV-THRESHOLD", "", sec, "")
	var v struct {
		Value       int64  `json:"value"`
		IsDefault   bool   `json:"is_default"`
		ChangedBy   string `json:"changed_by"`
		EvidenceRef string `json:"evidence_ref"`
	}
	if err := json.Unmarshal(g.body, &v); err != nil || g.status != 200 || v.Value != 1000 || v.IsDefault || v.ChangedBy != "alice" || v.EvidenceRef != "CAB-1" {
		t.Fatalf("GET: %d %s", g.status, g.body)
	}
	// The node's lease is 30s: an exec timeout of 30s would break it.
	if r := n.do(t, "POST", "/internal/params/PR-EXEC-TIMEOUT", "", sec, `{"old_value":"60s","value":"30s","evidence_ref":"CAB-2","reason":"faster","operator":"alice"}`); r.status != 400 || r.field("reason_code") != "INVALID_REQUEST" {
		t.Fatalf("exec timeout = lease: %d %s", r.status, r.body)
	}
	types, inOutbox := globalEvents(t, n.DB)
	if len(types) != 1 || types[0] != string(finality.ParameterChanged) || inOutbox != 1 {
		t.Fatalf("GLOBAL chain %v (outbox %d)", types, inOutbox)
	}
	if rep, err := finality.VerifyChain(context.Background(), n.DB, finality.GlobalChain); err != nil || !rep.OK() || rep.Entries != 1 {
		t.Fatalf("verify GLOBAL: %+v %v", rep, err)
	}
}

// A bank's per-transfer limit set through the route (with bank_id; none
// before) applies to its next transfer, and reads back per bank.
func TestTxAmountLimitThroughTheRoute(t *testing.T) {
	n := start(t)
	sec := map[string]string{gateway.HeaderCronSecret: n.Config.CronSecret}
	post := func(key string, amount int64) answer {
		return n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody(key, amount, "h:001-0001", "h:002-0001"))
	}
	if r := n.do(t, "POST", "/internal/params/PR-TX-AMOUNT-LIMIT", "", sec, `{"old_value":"none","value":"600","evidence_ref":"CAB-L1","reason":"limit review","operator":"alice"}`); r.status != 400 || r.field("reason_code") != "MISSING_FIELD" {
		t.Fatalf("without bank_id: %d %s", r.status, r.body)
	}
	r := n.do(t, "POST", "/internal/params/PR-TX-AMOUNT-LIMIT", "", sec, `{"bank_id":"001","old_value":"none","value":"600","evidence_ref":"CAB-L1","reason":"limit review","operator":"alice"}`)
	if r.status != 200 {
		t.Fatalf("set: %d %s", r.status, r.body)
	}
	if a := post("lim-1", 601); a.status != 422 || a.field("reason_code") != "AMOUNT_EXCEEDS_TX_LIMIT" {
		t.Fatalf("601 over a 600 limit: %d %s", a.status, a.body)
	}
	if a := post("lim-2", 600); a.status != 201 {
		t.Fatalf("600 at the limit: %d %s", a.status, a.body)
	}
	g := n.do(t, "GET", "/internal/params/PR-TX-AMOUNT-LIMIT?bank_id=001", "", sec, "")
	if g.status != 200 || !strings.Contains(string(g.body), `"value":600`) || !strings.Contains(string(g.body), `"bank_id":"001"`) {
		t.Fatalf("GET: %d %s", g.status, g.body)
	}
	types, _ := globalEvents(t, n.DB)
	if len(types) != 1 || types[0] != string(finality.ParameterChanged) {
		t.Fatalf("GLOBAL chain %v", types)
	}
}
