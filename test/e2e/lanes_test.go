package e2e

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
)

// TestBalanceInvariantsPerLane sends one transfer per lane through the
// whole stack and checks the customers' core balances and the settlement
// positions (spec 000 ch. 9): payer -amount, payee +amount, zero-sum inside
// each bank, conservation system-wide. BULK and DEFERRED are accepted and
// wait for their batch window: nothing moves yet.
func TestBalanceInvariantsPerLane(t *testing.T) {
	for _, c := range []struct {
		lane    string
		settles bool
	}{{orchestrator.LaneExpress, true}, {orchestrator.LaneStandard, true}, {orchestrator.LaneBulk, false}, {orchestrator.LaneDeferred, false}} {
		t.Run(c.lane, func(t *testing.T) {
			s := newStack(t, stackOptions{}, "001", "002")
			s.bank["001"].account("h:a", "SATO HANAKO", 100_000)
			s.bank["002"].account("h:b", "YAMADA TARO", 5_000)
			before := s.snapshot()
			r := s.mustSubmit(c.lane, "k1", "001", "h:a", "002", "h:b", 12_345)
			s.run()
			if !c.settles {
				v := s.wantState(r.TxID, "RECEIVED", "")
				if v.Owner != "ZC" {
					t.Fatalf("owner %s", v.Owner)
				}
				items, _ := s.o.QueueItems(s.ctx, r.TxID)
				if len(items) != 1 || items[0].Kind != orchestrator.KindBatch || items[0].Status != orchestrator.StatusWaiting {
					t.Fatalf("batch marker: %+v", items)
				}
				s.checkInvariants(before, s.snapshot())
				return
			}
			s.wantState(r.TxID, "SETTLED", "")
			s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -12_345}, move{"002", "h:b", 12_345})
			calls := s.banks.Calls()
			if calls[bankapi.ExecuteDebit] != 1 || calls[bankapi.ExecuteCredit] != 1 || calls[bankapi.CreditNotify] != 1 || calls[bankapi.DebitSettled] != 1 {
				t.Fatalf("calls %v", calls)
			}
			if c.lane == orchestrator.LaneStandard && (calls[bankapi.AuthorityCheck] != 1 || calls[bankapi.NameCheck] != 1) {
				t.Fatalf("STANDARD checks: %v", calls)
			}
			// The payee's core got exactly one credit notification.
			ns, err := s.bank["002"].a.PullNotifications(s.ctx, 10)
			if err != nil || len(ns) != 1 {
				t.Fatalf("notifications %v %v", ns, err)
			}
		})
	}
}

// TestTwoLanesAtOnce runs EXPRESS and STANDARD transfers among three banks
// at the same time, submitted from several goroutines and worked by two
// workers sharing the coordinator database.
func TestTwoLanesAtOnce(t *testing.T) {
	s := newStack(t, stackOptions{}, "001", "002", "003")
	accts := map[string]string{"001": "h:a", "002": "h:b", "003": "h:c"}
	for id, h := range accts {
		s.bank[id].account(h, "HOLDER "+id, 1_000_000)
	}
	before := s.snapshot()
	type tr struct {
		lane, from, to string
		amount         int64
	}
	var trs []tr
	ids := []string{"001", "002", "003"}
	for i := 0; i < 24; i++ {
		lane := orchestrator.LaneExpress
		if i%2 == 1 {
			lane = orchestrator.LaneStandard
		}
		trs = append(trs, tr{lane, ids[i%3], ids[(i+1)%3], int64(1000 + 7*i)})
	}
	var wg sync.WaitGroup
	txids := make([]string, len(trs))
	for i, x := range trs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.submit(x.lane, fmt.Sprintf("k-%d", i), x.from, accts[x.from], x.to, accts[x.to], x.amount)
			if err != nil {
				t.Error(err)
				return
			}
			txids[i] = r.TxID
		}()
	}
	w2, err := orchestrator.New(orchestrator.Config{DB: s.zc, Banks: s.banks, Clock: s.clk, WorkerID: "worker-2", BatchSize: 4, Concurrency: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []*orchestrator.Orchestrator{s.o, w2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if _, err := o.RunUntilIdle(s.ctx); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	s.run()
	var moves []move
	for i, x := range trs {
		s.wantState(txids[i], "SETTLED", "")
		moves = append(moves, move{x.from, accts[x.from], -x.amount}, move{x.to, accts[x.to], x.amount})
	}
	s.checkInvariants(before, s.snapshot(), moves...)
	if n := s.banks.Calls()[bankapi.ExecuteDebit]; n != len(trs) {
		t.Fatalf("execute-debit reached the banks %d times for %d transfers", n, len(trs))
	}
}

// TestIdempotentReplayPerLaneFullStack: the same key and body give the same
// answer and one Transactions row, and the banks see one transfer.
func TestIdempotentReplayPerLaneFullStack(t *testing.T) {
	for _, lane := range []string{orchestrator.LaneExpress, orchestrator.LaneStandard, orchestrator.LaneBulk, orchestrator.LaneDeferred} {
		t.Run(lane, func(t *testing.T) {
			s := newStack(t, stackOptions{}, "001", "002")
			s.bank["001"].account("h:a", "SATO HANAKO", 100_000)
			s.bank["002"].account("h:b", "YAMADA TARO", 5_000)
			before := s.snapshot()
			first := s.mustSubmit(lane, "same", "001", "h:a", "002", "h:b", 1_000)
			s.run()
			again := s.mustSubmit(lane, "same", "001", "h:a", "002", "h:b", 1_000)
			s.run()
			a, _ := json.Marshal(first)
			b, _ := json.Marshal(again)
			if string(a) != string(b) || !again.Replayed {
				t.Fatalf("replay: %s vs %s (replayed %v)", a, b, again.Replayed)
			}
			var n int
			if err := s.zc.Read(s.ctx, func(tx *store.Tx) error {
				return tx.QueryRowContext(s.ctx, `SELECT COUNT(*) FROM Transactions`).Scan(&n)
			}); err != nil || n != 1 {
				t.Fatalf("%d rows %v", n, err)
			}
			if lane == orchestrator.LaneBulk || lane == orchestrator.LaneDeferred {
				s.checkInvariants(before, s.snapshot())
				return
			}
			s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -1_000}, move{"002", "h:b", 1_000})
		})
	}
}

