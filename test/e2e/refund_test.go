package e2e

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

// refundStack has one payer (001, h:a 100,000) and one payee bank (002)
// whose h:gone account does not exist, and a one-hour SUSPENDED limit.
func refundStack(t *testing.T, cfg func(*orchestrator.Config)) *stack {
	s := newStack(t, stackOptions{cfg: func(c *orchestrator.Config) {
		c.Timeouts = orchestrator.Timeouts{Exec: time.Minute, PayeeProof: time.Minute, Suspended: time.Hour, AdapterDownAfter: 1000}
		if cfg != nil {
			cfg(c)
		}
	}}, "001", "002")
	s.bank["001"].account("h:a", "SATO HANAKO", 100_000)
	s.bank["002"].account("h:b", "YAMADA TARO", 5_000)
	return s
}

// failCredit submits a transfer to the payee's missing account: the payer
// is debited at its core, the payee bank refuses the credit
// (ACCOUNT_NOT_FOUND → SUSPENDED / EXEC_CREDIT_FAILED, Case) and the sweep
// moves it to FAILED_EXECUTION after the limit.
func (s *stack) failCredit(key string, amount int64) string {
	s.t.Helper()
	r := s.mustSubmit(orchestrator.LaneExpress, key, "001", "h:a", "002", "h:gone", amount)
	s.run()
	s.wantState(r.TxID, "SUSPENDED", orchestrator.ReasonExecCreditFailed)
	s.clk.Advance(time.Hour + time.Second)
	if res, err := s.o.TimeoutSweep(s.ctx); err != nil || res.FailedTimeouts != 1 {
		s.t.Fatalf("sweep: %+v %v", res, err)
	}
	s.wantState(r.TxID, "FAILED_EXECUTION", orchestrator.ReasonFailedExecTimeout)
	return r.TxID
}

// failByTimeout submits a transfer whose payee bank never answers
// execute-credit: PAYER_EXEC_CONFIRMED, then SUSPEND_PAYEE_PROOF_TIMEOUT,
// then FAILED_EXECUTION, with nothing on the chain proving the credit
// failed.
func (s *stack) failByTimeout(key string, amount int64) orchestrator.SubmitResult {
	s.t.Helper()
	s.banks.SetDown("002", true, bankapi.ExecuteCredit)
	defer s.banks.SetDown("002", false)
	r := s.mustSubmit(orchestrator.LaneExpress, key, "001", "h:a", "002", "h:b", amount)
	s.run()
	s.clk.Advance(61 * time.Second)
	if _, err := s.o.TimeoutSweep(s.ctx); err != nil {
		s.t.Fatal(err)
	}
	s.clk.Advance(time.Hour + time.Second)
	if _, err := s.o.TimeoutSweep(s.ctx); err != nil {
		s.t.Fatal(err)
	}
	s.wantState(r.TxID, "FAILED_EXECUTION", orchestrator.ReasonFailedExecTimeout)
	return r
}

func (s *stack) count(q string, args ...any) int {
	s.t.Helper()
	var n int
	if err := s.zc.Read(s.ctx, func(tx *store.Tx) error { return tx.QueryRowContext(s.ctx, q, args...).Scan(&n) }); err != nil {
		s.t.Fatal(err)
	}
	return n
}

