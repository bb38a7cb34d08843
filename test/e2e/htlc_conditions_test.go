package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/conditions"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
)

// TestHTLCConditionsDecidedByTheEvaluator: with no checker configured the
// orchestrator decides an HTLC's conditions with coordinator/conditions.
// A TIME_AFTER ledger-predicate template (000 §11.3) keeps the claim
// refused (CONDITIONS_NOT_MET, the HTLC stays claimable, nothing moves)
// until the injected clock passes its instant; then the same preimage
// claims and the HTLC settles through the cores. Each evaluation is an
// HtlcConditionsEvaluated entry saying which templates were satisfied.
func TestHTLCConditionsDecidedByTheEvaluator(t *testing.T) {
	s := newHTLCStack(t, nil)
	after := start.Add(30 * time.Minute)
	if _, err := conditions.NewTemplates(s.zc, s.clk).Register(s.ctx, conditions.Template{TemplateID: "TPL-AFTER",
		LedgerPredicate: &conditions.Predicate{Type: conditions.TimeAfter, At: after.Format(time.RFC3339)}}); err != nil {
		t.Fatal(err)
	}
	before := s.snapshot()
	v, pre := s.lockOne("hc1", 41, 3_000, start.Add(2*time.Hour), func(r *orchestrator.HtlcCreate) {
		r.ConditionExpr = json.RawMessage(`{"op":"AND","operands":[{"template_id":"TPL-AFTER"}]}`)
	})
	_, err := s.claim(v.HtlcID, pre)
	wantCode(t, err, "CONDITIONS_NOT_MET")
	s.wantState(v.TxID, "HTLC_LOCKED", "")
	if got := s.snapshot(); got.cust["001"]["h:a"] != before.cust["001"]["h:a"] || got.cust["002"]["h:b"] != before.cust["002"]["h:b"] {
		t.Fatalf("balances moved before the conditions were met")
	}

	s.clk.Set(after.Add(time.Minute))
	if _, err := s.claim(v.HtlcID, pre); err != nil {
		t.Fatal(err)
	}
	s.run()
	evCond := string(finality.HtlcConditionsEvaluated) + ":HTLC_LOCKED>HTLC_LOCKED"
	s.wantChain(v.TxID, evInit, evLocked, evCond, evCond, evFulfill, evDecided, evPayer, evPayee, evSettled)
	for met, want := range map[int]string{0: "[]", 1: `["TPL-AFTER"]`} {
		var sat string
		if n := s.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = 'HtlcConditionsEvaluated' AND json_extract(payload_json, '$.met') = ?`, v.TxID, met); n != 1 {
			t.Fatalf("evaluations with met=%d: %d, want 1", met, n)
		}
		if err := s.zc.Read(s.ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(s.ctx, `SELECT COALESCE(json_extract(payload_json, '$.detail.satisfied'), '[]') FROM FinalityLog WHERE txid = ? AND event_type = 'HtlcConditionsEvaluated' AND json_extract(payload_json, '$.met') = ?`, v.TxID, met).Scan(&sat)
		}); err != nil {
			t.Fatal(err)
		}
		if sat != want {
			t.Errorf("met=%d: satisfied %s, want %s", met, sat, want)
		}
	}
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -3_000}, move{"002", "h:b", 3_000})
}