// TestHighValueFullStack: a transfer above the payer's hv_threshold
// escalates to HIGH_VALUE and goes to the payer bank without a reservation;
// the real adapter answers with a PAYER_HV_ISOLATION_PROOF, the BOJ venue
// settles it (ZC -> VENUE:BOJ -> ZC) and both the customer balances and the
// banks' BOJ positions move by exactly the amount. The refusal without an
// isolation proof is TestHighValueWithoutIsolationProofIsNotInstructed in
// coordinator/orchestrator.
func TestHighValueFullStack(t *testing.T) {
	s := newStack(t, stackOptions{}, "001", "002")
	s.bank["001"].account("h:a", "SATO HANAKO", 1_000_000)
	s.bank["002"].account("h:b", "YAMADA TARO", 5_000)
	p, _ := s.o.Participants().Get(s.ctx, "001")
	thr := int64(100_000)
	p.HVThreshold = &thr
	if _, err := s.o.Participants().Update(s.ctx, p); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"001", "002"} {
		if err := s.o.SetPosition(s.ctx, id, orchestrator.VenueBOJ, "JPY", 10_000_000); err != nil {
			t.Fatal(err)
		}
	}
	before := s.snapshot()
	r := s.mustSubmit(orchestrator.LaneExpress, "hv", "001", "h:a", "002", "h:b", 250_000)
	if r.Lane != orchestrator.LaneHighValue {
		t.Fatalf("lane %s", r.Lane)
	}
	s.run()
	v := s.view(r.TxID)
	var proof bankapi.BankProofRef
	_ = json.Unmarshal([]byte(v.Execution.PayerBankProofRef), &proof)
	if s.banks.Calls()[bankapi.ReserveFunds] != 0 {
		t.Fatal("HIGH_VALUE reserved funds")
	}
	if proof.ProofType != orchestrator.ProofPayerHVIsolation {
		t.Fatalf("payer proof %q, want %s", proof.ProofType, orchestrator.ProofPayerHVIsolation)
	}
	if v.State != "SETTLED" || v.ExternalSettlementStatus != orchestrator.ExtSettled || v.Owner != "ZC" {
		t.Fatalf("HIGH_VALUE did not settle through the venue: %+v", v)
	}
	after := s.snapshot()
	s.checkInvariants(before, after, move{"001", "h:a", -250_000}, move{"002", "h:b", 250_000})
	if got := after.pos["001"][orchestrator.VenueBOJ] - before.pos["001"][orchestrator.VenueBOJ]; got != -250_000 {
		t.Fatalf("payer bank's BOJ position moved by %d, want -250000", got)
	}
	if got := after.pos["002"][orchestrator.VenueBOJ] - before.pos["002"][orchestrator.VenueBOJ]; got != 250_000 {
		t.Fatalf("payee bank's BOJ position moved by %d, want +250000", got)
	}
}

