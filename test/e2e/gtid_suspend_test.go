package e2e

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/fx"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
)

// gtidSuspendStack is gtidStack with the execution timeouts of the
// refund tests (a minute to execute, an hour suspended) and banks parked
// as SUSPEND_ADAPTER_DOWN after downAfter failed calls.
func gtidSuspendStack(t *testing.T, downAfter int) *stack {
	s := newStack(t, stackOptions{cfg: func(c *orchestrator.Config) {
		c.Timeouts = orchestrator.Timeouts{Exec: time.Minute, PayeeProof: time.Minute, Suspended: time.Hour, AdapterDownAfter: downAfter}
	}}, "001", "002", "003")
	s.bank["001"].account("h:a", "SATO HANAKO", 1_000_000)
	s.bank["001"].account("h:a2", "SATO JIRO", 0)
	s.bank["002"].account("h:b", "YAMADA TARO", 500_000)
	s.bank["003"].account("h:c", "SUZUKI ICHIRO", 1_000)
	return s
}

// retryDue moves the clock past the queue's backoff and works the queue.
func (s *stack) retryDue() {
	s.t.Helper()
	s.clk.Advance(10 * time.Minute)
	s.run()
}

// wantSuspended asserts a GTID suspended by its leg txid: the chain up to
// GtidSuspended, the reason, and its Case OPEN (or IN_PROGRESS) linked
// to the GTID.
func (s *stack) wantSuspended(gtid, legTxID, legReason string) orchestrator.GtidView {
	s.t.Helper()
	v := s.gtid(gtid)
	if v.State != "GT_SUSPENDED" || v.ReasonCode != orchestrator.ReasonGtidLegSuspended || v.CaseID == "" {
		s.t.Fatalf("%s: %+v", gtid, v)
	}
	s.wantAggChain(gtid, v.Chain, finality.GtidRegistered, finality.GtidPrechecked, finality.GtidDecided, finality.GtidSuspended)
	if n := s.count(`SELECT COUNT(*) FROM FinalityLog WHERE gtid = ? AND txid IS NULL AND event_type = 'GtidSuspended'
		AND json_extract(payload_json, '$.leg_txid') = ? AND json_extract(payload_json, '$.leg_reason_code') = ?`, gtid, legTxID, legReason); n != 1 {
		s.t.Fatalf("%s: GtidSuspended does not name %s %s", gtid, legTxID, legReason)
	}
	if n := s.count(`SELECT COUNT(*) FROM Cases c JOIN CaseRelatedTransactions r ON r.case_id = c.case_id
		WHERE c.case_id = ? AND c.reason_code = ? AND r.related_gtid = ?`, v.CaseID, orchestrator.ReasonGtidLegSuspended, gtid); n != 1 {
		s.t.Fatalf("%s: no Case %s linked", gtid, v.CaseID)
	}
	return v
}

func (s *stack) caseState(id string) string {
	s.t.Helper()
	var st string
	if err := s.zc.Read(s.ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(s.ctx, `SELECT state FROM Cases WHERE case_id = ?`, id).Scan(&st)
	}); err != nil {
		s.t.Fatal(err)
	}
	return st
}

