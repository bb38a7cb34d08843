package e2e

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/conditions"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/signing"
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

// attesters registers ATTESTER keys (one per operator) and signs
// attestations with them.
type attesters struct {
	s    *htlcStack
	priv map[string]ed25519.PrivateKey // operator -> key
	n    int
}

func (s *htlcStack) attesters(ops ...string) *attesters {
	s.t.Helper()
	a := &attesters{s: s, priv: map[string]ed25519.PrivateKey{}}
	for _, op := range ops {
		pub, priv, _ := ed25519.GenerateKey(nil)
		a.priv[op] = priv
		if err := signing.NewRegistry(s.zc, s.clk).Register(s.ctx, signing.Key{KeyID: "KEY-ATT-" + op, OwnerType: conditions.OwnerAttester,
			OwnerRef: op, PublicKey: pub, ValidFrom: start.Add(-time.Hour)}); err != nil {
			s.t.Fatal(err)
		}
	}
	return a
}

func (a *attesters) sign(op, tpl, subject, result string) conditions.Attestation {
	a.s.t.Helper()
	a.n++
	h := sha256.Sum256([]byte(fmt.Sprintf("inspection report %d", a.n)))
	att := conditions.Attestation{AttestationID: fmt.Sprintf("ATT-%s-%d", op, a.n), TemplateID: tpl, Subject: subject,
		StatementHash: hex.EncodeToString(h[:]), VerifiedResult: result, KeyID: "KEY-ATT-" + op, Nonce: fmt.Sprintf("n-%d", a.n),
		OccurredAt: a.s.clk.Now().UTC().Format(time.RFC3339)}
	if err := att.Sign(a.priv[op]); err != nil {
		a.s.t.Fatal(err)
	}
	return att
}