// TestWindowClosedFullStack: the payee's operating window is closed, the
// transfer waits in PRECHECKED_SUSPENDED, and the sweep resumes it when the
// window opens; then the balances move.
func TestWindowClosedFullStack(t *testing.T) {
	s := newStack(t, stackOptions{}, "001", "002")
	s.bank["001"].account("h:a", "SATO HANAKO", 100_000)
	s.bank["002"].account("h:b", "YAMADA TARO", 5_000)
	p, _ := s.o.Participants().Get(s.ctx, "002")
	p.WindowStart, p.WindowEnd = "10:30", "09:00" // closed 09:00-10:30 JST; now 10:00
	if _, err := s.o.Participants().Update(s.ctx, p); err != nil {
		t.Fatal(err)
	}
	before := s.snapshot()
	r := s.mustSubmit(orchestrator.LaneExpress, "w", "001", "h:a", "002", "h:b", 4_000)
	s.run()
	s.wantState(r.TxID, "PRECHECKED_SUSPENDED", orchestrator.ReasonCounterpartyWindowClosed)
	s.checkInvariants(before, s.snapshot())
	s.clk.Advance(30 * time.Minute)
	if res, err := s.o.TimeoutSweep(s.ctx); err != nil || res.WindowResumed != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	s.run()
	s.wantState(r.TxID, "SETTLED", "")
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -4_000}, move{"002", "h:b", 4_000})
}

// TestStandardNameCheckDeferredThenResumed: the payee's core is in its
// batch window, so name-check is DEFERRED; the transfer waits in
// PRECHECKED_SUSPENDED (SUSPEND_NAMECHECK_PENDING) and resumes once the
// check answers MATCH.
func TestStandardNameCheckDeferredThenResumed(t *testing.T) {
	s := newStack(t, stackOptions{batchWindows: map[string][]adapter.Window{"002": {{From: 9 * 60, To: 10*60 + 15}}}}, "001", "002")
	s.bank["001"].account("h:a", "SATO HANAKO", 100_000)
	s.bank["002"].account("h:b", "YAMADA TARO", 5_000)
	before := s.snapshot()
	r := s.mustSubmit(orchestrator.LaneStandard, "n", "001", "h:a", "002", "h:b", 3_000)
	s.run()
	s.wantState(r.TxID, "PRECHECKED_SUSPENDED", orchestrator.ReasonSuspendNameCheckPending)
	s.clk.Advance(15 * time.Minute)
	s.run()
	s.wantState(r.TxID, "SETTLED", "")
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -3_000}, move{"002", "h:b", 3_000})
}

// TestStandardAuthorityNGAndNameMismatchCancel: screening hits and a
// payee name the core no longer matches cancel before any money moves.
func TestStandardAuthorityNGAndNameMismatchCancel(t *testing.T) {
	s := newStack(t, stackOptions{}, "001", "002")
	s.bank["001"].account("h:a", "SATO HANAKO", 100_000)
	s.bank["002"].account("h:b", "YAMADA TARO", 5_000)
	before := s.snapshot()
	if err := s.bank["001"].a.AddScreeningEntry(s.ctx, "TXID", "TX-SCREENED-1", "test list"); err != nil {
		t.Fatal(err)
	}
	r, err := s.o.Submit(s.ctx, orchestrator.PaymentInitiated{TxID: "TX-SCREENED-1", Lane: orchestrator.LaneStandard,
		Amount: bankapi.Amount{Value: 2_000, Currency: "JPY"}, Payer: orchestrator.Party{BankID: "001", AccountHash: "h:a"},
		Payee: orchestrator.Party{BankID: "002", AccountHash: "h:b"}}, "screened", "001")
	if err != nil {
		t.Fatal(err)
	}
	s.run()
	v := s.wantState(r.TxID, "CANCELLED", orchestrator.ReasonAuthorityCheckNG)
	if v.NextActionHint != orchestrator.HintContactPayerBank || v.Decision.Status != "DECIDED_CANCEL" {
		t.Fatalf("%+v", v)
	}
	// The payee account does not exist at the payee bank: name-check MISMATCH.
	r2 := s.mustSubmit(orchestrator.LaneStandard, "nomatch", "001", "h:a", "002", "h:nobody", 2_000)
	s.run()
	s.wantState(r2.TxID, "CANCELLED", orchestrator.ReasonNameMismatch)
	s.checkInvariants(before, s.snapshot())
	if n := s.banks.Calls()[bankapi.ReserveFunds]; n != 0 {
		t.Fatalf("reserve-funds called %d times", n)
	}
	_ = participants.ModeFull
}