// TestGtidLegSuspendedRecoversToSettled: the payee bank of P1's leg does
// not answer execute-credit; the sweep suspends the leg
// (SUSPEND_PAYEE_PROOF_TIMEOUT) and with it the GTID (GT_SUSPENDED, a
// Case). P1's payer is debited, its payee not credited; P2's leg settled.
// The bank comes back, the queue's retry credits the payee, and the
// commit that settles the leg moves GT_SUSPENDED -> GT_SETTLED and
// resolves the Case: every leg's money moved, no H left.
func TestGtidLegSuspendedRecoversToSettled(t *testing.T) {
	s := gtidSuspendStack(t, 1000)
	before := s.snapshot()
	s.banks.SetDown("003", true, bankapi.ExecuteCredit)
	if _, err := s.o.RegisterGtid(s.ctx, twoByTwo("001-S1"), "s1", "001"); err != nil {
		t.Fatal(err)
	}
	s.run()
	if v := s.gtid("001-S1"); v.State != "GT_DECIDED_TO_SETTLE" {
		t.Fatalf("%+v", v)
	}
	s.clk.Advance(61 * time.Second)
	if res, err := s.o.TimeoutSweep(s.ctx); err != nil || res.PayeeProofTimeouts != 1 {
		t.Fatalf("sweep: %+v %v", res, err)
	}
	s.wantState("001-S1.P1", "SUSPENDED", orchestrator.ReasonSuspendPayeeProofTimeout)
	v := s.wantSuspended("001-S1", "001-S1.P1", orchestrator.ReasonSuspendPayeeProofTimeout)
	if s.caseState(v.CaseID) != "OPEN" {
		t.Fatal("case not open")
	}
	s.run()
	if got := []int64{s.bank["001"].coreBalance("h:a"), s.bank["003"].coreBalance("h:c"), s.bank["002"].coreBalance("h:b"),
		s.bank["001"].coreBalance("h:a2")}; fmt.Sprint(got) != fmt.Sprint([]int64{970_000, 1_000, 480_000, 20_000}) {
		t.Fatalf("while suspended: cores %v", got)
	}
	if used, _ := s.hUsed(); used["001"] != 30_000 || used["002"] != 0 {
		t.Fatalf("while suspended: H %v (P1's is held until its leg settles)", used)
	}

	s.banks.SetDown("003", false)
	s.retryDue()
	caseID := v.CaseID
	v = s.gtid("001-S1")
	if v.State != "GT_SETTLED" || v.LegsSettledCount != 4 || v.CaseID != caseID {
		t.Fatalf("%+v", v)
	}
	s.wantAggChain("001-S1", v.Chain, finality.GtidRegistered, finality.GtidPrechecked, finality.GtidDecided, finality.GtidSuspended, finality.GtidSettled)
	if st := s.caseState(caseID); st != "RESOLVED" {
		t.Fatalf("case %s", st)
	}
	s.wantNoH()
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -30_000}, move{"003", "h:c", 30_000},
		move{"002", "h:b", -20_000}, move{"001", "h:a2", 20_000})
}

// debitRefused registers twoByTwo(gtid) and makes P2's execute-debit
// refused after the decision: 002's account is frozen once its hold is
// placed (the bank is down for execute-debit while it is frozen), so the
// leg is SUSPENDED / EXEC_DEBIT_FAILED and the GTID GT_SUSPENDED; P1's leg
// settles.
func (s *stack) debitRefused(gtid string) orchestrator.GtidView {
	s.t.Helper()
	s.banks.SetDown("002", true, bankapi.ExecuteDebit)
	if _, err := s.o.RegisterGtid(s.ctx, twoByTwo(gtid), gtid, "001"); err != nil {
		s.t.Fatal(err)
	}
	s.run()
	if err := s.bank["002"].a.SetAccountStatus(s.ctx, "h:b", adapter.AccountFrozen); err != nil {
		s.t.Fatal(err)
	}
	s.banks.SetDown("002", false)
	s.retryDue()
	s.wantState(gtid+".P2", "SUSPENDED", orchestrator.ReasonExecDebitFailed)
	s.wantState(gtid+".P1", "SETTLED", "")
	return s.wantSuspended(gtid, gtid+".P2", orchestrator.ReasonExecDebitFailed)
}