// TestHTLCClaimByConditionsFullStack (001 §15.5, 000 §11.3,
// claimHtlcByConditions): the payee claims without the preimage. The
// expression is THRESHOLD 2 of {delivery inspected by two distinct
// operators, customs cleared, TIME_AFTER}. An HTLC without an expression
// is CONDITION_EXPR_NOT_SET; one PASS of the two-operator template is not
// enough (CONDITIONS_NOT_MET, still HTLC_LOCKED, nothing moved, evaluation
// recorded with its quorum); a FAIL next to a PASS on customs equivocates
// — one ATTESTATION_EQUIVOCATION Case, that leaf fails closed — yet the
// other branch (the inspection quorum and the time) still settles it: HtlcConditionsEvaluated and
// HtlcFulfillRequested (source CONDITIONS) in order, the cores ±amount,
// H released, and a repeated claim answers the same.
func TestHTLCClaimByConditionsFullStack(t *testing.T) {
	s := newHTLCStack(t, nil)
	att := s.attesters("INSPECT-A", "INSPECT-B", "CUSTOMS")
	tpls := conditions.NewTemplates(s.zc, s.clk)
	for _, tpl := range []conditions.Template{
		{TemplateID: "TPL-DELIVERY", AllowedAttesterScope: []string{"INSPECT-A", "INSPECT-B"}, MinAttesterQuorum: 2},
		{TemplateID: "TPL-CUSTOMS", AllowedAttesterScope: []string{"CUSTOMS", "INSPECT-A"}},
		{TemplateID: "TPL-AFTER10", LedgerPredicate: &conditions.Predicate{Type: conditions.TimeAfter, At: start.Add(10 * time.Minute).Format(time.RFC3339)}},
	} {
		if _, err := tpls.Register(s.ctx, tpl); err != nil {
			t.Fatal(err)
		}
	}
	before := s.snapshot()
	plain, _ := s.lockOne("cbc0", 60, 100, start.Add(time.Hour), nil)
	_, err := s.o.ClaimHTLCByConditions(s.ctx, plain.HtlcID, orchestrator.HtlcConditionsClaim{}, "002")
	wantCode(t, err, "CONDITION_EXPR_NOT_SET")

	expr := `{"op":"THRESHOLD","k":2,"operands":[{"template_id":"TPL-DELIVERY"},{"template_id":"TPL-CUSTOMS"},{"template_id":"TPL-AFTER10"}]}`
	v, _ := s.lockOne("cbc1", 61, 4_000, start.Add(time.Hour), func(r *orchestrator.HtlcCreate) { r.ConditionExpr = json.RawMessage(expr) })
	_, err = s.o.ClaimHTLCByConditions(s.ctx, v.HtlcID, orchestrator.HtlcConditionsClaim{}, "001")
	wantCode(t, err, "HTLC_NOT_FOUND") // the payer may not claim
	_, err = s.o.ClaimHTLCByConditions(s.ctx, v.HtlcID, orchestrator.HtlcConditionsClaim{
		Attestations: []conditions.Attestation{att.sign("INSPECT-A", "TPL-DELIVERY", v.HtlcID, conditions.ResultPass)}}, "002")
	wantCode(t, err, "CONDITIONS_NOT_MET")
	s.wantState(v.TxID, "HTLC_LOCKED", "")
	// an attestation from outside the template's scope is refused before anything is evaluated
	_, err = s.o.ClaimHTLCByConditions(s.ctx, v.HtlcID, orchestrator.HtlcConditionsClaim{
		Attestations: []conditions.Attestation{att.sign("CUSTOMS", "TPL-DELIVERY", v.HtlcID, conditions.ResultPass)}}, "002")
	wantCode(t, err, "ATTESTER_UNAUTHORIZED")
	// customs equivocates: PASS from CUSTOMS, FAIL from INSPECT-A
	_, err = s.o.ClaimHTLCByConditions(s.ctx, v.HtlcID, orchestrator.HtlcConditionsClaim{Attestations: []conditions.Attestation{
		att.sign("CUSTOMS", "TPL-CUSTOMS", v.HtlcID, conditions.ResultPass), att.sign("INSPECT-A", "TPL-CUSTOMS", v.HtlcID, conditions.ResultFail)}}, "002")
	wantCode(t, err, "ATTESTATION_EQUIVOCATION")
	if got := s.snapshot(); got.cust["001"]["h:a"] != before.cust["001"]["h:a"] || got.cust["002"]["h:b"] != before.cust["002"]["h:b"] {
		t.Fatal("balances moved before the conditions were met")
	}
	// the delivery quorum and the time: 2 of 3 without the equivocated leaf
	s.clk.Set(start.Add(11 * time.Minute))
	pres := orchestrator.HtlcPresenter{PresenterOrgID: "002", PresenterSystemID: "payee-gw"}
	got, err := s.o.ClaimHTLCByConditions(s.ctx, v.HtlcID, orchestrator.HtlcConditionsClaim{HtlcPresenter: pres,
		Attestations: []conditions.Attestation{att.sign("INSPECT-B", "TPL-DELIVERY", v.HtlcID, conditions.ResultPass)}}, "002")
	if err != nil || got.TxState != "HTLC_FULFILL_REQUESTED" || got.SecretVerified {
		t.Fatalf("claim %+v %v (no preimage was verified)", got, err)
	}
	if again, err := s.o.ClaimHTLCByConditions(s.ctx, v.HtlcID, orchestrator.HtlcConditionsClaim{}, "002"); err != nil || !again.Replayed {
		t.Fatalf("repeat %+v %v", again, err)
	}
	s.run()
	evCond := string(finality.HtlcConditionsEvaluated) + ":HTLC_LOCKED>HTLC_LOCKED"
	s.wantChain(v.TxID, evInit, evLocked, evCond, evCond, evCond, evFulfill, evDecided, evPayer, evPayee, evSettled)
	if n := s.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = 'HtlcFulfillRequested' AND json_extract(payload_json, '$.source') = 'CONDITIONS'
		AND json_extract(payload_json, '$.presenter_system_id') = 'payee-gw'`, v.TxID); n != 1 {
		t.Fatal("the fulfilment does not record its source and presenter")
	}
	if n := s.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = 'HtlcConditionsEvaluated' AND json_extract(payload_json, '$.met') = 1
		AND json_extract(payload_json, '$.detail.quorum.TPL-DELIVERY.pass_operators') = '["INSPECT-A","INSPECT-B"]'
		AND json_extract(payload_json, '$.equivocated') = '["TPL-CUSTOMS"]'`, v.TxID); n != 1 {
		t.Fatal("the met evaluation does not record the quorum breakdown and the equivocation")
	}
	// one Case for the equivocation, however many evaluations saw it
	if n := s.count(`SELECT COUNT(*) FROM Cases WHERE reason_code = 'ATTESTATION_EQUIVOCATION' AND related_txid = ? AND state = 'OPEN'`, v.TxID); n != 1 {
		t.Fatalf("equivocation cases %d", n)
	}
	if s.hUsed() != 100 || s.openH(v.TxID) != 0 || s.hold(v.TxID) != "CONSUMED" { // the plain HTLC is still locked
		t.Fatalf("h_used %d hold %s", s.hUsed(), s.hold(v.TxID))
	}
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -4_000}, move{"002", "h:b", 4_000})
}