// wantRefunded checks the rows of a completed reversal: the two evidence
// entries on an intact chain, the transfer still FAILED_EXECUTION, every
// Case of the transfer resolved, one REVERSAL posting at the payer bank.
func (s *stack) wantRefunded(txid string) {
	s.t.Helper()
	for _, ev := range []finality.EventType{finality.CreditFailedProofSubmitted, finality.ReversalCompleted} {
		if n := s.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = ? AND state_from = 'FAILED_EXECUTION' AND state_to = 'FAILED_EXECUTION'`, txid, string(ev)); n != 1 {
			s.t.Errorf("%s entries of %s: %d, want 1", ev, txid, n)
		}
	}
	rep, err := finality.VerifyChain(s.ctx, s.zc, txid)
	if err != nil || !rep.OK() {
		s.t.Errorf("chain of %s: %+v %v", txid, rep, err)
	}
	s.wantState(txid, "FAILED_EXECUTION", orchestrator.ReasonFailedExecTimeout)
	if n := s.count(`SELECT COUNT(*) FROM CaseRelatedTransactions l JOIN Cases c ON c.case_id = l.case_id WHERE l.link_key = ?`, txid); n < 1 {
		s.t.Errorf("%s has no Case", txid)
	}
	if n := s.count(`SELECT COUNT(*) FROM CaseRelatedTransactions l JOIN Cases c ON c.case_id = l.case_id WHERE l.link_key = ? AND c.state <> ?`, txid, cases.StateResolved); n != 0 {
		s.t.Errorf("%s: %d Cases left open after the refund", txid, n)
	}
	if n := s.count(`SELECT COUNT(*) FROM EntityStateLog WHERE entity_type = 'REVERSAL' AND entity_id = ?`, "REV-"+txid); n != 2 {
		s.t.Errorf("REVERSAL history of %s: %d rows, want 2 (requested, completed)", txid, n)
	}
	var rows int
	if err := s.bank["001"].a.DB().Read(s.ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(s.ctx, `SELECT COUNT(*) FROM AdapterPostings WHERE txid = ? AND kind = 'REVERSAL'`, txid).Scan(&rows)
	}); err != nil {
		s.t.Fatal(err)
	}
	if rows != 1 {
		s.t.Errorf("payer bank holds %d REVERSAL postings for %s, want 1", rows, txid)
	}
}

// TestFailedCreditIsRefundedExactlyOnce: a payer debited for a transfer
// whose credit the payee bank refused is refunded through the payer bank's
// outbox: its core balance is back where it started, the FinalityLog holds
// CreditFailedProofSubmitted and ReversalCompleted on an intact chain, and
// the Cases are resolved. Asking again replays the record and sends
// nothing; a transfer that is not FAILED_EXECUTION is refused.
func TestFailedCreditIsRefundedExactlyOnce(t *testing.T) {
	s := refundStack(t, nil)
	before := s.snapshot()
	txid := s.failCredit("refund-1", 1_500)
	if got := s.bank["001"].coreBalance("h:a"); got != 100_000-1_500 {
		t.Fatalf("payer core balance %d after the failed credit, want it debited", got)
	}

	rev, err := s.o.RequestRefund(s.ctx, orchestrator.RefundRequest{TxID: txid, RequestedBy: "ops-1", Note: "payee account closed"})
	if err != nil {
		t.Fatal(err)
	}
	if rev.Status != orchestrator.ReversalCompleted || rev.Replayed || len(rev.Reversals) != 1 || rev.ProofSource != orchestrator.ReasonExecCreditFailed {
		t.Fatalf("%+v", rev)
	}
	s.run()
	s.checkInvariants(before, s.snapshot()) // every balance back where it started
	s.wantRefunded(txid)

	again, err := s.o.RequestRefund(s.ctx, orchestrator.RefundRequest{TxID: txid, RequestedBy: "ops-2"})
	if err != nil || !again.Replayed || again.Status != orchestrator.ReversalCompleted || again.RequestedBy != "ops-1" {
		t.Fatalf("second request: %+v %v", again, err)
	}
	s.run()
	if n := s.banks.Calls()[bankapi.Compensate]; n != 1 {
		t.Fatalf("compensate sent %d times, want 1", n)
	}
	s.checkInvariants(before, s.snapshot())
	s.wantRefunded(txid)

	ok := s.mustSubmit(orchestrator.LaneExpress, "settled", "001", "h:a", "002", "h:b", 700)
	s.run()
	if _, err := s.o.RequestRefund(s.ctx, orchestrator.RefundRequest{TxID: ok.TxID, RequestedBy: "ops-1"}); domainerr.Code(err) != "STATE_GUARD" {
		t.Fatalf("refund of a SETTLED transfer: %v", err)
	}
	if _, err := s.o.RequestRefund(s.ctx, orchestrator.RefundRequest{TxID: "TX-NOPE", RequestedBy: "ops-1"}); domainerr.Code(err) != "TX_NOT_FOUND" {
		t.Fatalf("refund of an unknown transfer: %v", err)
	}
}

// TestRefundCrashAfterTheBankRecordedIsRefundedOnce: the answer of the
// payer bank to compensate is lost after its adapter recorded it (the
// coordinator died between the two records). The reversal stays
// REQUESTED; a fresh orchestrator on the same database finishes it from
// the REFUND work item by resending the recorded body, the bank answers a
// replay, and the payer's core balance is restored once.
func TestRefundCrashAfterTheBankRecordedIsRefundedOnce(t *testing.T) {
	var cb *crashingBanks
	s := refundStack(t, nil)
	cb = newCrashingBanks(s.banks)
	cfg := orchestrator.Config{DB: s.zc, Banks: cb, Clock: s.clk,
		Timeouts: orchestrator.Timeouts{Exec: time.Minute, PayeeProof: time.Minute, Suspended: time.Hour, AdapterDownAfter: 1000}}
	var err error
	if s.o, err = orchestrator.New(cfg); err != nil {
		t.Fatal(err)
	}
	before := s.snapshot()
	txid := s.failCredit("refund-crash", 2_000)

	cb.arm(bankapi.Compensate)
	rev, err := s.o.RequestRefund(s.ctx, orchestrator.RefundRequest{TxID: txid, RequestedBy: "ops-1"})
	if err != nil {
		t.Fatal(err)
	}
	if rev.Status != orchestrator.ReversalRequested || rev.Pending != "BANK_TIMEOUT" {
		t.Fatalf("after the lost answer: %+v", rev)
	}
	if n := s.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = ?`, txid, string(finality.ReversalCompleted)); n != 0 {
		t.Fatalf("ReversalCompleted recorded without the bank's answer")
	}

	// Restart: a new orchestrator on the same database; its worker finds
	// the REFUND item due after the backoff.
	if s.o, err = orchestrator.New(cfg); err != nil {
		t.Fatal(err)
	}
	s.clk.Advance(time.Minute)
	s.run()
	cb.wantReplay(t, "TX:"+txid+":compensate:ZC")
	got, err := s.o.Reversal(s.ctx, txid)
	if err != nil || got.Status != orchestrator.ReversalCompleted || len(got.Reversals) != 1 {
		t.Fatalf("%+v %v", got, err)
	}
	s.checkInvariants(before, s.snapshot())
	s.wantRefunded(txid)
}