// TestGtidSuspendedLegRetriedByTheOperator: a refused debit is not
// retried by the queue (its item is acknowledged to a Case). Once the
// account is unfrozen, POST /internal/gtid/{gtid}/retry (RetryGtid)
// drives the leg again: it settles, the GTID goes GT_SUSPENDED ->
// GT_SETTLED, the Case is resolved and every leg's money has moved.
// Retrying a GTID that is not suspended is STATE_GUARD.
func TestGtidSuspendedLegRetriedByTheOperator(t *testing.T) {
	s := gtidSuspendStack(t, 1000)
	before := s.snapshot()
	v := s.debitRefused("001-S2")
	op := orchestrator.GtidOperatorRequest{Operator: "ops-1", Reason: "account unfrozen by the bank"}
	if _, err := s.o.ResolveGtid(s.ctx, "001-S2", op); !hasCode(err, "STATE_GUARD") {
		t.Fatalf("resolve while a leg may recover: %v", err)
	}
	if _, err := s.o.RetryGtid(s.ctx, "001-S2", orchestrator.GtidOperatorRequest{Operator: "ops-1"}); !hasCode(err, "MISSING_FIELD") {
		t.Fatalf("retry without a reason: %v", err)
	}
	if err := s.bank["002"].a.SetAccountStatus(s.ctx, "h:b", adapter.AccountActive); err != nil {
		t.Fatal(err)
	}
	r, err := s.o.RetryGtid(s.ctx, "001-S2", op)
	if err != nil || fmt.Sprint(r.Requeued) != "[001-S2.P2]" || r.CaseID != v.CaseID {
		t.Fatalf("retry: %+v %v", r, err)
	}
	if st := s.caseState(v.CaseID); st != "IN_PROGRESS" {
		t.Fatalf("case %s", st)
	}
	s.run()
	g := s.gtid("001-S2")
	if g.State != "GT_SETTLED" {
		t.Fatalf("%+v", g)
	}
	s.wantAggChain("001-S2", g.Chain, finality.GtidRegistered, finality.GtidPrechecked, finality.GtidDecided, finality.GtidSuspended, finality.GtidSettled)
	if st := s.caseState(v.CaseID); st != "RESOLVED" {
		t.Fatalf("case %s", st)
	}
	if h := s.bank["002"].holds("001-S2"); h["LEG-001-S2.P2"] != "CONSUMED" {
		t.Fatalf("002 holds %v", h)
	}
	s.wantNoH()
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -30_000}, move{"003", "h:c", 30_000},
		move{"002", "h:b", -20_000}, move{"001", "h:a2", 20_000})
	if _, err := s.o.RetryGtid(s.ctx, "001-S2", op); !hasCode(err, "STATE_GUARD") {
		t.Fatalf("retry of a settled GTID: %v", err)
	}
}

