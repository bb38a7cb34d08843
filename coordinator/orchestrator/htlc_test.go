package orchestrator

import (
	"encoding/json"
	"github.com/zcgw/zcgw/coordinator/conditions"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

func TestCheckConditionExpr(t *testing.T) {
	deep := `{"template_id":"T"}`
	for i := 0; i < conditions.MaxDepth; i++ {
		deep = `{"op":"OR","operands":[` + deep + `]}`
	}
	for _, c := range []struct {
		expr string
		ok   bool
	}{
		{`{"template_id":"TPL-1"}`, true},
		{`{"op":"AND","operands":[{"template_id":"A"},{"op":"OR","operands":[{"template_id":"B"},{"template_id":"C"}]}]}`, true},
		{`{"op":"THRESHOLD","k":2,"operands":[{"template_id":"A"},{"template_id":"B"},{"template_id":"C"}]}`, true},
		{`{"op":"THRESHOLD","k":4,"operands":[{"template_id":"A"},{"template_id":"B"},{"template_id":"C"}]}`, false},
		{`{"op":"THRESHOLD","k":1.5,"operands":[{"template_id":"A"},{"template_id":"B"}]}`, false},
		{`{"op":"AND","operands":[]}`, false},
		{`{"op":"XOR","operands":[{"template_id":"A"}]}`, false},
		{`{"template_id":""}`, false},
		{`{"template_id":"A","extra":1}`, false},
		{`[{"template_id":"A"}]`, false},
		{`{"op":"AND"`, false},
		{deep, false}, // one level too deep
	} {
		err := checkConditionExpr(json.RawMessage(c.expr))
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v, want ok=%v", c.expr, err, c.ok)
		}
		if err != nil && !domainerr.Has(err, "CONDITION_EXPR_INVALID") {
			t.Errorf("%s: %v is not CONDITION_EXPR_INVALID", c.expr, err)
		}
	}
}

func FuzzCheckConditionExpr(f *testing.F) {
	f.Add(`{"template_id":"TPL-1"}`)
	f.Add(`{"op":"THRESHOLD","k":2,"operands":[{"template_id":"A"},{"template_id":"B"}]}`)
	f.Add(`{"op":"AND","operands":[{"op":"OR","operands":[{"template_id":"A"}]}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		err := checkConditionExpr(json.RawMessage(s))
		if err != nil && !domainerr.Has(err, "CONDITION_EXPR_INVALID") {
			t.Fatalf("%q: %v", s, err)
		}
	})
}

func TestRecheckRequiredAtTheJSTDateLine(t *testing.T) {
	jst := time.FixedZone("JST", 9*3600)
	now := time.Date(2026, 12, 2, 23, 0, 0, 0, jst)
	for _, c := range []struct {
		timelock time.Time
		want     bool
	}{
		{time.Date(2026, 12, 2, 23, 59, 59, 0, jst), false},
		{time.Date(2026, 12, 3, 0, 0, 0, 0, jst), true},
		{time.Date(2026, 12, 5, 9, 0, 0, 0, jst), true},
	} {
		if got := recheckRequired(now, c.timelock); got != c.want {
			t.Errorf("timelock %s: %v, want %v", c.timelock, got, c.want)
		}
	}
}

func TestQuantumRiskAndFinalityClass(t *testing.T) {
	for suite, want := range map[string]string{"secp256k1": "VULNERABLE", "Ed25519": "VULNERABLE", "dilithium3": "RESISTANT", "bls12-381": "UNKNOWN", "": "UNKNOWN"} {
		if got := quantumRisk(suite); got != want {
			t.Errorf("%q: %s, want %s", suite, got, want)
		}
	}
	if finalityClass["PUBLIC"] != "PROBABILISTIC" || finalityClass["PERMISSIONED"] != "DETERMINISTIC" {
		t.Fatal(finalityClass)
	}
}