// TestRefundWithoutProofOpensACase: a transfer that failed on a timeout
// (the payee bank never answered, so nothing proves the credit failed) is
// not reversed on request alone: EVIDENCE_REQUIRED, and a
// CREDIT_FAILED_PROOF_REQUIRED Case is opened. With the payee bank's
// confirmation as evidence_ref it is reversed and the payer refunded.
func TestRefundWithoutProofOpensACase(t *testing.T) {
	s := refundStack(t, nil)
	before := s.snapshot()
	r := s.failByTimeout("timeout", 900)

	_, err := s.o.RequestRefund(s.ctx, orchestrator.RefundRequest{TxID: r.TxID, RequestedBy: "ops-1"})
	if domainerr.Code(err) != "EVIDENCE_REQUIRED" {
		t.Fatalf("refund without proof: %v", err)
	}
	if n := s.count(`SELECT COUNT(*) FROM Cases WHERE reason_code = ? AND related_txid = ? AND state = 'OPEN'`,
		orchestrator.CaseReasonCreditFailedProofRequired, r.TxID); n != 1 {
		t.Fatalf("%d CREDIT_FAILED_PROOF_REQUIRED cases", n)
	}
	if n := s.count(`SELECT COUNT(*) FROM ReversalRecords WHERE txid = ?`, r.TxID); n != 0 {
		t.Fatalf("a refused reversal left %d rows", n)
	}
	if got := s.bank["001"].coreBalance("h:a"); got != 100_000-900 {
		t.Fatalf("payer balance %d", got)
	}
	rev, err := s.o.RequestRefund(s.ctx, orchestrator.RefundRequest{TxID: r.TxID, RequestedBy: "ops-1", EvidenceRef: "LETTER-002-0042"})
	if err != nil || rev.Status != orchestrator.ReversalCompleted || rev.ProofSource != orchestrator.ProofSourceOperator {
		t.Fatalf("%+v %v", rev, err)
	}
	s.run()
	s.checkInvariants(before, s.snapshot())
	s.wantRefunded(r.TxID)
}