// TestHTLCClaimByAttestationFullStack (003 condition_template_id,
// claimHtlcByAttestation): a single-template HTLC. No template:
// CONDITION_TEMPLATE_NOT_SET; another template: TEMPLATE_MISMATCH; a FAIL
// attestation: ATTESTATION_NOT_PASS with HtlcClaimRejected; a PASS by the
// template's attester settles it (source ATTESTATION). A second HTLC whose
// claim races its timelock sweep ends one way; the preimage route still
// works on a template HTLC.
func TestHTLCClaimByAttestationFullStack(t *testing.T) {
	s := newHTLCStack(t, nil)
	att := s.attesters("ESCROW-AGENT")
	if _, err := conditions.NewTemplates(s.zc, s.clk).Register(s.ctx, conditions.Template{TemplateID: "TPL-ESCROW",
		AllowedAttesterScope: []string{"ESCROW-AGENT"}}); err != nil {
		t.Fatal(err)
	}
	before := s.snapshot()
	_, hl := secret(70)
	_, err := s.o.CreateHTLC(s.ctx, orchestrator.HtlcCreate{Amount: bankapi.Amount{Value: 10, Currency: "JPY"},
		Payer: orchestrator.Party{BankID: "001", AccountHash: "h:a"}, Payee: orchestrator.Party{BankID: "002", AccountHash: "h:b"},
		HashAlg: orchestrator.HashAlgSHA256, Hashlock: hl, Timelock: start.Add(time.Hour).Format(time.RFC3339), ConditionTemplateID: "TPL-NONE"}, "cba-x", "001")
	wantCode(t, err, "TEMPLATE_NOT_WHITELISTED")
	plain, _ := s.lockOne("cba0", 71, 100, start.Add(time.Hour), nil)
	_, err = s.o.ClaimHTLCByAttestation(s.ctx, plain.HtlcID, orchestrator.HtlcAttestationClaim{TemplateID: "TPL-ESCROW",
		Attestation: att.sign("ESCROW-AGENT", "TPL-ESCROW", plain.HtlcID, conditions.ResultPass)}, "002")
	wantCode(t, err, "CONDITION_TEMPLATE_NOT_SET")

	withTpl := func(r *orchestrator.HtlcCreate) { r.ConditionTemplateID = "TPL-ESCROW" }
	v, _ := s.lockOne("cba1", 72, 3_300, start.Add(2*time.Hour), withTpl)
	if v.ConditionTemplateID != "TPL-ESCROW" {
		t.Fatalf("view %+v", v)
	}
	_, err = s.o.ClaimHTLCByAttestation(s.ctx, v.HtlcID, orchestrator.HtlcAttestationClaim{TemplateID: "TPL-OTHER",
		Attestation: att.sign("ESCROW-AGENT", "TPL-ESCROW", v.HtlcID, conditions.ResultPass)}, "002")
	wantCode(t, err, "TEMPLATE_MISMATCH")
	_, err = s.o.ClaimHTLCByAttestation(s.ctx, v.HtlcID, orchestrator.HtlcAttestationClaim{TemplateID: "TPL-ESCROW",
		Attestation: att.sign("ESCROW-AGENT", "TPL-ESCROW", v.HtlcID, conditions.ResultFail)}, "002")
	wantCode(t, err, "ATTESTATION_NOT_PASS")
	s.wantState(v.TxID, "HTLC_LOCKED", "")
	// The agent corrects itself: a PASS after its FAIL equivocates, fail closed.
	pass := att.sign("ESCROW-AGENT", "TPL-ESCROW", v.HtlcID, conditions.ResultPass)
	_, err = s.o.ClaimHTLCByAttestation(s.ctx, v.HtlcID, orchestrator.HtlcAttestationClaim{TemplateID: "TPL-ESCROW", Attestation: pass}, "002")
	wantCode(t, err, "ATTESTATION_EQUIVOCATION")
	// The FAIL (and that PASS) age out of the template's 60-minute
	// freshness; a fresh PASS then counts alone and settles the HTLC.
	s.clk.Advance(61 * time.Minute)
	got, err := s.o.ClaimHTLCByAttestation(s.ctx, v.HtlcID, orchestrator.HtlcAttestationClaim{TemplateID: "TPL-ESCROW",
		Attestation: att.sign("ESCROW-AGENT", "TPL-ESCROW", v.HtlcID, conditions.ResultPass)}, "002")
	if err != nil || got.TxState != "HTLC_FULFILL_REQUESTED" {
		t.Fatalf("claim %+v %v", got, err)
	}
	s.run()
	evCond := string(finality.HtlcConditionsEvaluated) + ":HTLC_LOCKED>HTLC_LOCKED"
	s.wantChain(v.TxID, evInit, evLocked, evRejected, evCond, evCond, evFulfill, evDecided, evPayer, evPayee, evSettled)
	if n := s.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = 'HtlcClaimRejected' AND json_extract(payload_json, '$.reason_code') = 'ATTESTATION_NOT_PASS'`, v.TxID); n != 1 {
		t.Fatal("ATTESTATION_NOT_PASS not recorded")
	}
	if n := s.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = 'HtlcFulfillRequested' AND json_extract(payload_json, '$.source') = 'ATTESTATION'`, v.TxID); n != 1 {
		t.Fatal("the fulfilment does not record its source")
	}
	if n := s.count(`SELECT COUNT(*) FROM Cases WHERE reason_code = 'ATTESTATION_EQUIVOCATION' AND related_txid = ?`, v.TxID); n != 1 {
		t.Fatalf("equivocation cases %d", n)
	}
	if s.hUsed() != 100 || s.openH(v.TxID) != 0 || s.hold(v.TxID) != "CONSUMED" { // the plain HTLC is still locked
		t.Fatalf("h_used %d hold %s", s.hUsed(), s.hold(v.TxID))
	}
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -3_300}, move{"002", "h:b", 3_300})
}