// TestGtidFailedLegResolvedByTheOperator: the refused leg is never fixed;
// the sweep fails it after the suspension limit (FAILED_EXECUTION), then
// POST /internal/gtid/{gtid}/resolve (ResolveGtid) closes the GTID:
// GT_SUSPENDED -> GT_FAILED_EXECUTION (GtidFailed naming the failed and
// the settled legs), the failed legs LEG_FAILED, the failed payer leg's
// hold released at its bank (it was never debited), the Case resolved.
// P1's settled leg stays settled; P2's payer kept its money; no H is held.
// Resolving again answers the same state and does nothing.
func TestGtidFailedLegResolvedByTheOperator(t *testing.T) {
	s := gtidSuspendStack(t, 1000)
	before := s.snapshot()
	v := s.debitRefused("001-S3")
	s.clk.Advance(time.Hour + time.Second)
	if res, err := s.o.TimeoutSweep(s.ctx); err != nil || res.FailedTimeouts != 1 {
		t.Fatalf("sweep: %+v %v", res, err)
	}
	s.wantState("001-S3.P2", "FAILED_EXECUTION", orchestrator.ReasonFailedExecTimeout)
	if _, err := s.o.RetryGtid(s.ctx, "001-S3", orchestrator.GtidOperatorRequest{Operator: "ops-1", Reason: "r"}); !hasCode(err, "STATE_GUARD") {
		t.Fatalf("retry of a failed leg: %v", err)
	}
	if h := s.bank["002"].holds("001-S3"); h["LEG-001-S3.P2"] != "HELD" {
		t.Fatalf("002 holds before the resolution %v", h)
	}
	op := orchestrator.GtidOperatorRequest{Operator: "ops-1", Reason: "payer account closed", EvidenceRef: "TICKET-77"}
	r, err := s.o.ResolveGtid(s.ctx, "001-S3", op)
	if err != nil || r.State != "GT_FAILED_EXECUTION" || fmt.Sprint(r.Failed) != "[001-S3.P2]" || fmt.Sprint(r.Settled) != "[001-S3.P1]" ||
		fmt.Sprint(r.Released) != "[LEG-001-S3.P2]" || r.CaseID != v.CaseID {
		t.Fatalf("resolve: %+v %v", r, err)
	}
	g := s.gtid("001-S3")
	if g.State != "GT_FAILED_EXECUTION" || g.ReasonCode != orchestrator.ReasonGtidLegFailed || g.CaseID != v.CaseID {
		t.Fatalf("%+v", g)
	}
	s.wantAggChain("001-S3", g.Chain, finality.GtidRegistered, finality.GtidPrechecked, finality.GtidDecided, finality.GtidSuspended, finality.GtidFailed)
	want := map[string]string{"P1": "LEG_SETTLED", "E1": "LEG_SETTLED", "P2": "LEG_FAILED", "E2": "LEG_FAILED"}
	for _, l := range g.Legs {
		if want[l.LegID] != l.State {
			t.Fatalf("leg %+v", l)
		}
	}
	if h := s.bank["002"].holds("001-S3"); h["LEG-001-S3.P2"] != "RELEASED" {
		t.Fatalf("002 holds %v", h)
	}
	if st := s.caseState(v.CaseID); st != "RESOLVED" {
		t.Fatalf("case %s", st)
	}
	s.wantNoH()
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -30_000}, move{"003", "h:c", 30_000})
	again, err := s.o.ResolveGtid(s.ctx, "001-S3", op)
	if err != nil || again.State != "GT_FAILED_EXECUTION" || len(again.Released) != 0 {
		t.Fatalf("second resolve: %+v %v", again, err)
	}
	if n := len(s.gtid("001-S3").Chain); n != 5 {
		t.Fatalf("second resolve wrote: %d entries", n)
	}
}