// TestReserveRefusedCancels: the payer's shadow cannot cover the amount.
func TestReserveRefusedCancels(t *testing.T) {
	s := newStack(t, stackOptions{}, "001", "002")
	s.bank["001"].account("h:a", "SATO HANAKO", 1_000)
	s.bank["002"].account("h:b", "YAMADA TARO", 5_000)
	before := s.snapshot()
	r := s.mustSubmit(orchestrator.LaneExpress, "poor", "001", "h:a", "002", "h:b", 2_000)
	s.run()
	s.wantState(r.TxID, "CANCELLED", "INSUFFICIENT_FUNDS")
	s.checkInvariants(before, s.snapshot())
}

// TestBankUnreachableThenRefused through the full stack: a payer bank that
// cannot be reached parks the transfer in SUSPENDED / SUSPEND_ADAPTER_DOWN
// (waiting family) and it settles once the bank is back; a payee bank that
// refuses the credit (no such account) parks it in SUSPENDED /
// EXEC_CREDIT_FAILED (event family) with a Case.
func TestBankUnreachableThenRefused(t *testing.T) {
	s := newStack(t, stackOptions{cfg: func(c *orchestrator.Config) { c.Timeouts.AdapterDownAfter = 2 }}, "001", "002")
	s.bank["001"].account("h:a", "SATO HANAKO", 100_000)
	s.bank["002"].account("h:b", "YAMADA TARO", 5_000)
	before := s.snapshot()
	r := s.mustSubmit(orchestrator.LaneExpress, "down", "001", "h:a", "002", "h:b", 1_500)
	s.banks.SetDown("001", true, bankapi.ExecuteDebit)
	for i := 0; i < 3; i++ {
		s.run()
		s.clk.Advance(5 * time.Minute)
	}
	v := s.wantState(r.TxID, "SUSPENDED", orchestrator.ReasonSuspendAdapterDown)
	if v.NextActionHint != orchestrator.HintRetryLater || v.Case.CaseID != "" || v.Execution.A != "NONE" {
		t.Fatalf("%+v", v)
	}
	s.banks.SetDown("001", false)
	s.run()
	s.wantState(r.TxID, "SETTLED", "")
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -1_500}, move{"002", "h:b", 1_500})

	r2 := s.mustSubmit(orchestrator.LaneExpress, "refused", "001", "h:a", "002", "h:gone", 1_000)
	s.run()
	v = s.wantState(r2.TxID, "SUSPENDED", orchestrator.ReasonExecCreditFailed)
	if v.Case.CaseID == "" || v.Execution.A != "OK" || v.Execution.B != "NG" {
		t.Fatalf("%+v", v)
	}
}

// TestBulkAcceptedByItsWindowSettles follows the batch-window contract:
// the window reserves H under "H-<txid>" and calls AcceptBatchInTx in its
// transaction; the worker then drives the transfer, its own ReserveH
// replays the window's reservation (H is charged once) and the balances
// move like any other lane.
func TestBulkAcceptedByItsWindowSettles(t *testing.T) {
	s := newStack(t, stackOptions{}, "001", "002")
	s.bank["001"].account("h:a", "SATO HANAKO", 100_000)
	s.bank["002"].account("h:b", "YAMADA TARO", 5_000)
	before := s.snapshot()
	r := s.mustSubmit(orchestrator.LaneBulk, "bulk", "001", "h:a", "002", "h:b", 8_000)
	s.run()
	s.wantState(r.TxID, "RECEIVED", "")
	h := hlimit.New(s.clk, nil)
	if err := s.zc.Write(s.ctx, func(tx *store.Tx) error {
		if _, err := h.ReserveH(s.ctx, tx, hlimit.ReserveRequest{ReservationID: orchestrator.BatchReservationID(r.TxID), TxID: r.TxID,
			BankID: "001", Amount: 8_000}); err != nil {
			return err
		}
		return s.o.AcceptBatchInTx(s.ctx, tx, r.TxID)
	}); err != nil {
		t.Fatal(err)
	}
	usedDuring := func() int64 {
		var u int64
		if err := s.zc.Read(s.ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(s.ctx, `SELECT h_used FROM Participants WHERE bank_id = '001'`).Scan(&u)
		}); err != nil {
			t.Fatal(err)
		}
		return u
	}
	if u := usedDuring(); u != 8_000 {
		t.Fatalf("h_used %d after the window", u)
	}
	s.run()
	s.wantState(r.TxID, "SETTLED", "")
	if u := usedDuring(); u != 0 {
		t.Fatalf("h_used %d after settlement (charged twice or not released)", u)
	}
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -8_000}, move{"002", "h:b", 8_000})
}

