package e2e

import (
	"encoding/json"
	"testing"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/mandate"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
)

func (s *stack) dailyUsed(bank string) int {
	s.t.Helper()
	return s.count(`SELECT daily_amount_used FROM Participants WHERE bank_id = ?`, bank)
}

// TestGtidLegsCountInTheDailyLimit: a GTID's PAYER legs are counted in
// their banks' daily totals at the decision, like transfers at Submit;
// a leg over its bank's limit cancels the whole GTID (DAILY_LIMIT_EXCEEDED)
// with every hold released and nothing counted, and the legs already
// counted refuse an ordinary transfer over the rest of the day's limit.
func TestGtidLegsCountInTheDailyLimit(t *testing.T) {
	s := gtidStack(t)
	p, err := s.o.Participants().Get(s.ctx, "002")
	if err != nil {
		t.Fatal(err)
	}
	limit := int64(25_000)
	p.DailyAmountLimit = &limit
	if _, err := s.o.Participants().Update(s.ctx, p); err != nil {
		t.Fatal(err)
	}
	before := s.snapshot()
	if _, err := s.o.RegisterGtid(s.ctx, twoByTwo("001-D1"), "d1", "001"); err != nil {
		t.Fatal(err)
	}
	s.run()
	if v := s.gtid("001-D1"); v.State != "GT_SETTLED" {
		t.Fatalf("%+v", v)
	}
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -30_000}, move{"003", "h:c", 30_000},
		move{"002", "h:b", -20_000}, move{"001", "h:a2", 20_000})
	if a, b := s.dailyUsed("001"), s.dailyUsed("002"); a != 30_000 || b != 20_000 {
		t.Fatalf("daily used 001 %d, 002 %d", a, b)
	}
	// 20,000 + 20,000 > 25,000: P2 is refused and the GTID cancelled;
	// 001's leg, counted in the same rolled-back commit, is not counted.
	before = s.snapshot()
	if _, err := s.o.RegisterGtid(s.ctx, twoByTwo("001-D2"), "d2", "001"); err != nil {
		t.Fatal(err)
	}
	s.run()
	s.wantCancelled("001-D2", orchestrator.ReasonDailyLimitExceeded, before)
	if a, b := s.dailyUsed("001"), s.dailyUsed("002"); a != 30_000 || b != 20_000 {
		t.Fatalf("after the cancel: daily used 001 %d, 002 %d", a, b)
	}
	if h := s.bank["002"].holds("001-D2"); h["LEG-001-D2.P2"] != "RELEASED" {
		t.Fatalf("P2's hold %v", h)
	}
	// The legs count as transfers do: 20,000 + 6,000 > 25,000.
	if _, err := s.submit(orchestrator.LaneExpress, "t-over", "002", "h:b", "003", "h:c", 6_000); !hasCode(err, "DAILY_LIMIT_EXCEEDED") {
		t.Fatalf("transfer over the rest of the limit: %v", err)
	}
	s.mustSubmit(orchestrator.LaneExpress, "t-ok", "002", "h:b", "003", "h:c", 5_000)
}

// TestGtidMandateGatesEveryPayerLeg: a GTID registered under a mandate
// has each PAYER leg checked against it at the precheck; a leg the
// mandate refuses (over max_amount, a payer other than the mandate's,
// revoked) cancels the whole GTID with the MANDATE_* reason and the
// verdict, every hold released, nothing moved, no H and no daily total
// used. Within the mandate the GTID settles and its leg transfers cite it.
func TestGtidMandateGatesEveryPayerLeg(t *testing.T) {
	s := gtidStack(t)
	ms := mandate.New(s.zc, s.clk)
	max := int64(25_000)
	if _, err := ms.Create(s.ctx, mandate.Mandate{MandateID: "MANDATE-G7", PayerBankID: "001", GranteeRef: "agent-7",
		MaxAmount: &max, AllowedLanes: []string{orchestrator.LaneGtid}}, "001"); err != nil {
		t.Fatal(err)
	}
	one := func(gtid string, amount int64, payer, acct string) orchestrator.GtidRegister {
		return orchestrator.GtidRegister{GTID: gtid, MandateID: "MANDATE-G7", Legs: []orchestrator.GtidLegRequest{
			leg("P1", bankapi.RolePayer, payer, acct, amount), leg("E1", bankapi.RolePayee, "003", "h:c", amount)}}
	}
	refused := func(req orchestrator.GtidRegister, issuer, reason string) {
		t.Helper()
		before := s.snapshot()
		if _, err := s.o.RegisterGtid(s.ctx, req, req.GTID, issuer); err != nil {
			t.Fatal(err)
		}
		s.run()
		s.wantCancelled(req.GTID, reason, before)
		var payload string
		if err := s.zc.Read(s.ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(s.ctx, `SELECT payload_json FROM FinalityLog WHERE gtid = ? AND txid IS NULL AND event_type = ?`,
				req.GTID, string(finality.GtidDecidedCancel)).Scan(&payload)
		}); err != nil {
			t.Fatal(err)
		}
		var p struct {
			ReasonCode   string          `json:"reason_code"`
			RefusedLegID string          `json:"refused_leg_id"`
			Mandate      mandate.Verdict `json:"mandate"`
		}
		if err := json.Unmarshal([]byte(payload), &p); err != nil || p.ReasonCode != reason || p.RefusedLegID != "P1" ||
			p.Mandate.Allowed || p.Mandate.ReasonCode != reason {
			t.Fatalf("%s cancel payload %s (%v)", req.GTID, payload, err)
		}
		if s.dailyUsed("001")+s.dailyUsed("002") != 0 {
			t.Fatalf("%s: daily totals used", req.GTID)
		}
	}
	refused(one("001-M1", 30_000, "001", "h:a"), "001", orchestrator.ReasonMandateBreach)
	refused(one("002-M2", 1_000, "002", "h:b"), "002", orchestrator.ReasonMandateBreach) // 002's leg under 001's mandate

	before := s.snapshot()
	if _, err := s.o.RegisterGtid(s.ctx, one("001-M3", 25_000, "001", "h:a"), "m3", "001"); err != nil {
		t.Fatal(err)
	}
	s.run()
	v := s.gtid("001-M3")
	if v.State != "GT_SETTLED" || v.MandateID != "MANDATE-G7" {
		t.Fatalf("%+v", v)
	}
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -25_000}, move{"003", "h:c", 25_000})
	if n := s.count(`SELECT COUNT(*) FROM Transactions WHERE txid = '001-M3.P1' AND mandate_id = 'MANDATE-G7'`); n != 1 {
		t.Fatal("the leg transfer does not cite the mandate")
	}
	s.wantNoH()

	if _, err := ms.Revoke(s.ctx, "MANDATE-G7", "001"); err != nil {
		t.Fatal(err)
	}
	s.clk.Advance(1)
	used := s.dailyUsed("001")
	refusedAfter := one("001-M4", 1_000, "001", "h:a")
	before = s.snapshot()
	if _, err := s.o.RegisterGtid(s.ctx, refusedAfter, "m4", "001"); err != nil {
		t.Fatal(err)
	}
	s.run()
	s.wantCancelled("001-M4", orchestrator.ReasonMandateRevoked, before)
	if s.dailyUsed("001") != used {
		t.Fatal("a refused GTID used the daily total")
	}
	// A malformed mandate_id is refused at registration.
	bad := one("001-M5", 1, "001", "h:a")
	bad.MandateID = "M-5"
	if _, err := s.o.RegisterGtid(s.ctx, bad, "m5", "001"); !hasCode(err, "INVALID_MANDATE_ID") {
		t.Fatalf("malformed mandate_id: %v", err)
	}
}

