package e2e

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
)

func leg(id, role, bank, acct string, amount int64) orchestrator.GtidLegRequest {
	return orchestrator.GtidLegRequest{LegID: id, Role: role, BankID: bank, AccountHash: acct, Amount: bankapi.Amount{Value: amount, Currency: "JPY"}}
}

// gtidStack: three banks; 001 and 002 pay, 003 and 001 receive.
func gtidStack(t *testing.T) *stack {
	s := newStack(t, stackOptions{}, "001", "002", "003")
	s.bank["001"].account("h:a", "SATO HANAKO", 1_000_000)
	s.bank["001"].account("h:a2", "SATO JIRO", 0)
	s.bank["002"].account("h:b", "YAMADA TARO", 500_000)
	s.bank["003"].account("h:c", "SUZUKI ICHIRO", 1_000)
	return s
}

// twoByTwo pays 30,000 from 001/h:a to 003/h:c and 20,000 from 002/h:b
// to 001/h:a2, all or nothing.
func twoByTwo(gtid string) orchestrator.GtidRegister {
	return orchestrator.GtidRegister{GTID: gtid, Legs: []orchestrator.GtidLegRequest{
		leg("E2", bankapi.RolePayee, "001", "h:a2", 20_000),
		leg("P1", bankapi.RolePayer, "001", "h:a", 30_000),
		leg("E1", bankapi.RolePayee, "003", "h:c", 30_000),
		leg("P2", bankapi.RolePayer, "002", "h:b", 20_000),
	}}
}

func (s *stack) gtid(id string) orchestrator.GtidView {
	s.t.Helper()
	v, err := s.o.Gtid(s.ctx, id)
	if err != nil {
		s.t.Fatalf("gtid %s: %v", id, err)
	}
	return v
}

// wantAggChain asserts the event types of an aggregate chain (GTID, RTP) and
// that the chain verifies.
func (s *stack) wantAggChain(id string, chain []orchestrator.ChainEntry, want ...finality.EventType) {
	s.t.Helper()
	got := make([]finality.EventType, len(chain))
	for i, e := range chain {
		got[i] = finality.EventType(e.EventType)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		s.t.Fatalf("%s chain %v, want %v", id, got, want)
	}
	if r, err := finality.VerifyChain(s.ctx, s.zc, id); err != nil || !r.OK() || r.Entries != len(want) {
		s.t.Fatalf("%s chain does not verify: %+v %v", id, r, err)
	}
}

// hUsed is ZC's H in use per bank and the unreleased reservations.
func (s *stack) hUsed() (map[string]int64, int) {
	s.t.Helper()
	out := map[string]int64{}
	for id := range s.bank {
		p, err := s.o.Participants().Get(s.ctx, id)
		if err != nil {
			s.t.Fatal(err)
		}
		out[id] = p.HUsed
	}
	return out, s.count("SELECT COUNT(*) FROM HReservations WHERE is_released = 0")
}

func (s *stack) wantNoH() {
	s.t.Helper()
	used, open := s.hUsed()
	for id, u := range used {
		if u != 0 {
			s.t.Errorf("bank %s h_used %d, want 0", id, u)
		}
	}
	if open != 0 {
		s.t.Errorf("%d H reservations unreleased", open)
	}
}