// TestConcurrentRefundRequestsRefundOnce: 8 operators ask at once; one
// decision is recorded, the others replay it, the payer bank queues one
// reversal and the payer's balance is restored once.
func TestConcurrentRefundRequestsRefundOnce(t *testing.T) {
	s := refundStack(t, nil)
	before := s.snapshot()
	txid := s.failCredit("refund-race", 1_100)
	const n = 8
	var wg sync.WaitGroup
	decided := make(chan bool, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rev, err := s.o.RequestRefund(s.ctx, orchestrator.RefundRequest{TxID: txid, RequestedBy: fmt.Sprintf("ops-%d", i)})
			if err != nil {
				t.Error(err)
			}
			decided <- !rev.Replayed
		}(i)
	}
	wg.Wait()
	close(decided)
	first := 0
	for d := range decided {
		if d {
			first++
		}
	}
	if first != 1 {
		t.Fatalf("%d requests decided the reversal, want 1", first)
	}
	s.clk.Advance(time.Minute)
	s.run()
	s.checkInvariants(before, s.snapshot())
	s.wantRefunded(txid)
	if n := s.count(`SELECT COUNT(*) FROM ReversalRecords WHERE txid = ? AND status = 'COMPLETED'`, txid); n != 1 {
		t.Fatalf("%d reversal rows", n)
	}
}

// TestMisrecordCorrectSettlesToTheRightAccount: a transfer whose payee
// account was recorded wrong (the payee bank refused the credit) is
// corrected by two operators with evidence, and goes on to the right
// account: payer -amount, payee +amount at the cores, MisrecordCorrected
// on an intact chain, the Case advanced. Every refusal of spec 004 is
// reached: EVIDENCE_REQUIRED, FOUR_EYES_REQUIRED, NOT_CORRECTABLE,
// B_CONFIRMED, WINDOW_EXPIRED.
func TestMisrecordCorrectSettlesToTheRightAccount(t *testing.T) {
	s := refundStack(t, nil)
	before := s.snapshot()
	r := s.mustSubmit(orchestrator.LaneExpress, "misrecord", "001", "h:a", "002", "h:gone", 1_200)
	s.run()
	s.wantState(r.TxID, "SUSPENDED", orchestrator.ReasonExecCreditFailed)
	ok := orchestrator.MisrecordRequest{TxID: r.TxID, Field: "payee_account_hash", Value: "h:b",
		RequestedBy: "ops-1", ApprovedBy: "ops-2", EvidenceRef: "CALL-0042"}
	for _, c := range []struct {
		mut  func(*orchestrator.MisrecordRequest)
		code string
	}{
		{func(m *orchestrator.MisrecordRequest) { m.EvidenceRef = "" }, "EVIDENCE_REQUIRED"},
		{func(m *orchestrator.MisrecordRequest) { m.ApprovedBy = "" }, "FOUR_EYES_REQUIRED"},
		{func(m *orchestrator.MisrecordRequest) { m.ApprovedBy = "ops-1" }, "FOUR_EYES_REQUIRED"},
		{func(m *orchestrator.MisrecordRequest) { m.Field = "amount_value" }, "NOT_CORRECTABLE"},
		{func(m *orchestrator.MisrecordRequest) { m.Value = "h:gone" }, "NOT_CORRECTABLE"},
	} {
		req := ok
		c.mut(&req)
		if _, err := s.o.CorrectMisrecord(s.ctx, req); domainerr.Code(err) != c.code {
			t.Fatalf("%+v: %v, want %s", req, err, c.code)
		}
	}
	if n := s.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = ?`, r.TxID, string(finality.MisrecordCorrected)); n != 0 {
		t.Fatalf("a refused correction wrote %d entries", n)
	}
	c, err := s.o.CorrectMisrecord(s.ctx, ok)
	if err != nil || c.OldValue != "h:gone" || c.NewValue != "h:b" {
		t.Fatalf("%+v %v", c, err)
	}
	if n := s.count(`SELECT COUNT(*) FROM CaseRelatedTransactions l JOIN Cases k ON k.case_id = l.case_id WHERE l.link_key = ? AND k.state = 'IN_PROGRESS'`, r.TxID); n != 1 {
		t.Fatalf("%d Cases advanced", n)
	}
	s.run()
	s.wantState(r.TxID, "SETTLED", "")
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -1_200}, move{"002", "h:b", 1_200})
	if n := s.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = ? AND json_extract(payload_json, '$.approved_by') = 'ops-2'`,
		r.TxID, string(finality.MisrecordCorrected)); n != 1 {
		t.Fatalf("%d MisrecordCorrected entries", n)
	}
	if rep, err := finality.VerifyChain(s.ctx, s.zc, r.TxID); err != nil || !rep.OK() {
		t.Fatalf("chain %+v %v", rep, err)
	}
	if _, err := s.o.CorrectMisrecord(s.ctx, ok); domainerr.Code(err) != "B_CONFIRMED" {
		t.Fatalf("correction after settlement: %v", err)
	}
	failed := s.failCredit("misrecord-late", 300)
	late := ok
	late.TxID = failed
	if _, err := s.o.CorrectMisrecord(s.ctx, late); domainerr.Code(err) != "WINDOW_EXPIRED" {
		t.Fatalf("correction after FAILED_EXECUTION: %v", err)
	}
}