// TestGtidSeveralLegsBetweenTheSamePayerAndPayee: spec 000 pairs PAYER
// and PAYEE legs by leg_id order, so one payer may pay the same payee in
// several legs (here three: 10,000, 5,000 and 2,500 from 001/h:a to
// 003/h:c, with one leg back from 003 to 001 in the same GTID). Each
// payer leg holds and consumes its own hold, each pair is its own
// transfer, and the cores move by the sums.
func TestGtidSeveralLegsBetweenTheSamePayerAndPayee(t *testing.T) {
	s := gtidStack(t)
	before := s.snapshot()
	req := orchestrator.GtidRegister{GTID: "001-N1", Legs: []orchestrator.GtidLegRequest{
		leg("P1", bankapi.RolePayer, "001", "h:a", 10_000), leg("E1", bankapi.RolePayee, "003", "h:c", 10_000),
		leg("P2", bankapi.RolePayer, "001", "h:a", 5_000), leg("E2", bankapi.RolePayee, "003", "h:c", 5_000),
		leg("P3", bankapi.RolePayer, "001", "h:a", 2_500), leg("E3", bankapi.RolePayee, "003", "h:c", 2_500),
		leg("P4", bankapi.RolePayer, "003", "h:c", 700), leg("E4", bankapi.RolePayee, "001", "h:a", 700),
	}}
	if _, err := s.o.RegisterGtid(s.ctx, req, "n1", "001"); err != nil {
		t.Fatal(err)
	}
	s.run()
	v := s.gtid("001-N1")
	if v.State != "GT_SETTLED" || v.LegsSettledCount != 8 {
		t.Fatalf("%+v", v)
	}
	s.wantAggChain("001-N1", v.Chain, finality.GtidRegistered, finality.GtidPrechecked, finality.GtidDecided, finality.GtidSettled)
	for id, amount := range map[string]int{"001-N1.P1": 10_000, "001-N1.P2": 5_000, "001-N1.P3": 2_500, "001-N1.P4": 700} {
		s.wantState(id, "SETTLED", "")
		if n := s.count(`SELECT amount_value FROM Transactions WHERE txid = ?`, id); n != amount {
			t.Fatalf("%s amount %d", id, n)
		}
	}
	h := s.bank["001"].holds("001-N1")
	if len(h) != 3 || h["LEG-001-N1.P1"] != "CONSUMED" || h["LEG-001-N1.P2"] != "CONSUMED" || h["LEG-001-N1.P3"] != "CONSUMED" {
		t.Fatalf("001 holds %v", h)
	}
	if h := s.bank["003"].holds("001-N1"); len(h) != 1 || h["LEG-001-N1.P4"] != "CONSUMED" {
		t.Fatalf("003 holds %v", h)
	}
	s.wantNoH()
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -17_500 + 700}, move{"003", "h:c", 17_500 - 700})

	// The pairing is by leg_id order: a payer leg whose paired payee leg
	// carries another amount is refused, even when the totals balance
	// (one payer leg cannot fund two payee legs: its one hold is consumed
	// by one debit).
	split := orchestrator.GtidRegister{GTID: "001-N2", Legs: []orchestrator.GtidLegRequest{
		leg("P1", bankapi.RolePayer, "001", "h:a", 15_000),
		leg("E1", bankapi.RolePayee, "003", "h:c", 10_000), leg("E2", bankapi.RolePayee, "003", "h:c", 5_000)}}
	if _, err := s.o.RegisterGtid(s.ctx, split, "n2", "001"); !hasCode(err, "AMOUNT_BALANCE_MISMATCH") {
		t.Fatalf("split: %v", err)
	}
}