// holds returns the status of every hold at bank's adapter whose txid
// starts with prefix.
func (b *bank) holds(prefix string) map[string]string {
	t := b.s.t
	t.Helper()
	out := map[string]string{}
	err := b.a.DB().Read(b.s.ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(b.s.ctx, "SELECT reservation_ref, status FROM AdapterHolds WHERE txid LIKE ?", prefix+"%")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var ref, st string
			if err := rows.Scan(&ref, &st); err != nil {
				return err
			}
			out[ref] = st
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGtidTwoByTwoSettlesAllLegs(t *testing.T) {
	s := gtidStack(t)
	before := s.snapshot()
	r, err := s.o.RegisterGtid(s.ctx, twoByTwo("001-G1"), "g1", "001")
	if err != nil || r.State != "GT_RECEIVED" || r.LegCount != 4 {
		t.Fatalf("register: %+v %v", r, err)
	}
	again, err := s.o.RegisterGtid(s.ctx, twoByTwo("001-G1"), "g1", "001")
	if err != nil || !again.Replayed || again.GTID != r.GTID {
		t.Fatalf("replay: %+v %v", again, err)
	}
	s.run()
	v := s.gtid("001-G1")
	if v.State != "GT_SETTLED" || v.LegsReadyCount != 4 || v.LegsSettledCount != 4 {
		t.Fatalf("%+v", v)
	}
	s.wantAggChain("001-G1", v.Chain, finality.GtidRegistered, finality.GtidPrechecked, finality.GtidDecided, finality.GtidSettled)
	for _, l := range v.Legs {
		if l.State != "LEG_SETTLED" || l.ReadyResult != "OK" || l.TxState != "SETTLED" {
			t.Fatalf("leg %+v", l)
		}
	}
	// Each payer leg's transfer is the one its hold was placed for.
	for _, txid := range []string{"001-G1.P1", "001-G1.P2"} {
		tv := s.wantState(txid, "SETTLED", "")
		if tv.Lane != orchestrator.LaneGtid {
			t.Fatalf("%s lane %s", txid, tv.Lane)
		}
	}
	if h := s.bank["001"].holds("001-G1"); h["LEG-001-G1.P1"] != "CONSUMED" || len(h) != 1 {
		t.Fatalf("001 holds %v", h)
	}
	if h := s.bank["002"].holds("001-G1"); h["LEG-001-G1.P2"] != "CONSUMED" || len(h) != 1 {
		t.Fatalf("002 holds %v", h)
	}
	s.wantNoH()
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -30_000}, move{"003", "h:c", 30_000},
		move{"002", "h:b", -20_000}, move{"001", "h:a2", 20_000})
	if n := s.banks.Calls()[bankapi.LegReadyCheck]; n != 4 {
		t.Fatalf("leg-ready-check calls %d", n)
	}
}

// wantCancelled asserts a GTID cancelled with reason: nothing moved, no
// leg transfer exists, every payer hold is released, no H is held.
func (s *stack) wantCancelled(gtid, reason string, before ledger) orchestrator.GtidView {
	s.t.Helper()
	v := s.gtid(gtid)
	if v.State != "GT_CANCELLED" || v.ReasonCode != reason {
		s.t.Fatalf("%s: %s %q, want GT_CANCELLED %q (%+v)", gtid, v.State, v.ReasonCode, reason, v)
	}
	s.wantAggChain(gtid, v.Chain, finality.GtidRegistered, finality.GtidDecidedCancel, finality.GtidCancelled)
	for _, l := range v.Legs {
		if l.State != "LEG_CANCELLED" || l.TxID != "" {
			s.t.Fatalf("leg %+v", l)
		}
	}
	if n := s.count("SELECT COUNT(*) FROM Transactions WHERE lane = 'GTID' AND txid LIKE ?", gtid+".%"); n != 0 {
		s.t.Fatalf("%d leg transfers of a cancelled GTID", n)
	}
	for _, b := range s.bank {
		for ref, st := range b.holds(gtid) {
			if st != "RELEASED" {
				s.t.Fatalf("bank %s hold %s %s", b.id, ref, st)
			}
		}
	}
	s.wantNoH()
	s.checkInvariants(before, s.snapshot())
	return v
}