// TestSweepTimeoutsFullStack: the payer bank stops answering execute-debit
// after the decision; the sweep suspends the transfer with
// SUSPEND_EXEC_TIMEOUT (measured from pending_since), and when the bank is
// back the transfer settles from SUSPENDED with exact balances. A payee
// that stops answering execute-credit gets SUSPEND_PAYEE_PROOF_TIMEOUT and,
// left alone, FAILED_EXEC_TIMEOUT with a Case.
func TestSweepTimeoutsFullStack(t *testing.T) {
	s := newStack(t, stackOptions{cfg: func(c *orchestrator.Config) {
		c.Timeouts = orchestrator.Timeouts{Exec: time.Minute, PayeeProof: time.Minute, Suspended: time.Hour, AdapterDownAfter: 1000}
	}}, "001", "002")
	s.bank["001"].account("h:a", "SATO HANAKO", 100_000)
	s.bank["002"].account("h:b", "YAMADA TARO", 5_000)
	before := s.snapshot()
	s.banks.SetDown("001", true, bankapi.ExecuteDebit)
	a := s.mustSubmit(orchestrator.LaneExpress, "a", "001", "h:a", "002", "h:b", 2_500)
	s.run()
	s.wantState(a.TxID, "DECIDED_TO_SETTLE", "")
	s.clk.Advance(61 * time.Second)
	if res, err := s.o.TimeoutSweep(s.ctx); err != nil || res.ExecTimeouts != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	s.wantState(a.TxID, "SUSPENDED", orchestrator.ReasonSuspendExecTimeout)
	s.banks.SetDown("001", false)
	s.clk.Advance(5 * time.Minute)
	s.run()
	s.wantState(a.TxID, "SETTLED", "")
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -2_500}, move{"002", "h:b", 2_500})

	s.banks.SetDown("002", true, bankapi.ExecuteCredit)
	b := s.mustSubmit(orchestrator.LaneExpress, "b", "001", "h:a", "002", "h:b", 1_000)
	s.run()
	s.wantState(b.TxID, "PAYER_EXEC_CONFIRMED", "")
	s.clk.Advance(61 * time.Second)
	if res, err := s.o.TimeoutSweep(s.ctx); err != nil || res.PayeeProofTimeouts != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	s.wantState(b.TxID, "SUSPENDED", orchestrator.ReasonSuspendPayeeProofTimeout)
	s.clk.Advance(time.Hour) // exactly the limit: not yet
	if res, err := s.o.TimeoutSweep(s.ctx); err != nil || res.FailedTimeouts != 0 {
		t.Fatalf("failed at exactly the limit: %+v %v", res, err)
	}
	s.clk.Advance(time.Second)
	if res, err := s.o.TimeoutSweep(s.ctx); err != nil || res.FailedTimeouts != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	v := s.wantState(b.TxID, "FAILED_EXECUTION", orchestrator.ReasonFailedExecTimeout)
	if v.Case.CaseID == "" || v.NextActionHint != orchestrator.HintOpenCase {
		t.Fatalf("%+v", v)
	}
}

// TestExpressByPSPRRefFullStack: an EXPRESS transfer naming its payee by
// pspr_ref alone goes through the payee bank's adapter, which resolves the
// reference from its directory, and the money lands on the resolved
// account at the payee's core.
func TestExpressByPSPRRefFullStack(t *testing.T) {
	s := newStack(t, stackOptions{}, "001", "002")
	s.bank["001"].account("h:a", "SATO HANAKO", 100_000)
	s.bank["002"].account("h:b", "YAMADA TARO", 5_000)
	s.bank["002"].account("h:shop", "KISSA HANA", 0)
	if err := s.bank["002"].a.RegisterAlias(s.ctx, "PSPR-KISSA", "h:shop"); err != nil {
		t.Fatal(err)
	}
	before := s.snapshot()
	r, err := s.o.Submit(s.ctx, orchestrator.PaymentInitiated{Lane: orchestrator.LaneExpress, Amount: bankapi.Amount{Value: 780, Currency: "JPY"},
		Payer: orchestrator.Party{BankID: "001", AccountHash: "h:a"}, Payee: orchestrator.Party{BankID: "002"},
		PSPRRef: "PSPR-KISSA", Purpose: "MERCHANT"}, "coffee", "001")
	if err != nil {
		t.Fatal(err)
	}
	s.run()
	s.wantState(r.TxID, "SETTLED", "")
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -780}, move{"002", "h:shop", 780})
	if got := s.bank["002"].coreBalance("h:b"); got != 5_000 {
		t.Fatalf("the other payee account moved: %d", got)
	}
}
