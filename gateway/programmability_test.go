package gateway

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/conditions"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/store"
)

func (f *fixture) count(q string) int {
	f.t.Helper()
	var n int
	if err := f.db.Read(f.ctx, func(tx *store.Tx) error { return tx.QueryRowContext(f.ctx, q).Scan(&n) }); err != nil {
		f.t.Fatal(err)
	}
	return n
}

func exprBody(expr string, extra string) string {
	b, _ := json.Marshal(expr)
	return `{"condition_expr_json":` + string(b) + extra + `}`
}

// TestConditionsDryRun: validate and simulate answer what an expression
// would decide and why, clause by clause, write nothing, and refuse a
// malformed expression with CONDITION_EXPR_INVALID naming offset, token
// and why.
func TestConditionsDryRun(t *testing.T) {
	f := newFixture(t, nil)
	ops, p1 := map[string]string{"X-Api-Key": keyOps}, map[string]string{"X-Api-Key": key001}
	attPub, attPriv, _ := ed25519.GenerateKey(nil)
	if err := f.reg.Register(f.ctx, signing.Key{KeyID: "KEY-ATT-1", OwnerType: conditions.OwnerAttester, OwnerRef: "INSPECTOR-CO",
		PublicKey: attPub, ValidFrom: t0.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	// Templates: only the operator whitelists them.
	tplInspect := `{"template_id":"TPL-INSPECT","allowed_attester_scope":["INSPECTOR-CO"]}`
	if r := f.do("POST", "/api/conditions/templates", p1, tplInspect); r.status != 403 {
		t.Fatalf("participant registers a template: %d %s", r.status, r.body)
	}
	for _, b := range []string{tplInspect, `{"template_id":"TPL-1030","ledger_predicate":{"type":"TIME_AFTER","at":"2026-12-02T10:30"}}`} {
		if r := f.do("POST", "/api/conditions/templates", ops, b); r.status != 201 {
			t.Fatalf("register %s: %d %s", b, r.status, r.body)
		}
	}
	expr := `{"op":"AND","operands":[{"template_id":"TPL-INSPECT"},{"template_id":"TPL-1030"}]}`

	r := f.do("POST", "/api/conditions/validate", p1, exprBody(expr, ""))
	if r.status != 200 || !strings.Contains(string(r.body), `"templates":[{"template_id":"TPL-INSPECT","kind":"ATTESTATION","status":"ACTIVE"},{"template_id":"TPL-1030","kind":"LEDGER_PREDICATE","status":"ACTIVE"}]`) {
		t.Fatalf("validate: %d %s", r.status, r.body)
	}
	r = f.do("POST", "/api/conditions/validate", p1, exprBody(`{"op":"AND","operands":[{"template_id":"A"},{"templat_id":"B"}]}`, ""))
	d := r.json(t)["details"].(map[string]any)
	if r.status != 400 || r.code(t) != "CONDITION_EXPR_INVALID" || d["offset"] != float64(45) || d["token"] != `"templat_id"` ||
		!strings.Contains(d["why"].(string), "unknown member") {
		t.Fatalf("validate a misspelt member: %d %s", r.status, r.body)
	}

	// A hypothetical set: pure, any authenticated caller.
	r = f.do("POST", "/api/conditions/simulate", p1, exprBody(expr, `,"satisfied":["TPL-INSPECT"]`))
	var dec conditions.Decision
	if err := json.Unmarshal(r.body, &dec); err != nil || r.status != 200 || dec.Allowed || len(dec.Reasons) != 3 ||
		strings.Join(dec.Missing, ",") != "TPL-1030" || dec.Reasons[0].Why != "1 of 2 operands true, 2 needed" {
		t.Fatalf("simulate assumed: %d %s", r.status, r.body)
	}
	// A live evaluation reads other parties' attestations: operator only.
	if r = f.do("POST", "/api/conditions/simulate", p1, exprBody(expr, `,"subject":"HTLC-1"`)); r.status != 403 {
		t.Fatalf("participant live simulate: %d %s", r.status, r.body)
	}
	live := func() conditions.Decision {
		t.Helper()
		r := f.do("POST", "/api/conditions/simulate", ops, exprBody(expr, `,"subject":"HTLC-1"`))
		var d conditions.Decision
		if err := json.Unmarshal(r.body, &d); err != nil || r.status != 200 {
			t.Fatalf("live simulate: %d %s", r.status, r.body)
		}
		return d
	}
	// t0 is 10:00 JST: neither the 10:30 gate nor the inspection holds.
	if d := live(); d.Allowed || d.EvaluatedAt != clock.Stamp(t0) || d.Reasons[2].Leaf.Predicate.Value {
		t.Fatalf("live at 09:00 JST: %+v", d)
	}
	h := sha256.Sum256([]byte("inspection report 42"))
	a := conditions.Attestation{AttestationID: "ATT-1", TemplateID: "TPL-INSPECT", Subject: "HTLC-1", StatementHash: hex.EncodeToString(h[:]),
		VerifiedResult: conditions.ResultPass, KeyID: "KEY-ATT-1", Nonce: "n-1", OccurredAt: clock.Stamp(t0)}
	if err := a.Sign(attPriv); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(a)
	if r = f.do("POST", "/api/attestations", p1, string(body)); r.status != 201 {
		t.Fatalf("record attestation: %d %s", r.status, r.body)
	}
	if r = f.do("POST", "/api/attestations", p1, string(body)); r.status != 409 || r.code(t) != "SIGNATURE_REPLAYED" {
		t.Fatalf("replayed attestation: %d %s", r.status, r.body)
	}
	f.clk.Set(time.Date(2026, 12, 2, 10, 30, 0, 0, clock.JST))
	if d := live(); !d.Allowed || strings.Join(d.Satisfied, ",") != "TPL-INSPECT,TPL-1030" {
		t.Fatalf("live at 10:30 JST after the PASS: %+v", d)
	}
	// 61 minutes after it was signed the PASS is stale (60-minute freshness).
	f.clk.Set(time.Date(2026, 12, 2, 11, 1, 0, 0, clock.JST))
	if d := live(); d.Allowed || strings.Join(d.Missing, ",") != "TPL-INSPECT" {
		t.Fatalf("live at 11:01 JST: %+v", d)
	}
	// The dry runs wrote nothing: one attestation (the recorded one), no
	// FinalityLog entry.
	if f.count(`SELECT COUNT(*) FROM Attestation`) != 1 || f.count(`SELECT COUNT(*) FROM FinalityLog`) != 0 {
		t.Fatal("a dry run wrote")
	}
}