func TestGtidLegNotReadyCancelsAll(t *testing.T) {
	s := gtidStack(t)
	before := s.snapshot()
	// 002/h:b holds 500,000: a 600,000 payer leg is NG INSUFFICIENT_FUNDS
	// at its bank, after 001's leg already holds its funds.
	req := orchestrator.GtidRegister{GTID: "001-G2", Legs: []orchestrator.GtidLegRequest{
		leg("P1", bankapi.RolePayer, "001", "h:a", 30_000), leg("E1", bankapi.RolePayee, "003", "h:c", 30_000),
		leg("P2", bankapi.RolePayer, "002", "h:b", 600_000), leg("E2", bankapi.RolePayee, "001", "h:a2", 600_000)}}
	if _, err := s.o.RegisterGtid(s.ctx, req, "g2", "001"); err != nil {
		t.Fatal(err)
	}
	s.run()
	v := s.wantCancelled("001-G2", orchestrator.ReasonLegNotReady, before)
	got := map[string]string{}
	for _, l := range v.Legs {
		got[l.LegID] = l.ReadyResult + "/" + l.ReadyReason
	}
	if got["P2"] != "NG/INSUFFICIENT_FUNDS" || got["P1"] != "OK/" {
		t.Fatalf("answers %v", got)
	}
	if h := s.bank["001"].holds("001-G2"); h["LEG-001-G2.P1"] != "RELEASED" {
		t.Fatalf("P1's hold %v", h)
	}

	// A payee account the bank does not know: NG ACCOUNT_NOT_FOUND.
	req = orchestrator.GtidRegister{GTID: "001-G3", Legs: []orchestrator.GtidLegRequest{
		leg("P1", bankapi.RolePayer, "001", "h:a", 1_000), leg("E1", bankapi.RolePayee, "003", "h:nobody", 1_000)}}
	if _, err := s.o.RegisterGtid(s.ctx, req, "g3", "001"); err != nil {
		t.Fatal(err)
	}
	s.run()
	v = s.wantCancelled("001-G3", orchestrator.ReasonLegNotReady, before)
	for _, l := range v.Legs {
		if l.LegID == "E1" && l.ReadyReason != bankapi.ReasonAccountNotFound {
			t.Fatalf("E1 %+v", l)
		}
	}

	// A frozen payee account cannot take the credit: NG ACCOUNT_FROZEN.
	if err := s.bank["003"].a.SetAccountStatus(s.ctx, "h:c", adapter.AccountFrozen); err != nil {
		t.Fatal(err)
	}
	req = orchestrator.GtidRegister{GTID: "001-G6", Legs: []orchestrator.GtidLegRequest{
		leg("P1", bankapi.RolePayer, "001", "h:a", 1_000), leg("E1", bankapi.RolePayee, "003", "h:c", 1_000)}}
	if _, err := s.o.RegisterGtid(s.ctx, req, "g6", "001"); err != nil {
		t.Fatal(err)
	}
	s.run()
	v = s.wantCancelled("001-G6", orchestrator.ReasonLegNotReady, before)
	for _, l := range v.Legs {
		if l.LegID == "E1" && l.ReadyReason != bankapi.ReasonAccountFrozen {
			t.Fatalf("E1 %+v", l)
		}
	}
}

func TestGtidTimeoutCancelsBySweep(t *testing.T) {
	s := gtidStack(t)
	before := s.snapshot()
	s.banks.SetDown("003", true, bankapi.LegReadyCheck) // E1's bank does not answer
	req := twoByTwo("001-G4")
	req.TimeoutSec = 30
	if _, err := s.o.RegisterGtid(s.ctx, req, "g4", "001"); err != nil {
		t.Fatal(err)
	}
	s.run()
	if v := s.gtid("001-G4"); v.State != "GT_RECEIVED" || v.LegsReadyCount != 3 {
		t.Fatalf("waiting: %+v", v)
	}
	s.clk.Advance(29 * time.Second)
	if res, err := s.o.TimeoutSweep(s.ctx); err != nil || res.GtidTimeouts != 0 {
		t.Fatalf("before expiry: %+v %v", res, err)
	}
	s.clk.Advance(time.Second)
	if res, err := s.o.TimeoutSweep(s.ctx); err != nil || res.GtidTimeouts != 1 {
		t.Fatalf("at expiry: %+v %v", res, err)
	}
	s.run()
	s.wantCancelled("001-G4", orchestrator.ReasonGtidTimeout, before)
}