// TestHTLCClaimByConditionsVersusExpiryRace: claims by conditions race the
// timelock sweep for n HTLCs at once. Each HTLC ends one way: settled
// (the claim's CAS won; no cancel recorded) or cancelled TIMELOCK_EXPIRED
// with the claim answering EXPIRED; H, the bank's hold and the cores agree.
func TestHTLCClaimByConditionsVersusExpiryRace(t *testing.T) {
	s := newHTLCStack(t, nil)
	if _, err := conditions.NewTemplates(s.zc, s.clk).Register(s.ctx, conditions.Template{TemplateID: "TPL-OPEN",
		LedgerPredicate: &conditions.Predicate{Type: conditions.TimeAfter, At: start.Add(-time.Hour).Format(time.RFC3339)}}); err != nil {
		t.Fatal(err)
	}
	before := s.snapshot()
	tl := start.Add(30 * time.Minute)
	const n = 8
	vs := make([]orchestrator.HtlcView, n)
	for i := range vs {
		vs[i], _ = s.lockOne(fmt.Sprintf("cr-%d", i), 400+i, int64(300+i), tl, func(r *orchestrator.HtlcCreate) {
			r.ConditionExpr = json.RawMessage(`{"template_id":"TPL-OPEN"}`)
		})
	}
	errs := s.raceTheSweep(n, tl, func(i int) error {
		_, err := s.o.ClaimHTLCByConditions(s.ctx, vs[i].HtlcID, orchestrator.HtlcConditionsClaim{}, "002")
		return err
	})
	var moves []move
	for i, v := range vs {
		view := s.view(v.TxID)
		chain := strings.Join(s.chain(v.TxID), " ")
		fulfil, cancel := strings.Count(chain, "HtlcFulfillRequested"), strings.Count(chain, "DecidedCancel")
		switch {
		case errs[i] == nil:
			if view.State != "SETTLED" || fulfil != 1 || cancel != 0 || s.hold(v.TxID) != "CONSUMED" {
				t.Errorf("%d: claimed but %s hold %s chain %s", i, view.State, s.hold(v.TxID), chain)
			}
			moves = append(moves, move{"001", "h:a", -int64(300 + i)}, move{"002", "h:b", int64(300 + i)})
		case domainerr.Has(errs[i], "EXPIRED"):
			if view.State != "CANCELLED" || view.ReasonCode != "TIMELOCK_EXPIRED" || fulfil != 0 || cancel != 1 || s.hold(v.TxID) != "RELEASED" {
				t.Errorf("%d: EXPIRED but %s/%s hold %s chain %s", i, view.State, view.ReasonCode, s.hold(v.TxID), chain)
			}
		default:
			t.Errorf("%d: claim error %v", i, errs[i])
		}
		if s.openH(v.TxID) != 0 {
			t.Errorf("%d: H still reserved", i)
		}
	}
	if s.hUsed() != 0 {
		t.Fatalf("h_used %d", s.hUsed())
	}
	s.checkInvariants(before, s.snapshot(), moves...)
	t.Logf("%d of %d claimed before the sweep", len(moves)/2, n)
}