// TestGtidSuspensionRaceSweepVersusDrive: both payee banks do not answer
// execute-credit, so both legs wait for their credit. Drivers (which park
// a leg as SUSPEND_ADAPTER_DOWN after two failed calls) race the timeout
// sweep (which parks it as SUSPEND_PAYEE_PROOF_TIMEOUT) while the clock
// crosses the payee-proof timeout. Each leg is suspended exactly once,
// the GTID exactly once (one GtidSuspended, one Case); when the banks
// come back it settles with every leg's money moved and no H held.
func TestGtidSuspensionRaceSweepVersusDrive(t *testing.T) {
	s := gtidSuspendStack(t, 2)
	byReason := map[string]int{}
	for round := 0; round < 6; round++ {
		gtid := fmt.Sprintf("001-Q%d", round)
		before := s.snapshot()
		s.banks.SetDown("003", true, bankapi.ExecuteCredit)
		s.banks.SetDown("001", true, bankapi.ExecuteCredit)
		if _, err := s.o.RegisterGtid(s.ctx, twoByTwo(gtid), gtid, "001"); err != nil {
			t.Fatal(err)
		}
		s.run() // each leg: debited, one failed credit
		s.clk.Advance(time.Minute - time.Duration(round+1)*time.Millisecond)
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
						s.clk.Advance(2 * time.Second) // the retries come due
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
		s.clk.Advance(2 * time.Minute)
		if _, err := s.o.TimeoutSweep(s.ctx); err != nil {
			t.Fatal(err)
		}
		s.run()
		for _, leg := range []string{gtid + ".P1", gtid + ".P2"} {
			if n := s.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = 'Suspended'`, leg); n != 1 {
				t.Fatalf("round %d: %s suspended %d times", round, leg, n)
			}
			byReason[s.view(leg).ReasonCode]++
		}
		if n := s.count(`SELECT COUNT(*) FROM FinalityLog WHERE gtid = ? AND txid IS NULL AND event_type = 'GtidSuspended'`, gtid); n != 1 {
			t.Fatalf("round %d: %d GtidSuspended", round, n)
		}
		if n := s.count(`SELECT COUNT(*) FROM CaseRelatedTransactions WHERE related_gtid = ?`, gtid); n != 1 {
			t.Fatalf("round %d: %d Cases linked to the GTID", round, n)
		}
		if v := s.gtid(gtid); v.State != "GT_SUSPENDED" {
			t.Fatalf("round %d: %+v", round, v)
		}
		s.banks.SetDown("003", false)
		s.banks.SetDown("001", false)
		s.retryDue()
		v := s.gtid(gtid)
		if v.State != "GT_SETTLED" {
			t.Fatalf("round %d: %+v", round, v)
		}
		s.wantAggChain(gtid, v.Chain, finality.GtidRegistered, finality.GtidPrechecked, finality.GtidDecided, finality.GtidSuspended, finality.GtidSettled)
		s.wantNoH()
		s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -30_000}, move{"003", "h:c", 30_000},
			move{"002", "h:b", -20_000}, move{"001", "h:a2", 20_000})
	}
	t.Logf("legs suspended by %v", byReason)
}

// TestFXConduitSuspendedLegRecovers: the FX conduit's leg transfers run
// in lane GTID, so the conduit GTID gets the same suspension and exits.
// The payee bank does not answer the dollar credit: the leg suspends
// (SUSPEND_ADAPTER_DOWN) and with it the conduit GTID (GT_SUSPENDED, its
// Case); the bank comes back, the leg settles, GT_SUSPENDED ->
// GT_SETTLED, the Case is resolved, the FX sweep finalises the transfer
// SETTLED, and each currency is conserved with no H left.
func TestFXConduitSuspendedLegRecovers(t *testing.T) {
	w := newFXWorld(t)
	w.quote(48 * time.Hour)
	before := w.balances()
	res, err := w.fx.Create(w.ctx, w.request("FXG-SUSP", 150_000, true))
	if err != nil {
		t.Fatal(err)
	}
	w.banks.SetDown(fxPayee, true, bankapi.ExecuteCredit)
	if _, err := w.fx.Claim(w.ctx, "FXG-SUSP", res.Secret); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ { // execute-credit retried with backoff until the bank counts as down
		w.run()
		w.clk.Advance(10 * time.Minute)
	}
	dollar := fx.LegTxID("FXG-SUSP", 1)
	w.wantState(dollar, "SUSPENDED", orchestrator.ReasonSuspendAdapterDown)
	v := w.wantSuspended("FXG-SUSP", dollar, orchestrator.ReasonSuspendAdapterDown)
	if r := w.sweep(); r.Finalised != 0 {
		t.Fatalf("finalised while suspended: %+v", r)
	}
	w.banks.SetDown(fxPayee, false)
	w.retryDue()
	if r := w.sweep(); r.Finalised != 1 {
		t.Fatalf("sweep %+v, want the conduit finalised", r)
	}
	w.wantStatus("FXG-SUSP", fx.TransferSettled, lane.GtSettled)
	w.wantChain("gtid", "FXG-SUSP", finality.GtidRegistered, finality.GtidPrechecked, finality.GtidDecided, finality.GtidSuspended, finality.GtidSettled)
	if st := w.caseState(v.CaseID); st != "RESOLVED" {
		t.Fatalf("case %s", st)
	}
	w.checkMoves(before, map[string]int64{"h:payer-jpy": -150_000, "h:fxp-jpy": 150_000, "h:fxp-usd": -100_000, "h:payee-usd": 100_000})
	if w.hUsed(fxPayer, "JPY") != 0 || w.hUsed(fxFXP, "USD") != 0 {
		t.Errorf("H still in use: JPY %d USD %d", w.hUsed(fxPayer, "JPY"), w.hUsed(fxFXP, "USD"))
	}
}