func TestGtidHLimitCancels(t *testing.T) {
	s := gtidStack(t)
	before := s.snapshot()
	p, err := s.o.Participants().Get(s.ctx, "002")
	if err != nil {
		t.Fatal(err)
	}
	p.HLimit = 10_000 // below P2's 20,000
	if _, err := s.o.Participants().Update(s.ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.o.RegisterGtid(s.ctx, twoByTwo("001-G5"), "g5", "001"); err != nil {
		t.Fatal(err)
	}
	s.run()
	s.wantCancelled("001-G5", orchestrator.ReasonHLimitExceeded, before)
	_ = participants.ModeFull
}

func TestGtidRegisterRefusals(t *testing.T) {
	s := gtidStack(t)
	unbalanced := twoByTwo("001-X1")
	unbalanced.Legs[0].Amount.Value = 19_999
	noPayee := orchestrator.GtidRegister{Legs: []orchestrator.GtidLegRequest{
		leg("P1", bankapi.RolePayer, "001", "h:a", 1), leg("P2", bankapi.RolePayer, "002", "h:b", 1)}}
	foreign := twoByTwo("002-X3")
	longLeg := twoByTwo("001-X4")
	longLeg.Legs[0].LegID = "E2-0123456789abcdefghijklm"
	for want, c := range map[string]struct {
		req    orchestrator.GtidRegister
		issuer string
	}{
		"AMOUNT_BALANCE_MISMATCH": {unbalanced, "001"},
		"MISSING_LEG_ROLE":        {noPayee, "001"},
		"INVALID_REQUEST":         {foreign, "001"},
		"UNAUTHORIZED":            {twoByTwo(""), "009"},
		"INVALID_CURRENCY":        {orchestrator.GtidRegister{Legs: []orchestrator.GtidLegRequest{{LegID: "P", Role: "PAYER", BankID: "001", AccountHash: "h:a", Amount: bankapi.Amount{Value: 1, Currency: "XXX"}}, leg("E", "PAYEE", "002", "h:b", 1)}}, "001"},
	} {
		if _, err := s.o.RegisterGtid(s.ctx, c.req, "k-"+want, c.issuer); err == nil || !hasCode(err, want) {
			t.Errorf("%s: %v", want, err)
		}
	}
	if _, err := s.o.RegisterGtid(s.ctx, longLeg, "k-long", "001"); !hasCode(err, "INVALID_REQUEST") {
		t.Errorf("leg txid too long: %v", err)
	}
	if n := s.count("SELECT COUNT(*) FROM GtidTransactions"); n != 0 {
		t.Fatalf("%d GTIDs written by refused requests", n)
	}
}

// TestGtidRaceLegTimeoutVersusDecision: the last leg's bank comes back
// just as the GTID expires. Drivers (which ask the last leg, then decide)
// race the timeout sweep (which cancels) while the clock crosses
// expires_at. Exactly one outcome lands: GT_SETTLED with every leg's
// money moved, or GT_CANCELLED with nothing moved and every hold
// released; never both, never half; no H left behind.
func TestGtidRaceLegTimeoutVersusDecision(t *testing.T) {
	s := gtidStack(t)
	outcomes := map[string]int{}
	for round := 0; round < 10; round++ {
		gtid := fmt.Sprintf("001-R%d", round)
		before := s.snapshot()
		req := twoByTwo(gtid)
		req.TimeoutSec = 10
		s.banks.SetDown("002", true, bankapi.LegReadyCheck) // P2's answer is late
		if _, err := s.o.RegisterGtid(s.ctx, req, gtid, "001"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.o.RunUntilIdle(s.ctx); err != nil {
			t.Fatal(err)
		}
		s.banks.SetDown("002", false)
		s.clk.Advance(10*time.Second - time.Duration(2*round+2)*time.Millisecond) // the retry is due; expiry 2..20 ms away, the clock goroutines move it 12 ms
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < 12; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				for k := 0; k < 3; k++ {
					switch i % 3 {
					case 0:
						if _, err := s.o.RunOnce(s.ctx); err != nil {
							t.Error(err)
						}
					case 1:
						if _, err := s.o.TimeoutSweep(s.ctx); err != nil {
							t.Error(err)
						}
					default:
						s.clk.Advance(time.Millisecond)
					}
				}
			}(i)
		}
		close(start)
		wg.Wait()
		s.clk.Advance(time.Second)
		if _, err := s.o.TimeoutSweep(s.ctx); err != nil {
			t.Fatal(err)
		}
		s.run()
		v := s.gtid(gtid)
		outcomes[v.State]++
		decided, cancelled := 0, 0
		for _, e := range v.Chain {
			switch finality.EventType(e.EventType) {
			case finality.GtidDecided:
				decided++
			case finality.GtidDecidedCancel:
				cancelled++
			}
		}
		if decided+cancelled != 1 {
			t.Fatalf("round %d: %d decisions, %d cancels", round, decided, cancelled)
		}
		switch v.State {
		case "GT_SETTLED":
			s.wantNoH()
			s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -30_000}, move{"003", "h:c", 30_000},
				move{"002", "h:b", -20_000}, move{"001", "h:a2", 20_000})
		case "GT_CANCELLED":
			s.wantCancelled(gtid, orchestrator.ReasonGtidTimeout, before)
		default:
			t.Fatalf("round %d ended %s", round, v.State)
		}
	}
	t.Logf("outcomes %v", outcomes)
}

func hasCode(err error, code string) bool { return domainerr.Code(err) == code }