// TestRefundInBCPIsRefusedAndLeavesNothing: in BCP read-only mode a
// reversal is refused with SYSTEM_BCP_READ_ONLY before anything is
// written (no reversal row, no Case, no command sent); after BCP it goes
// through.
func TestRefundInBCPIsRefusedAndLeavesNothing(t *testing.T) {
	s := refundStack(t, nil)
	before := s.snapshot()
	txid := s.failByTimeout("refund-bcp", 400).TxID
	modes := sysmode.NewController(s.zc, finality.New(s.clk), s.clk, nil)
	if _, _, err := modes.ActivateBCP(s.ctx, "op-1", "drill"); err != nil {
		t.Fatal(err)
	}
	cases0 := s.count(`SELECT COUNT(*) FROM Cases`)
	for _, ev := range []string{"", "LETTER-1"} {
		if _, err := s.o.RequestRefund(s.ctx, orchestrator.RefundRequest{TxID: txid, RequestedBy: "ops-1", EvidenceRef: ev}); domainerr.Code(err) != "SYSTEM_BCP_READ_ONLY" {
			t.Fatalf("refund in BCP (evidence %q): %v", ev, err)
		}
	}
	if n := s.count(`SELECT COUNT(*) FROM ReversalRecords`); n != 0 || s.count(`SELECT COUNT(*) FROM Cases`) != cases0 || s.banks.Calls()[bankapi.Compensate] != 0 {
		t.Fatalf("BCP refusal wrote: %d reversals, cases %d -> %d", n, cases0, s.count(`SELECT COUNT(*) FROM Cases`))
	}
	if _, _, err := modes.DeactivateBCP(s.ctx, "op-1", "drill over"); err != nil {
		t.Fatal(err)
	}
	if rev, err := s.o.RequestRefund(s.ctx, orchestrator.RefundRequest{TxID: txid, RequestedBy: "ops-1", EvidenceRef: "LETTER-1"}); err != nil || rev.Status != orchestrator.ReversalCompleted {
		t.Fatalf("%+v %v", rev, err)
	}
	s.run()
	s.checkInvariants(before, s.snapshot())
}
