package orchestrator

import (
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
)

func (f *fixture) entries(txid string) []string {
	f.t.Helper()
	var out []string
	err := f.db.Read(f.ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(f.ctx, `SELECT event_type, COALESCE(state_from, ''), state_to, payload_json FROM FinalityLog WHERE txid = ? ORDER BY event_seq`, txid)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e, from, to, p string
			if err := rows.Scan(&e, &from, &to, &p); err != nil {
				return err
			}
			s := e + ":" + from + "->" + to
			if e == "OwnershipTransferred" {
				switch {
				case strings.Contains(p, `"owner_to":"VENUE:BOJ"`):
					s += ":ZC->VENUE:BOJ"
				case strings.Contains(p, `"owner_to":"ZC"`):
					s += ":VENUE:BOJ->ZC"
				}
			}
			out = append(out, s)
		}
		return rows.Err()
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

func (f *fixture) positions() map[string]int64 {
	f.t.Helper()
	ps, err := f.o.Positions(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]int64{}
	for _, p := range ps {
		out[p.BankID+"/"+p.Venue] = p.Balance
	}
	return out
}

// TestHighValueBOJHandoff: the external settlement is instructed only on a
// PAYER_HV_ISOLATION_PROOF; the row is handed ZC -> VENUE:BOJ, is invisible
// to the timeout sweep while the venue holds it, and comes back to ZC
// when the venue settled it (BOJ balances moved), then settles.
func TestHighValueBOJHandoff(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.ManualVenue = true })
	f.b.proofType = ProofPayerHVIsolation
	if err := f.o.SetPosition(f.ctx, "001", VenueBOJ, "JPY", 500_000_000); err != nil {
		t.Fatal(err)
	}
	r := f.submit(pi(LaneExpress, 200_000_000), "hv")
	if r.Lane != LaneHighValue {
		t.Fatalf("lane %s", r.Lane)
	}
	f.run()
	v := f.view(r.TxID)
	if v.State != "PAYER_EXEC_CONFIRMED" || v.Owner != "VENUE:BOJ" || v.ExternalSettlementStatus != ExtRequested {
		t.Fatalf("at the venue: %+v", v)
	}
	if f.b.count(bankapi.ReserveFunds) != 0 || f.b.count(bankapi.AuthorityCheck) != 1 || f.b.count(bankapi.ExecuteCredit) != 0 {
		t.Fatalf("calls: %v", f.b.calls)
	}
	// The sweep does not see a row the venue owns, however long it waits.
	f.clk.Advance(48 * time.Hour)
	if res, err := f.o.TimeoutSweep(f.ctx); err != nil || res != (SweepResult{}) {
		t.Fatalf("sweep touched a VENUE:BOJ row: %+v %v", res, err)
	}
	if n, err := f.o.RunVenue(f.ctx); err != nil || n != 1 {
		t.Fatalf("venue settled %d, %v", n, err)
	}
	f.run()
	v = f.view(r.TxID)
	if v.State != "SETTLED" || v.Owner != "ZC" || v.ExternalSettlementStatus != ExtSettled {
		t.Fatalf("after the venue: %+v", v)
	}
	if p := f.positions(); p["001/BOJ"] != 300_000_000 || p["002/BOJ"] != 200_000_000 || p["001/ZC"] != 0 {
		t.Fatalf("positions %v", p)
	}
	want := []string{"PaymentInitiated:->RECEIVED", "PreCheckPassed:RECEIVED->PRECHECKED", "DecidedToSettle:PRECHECKED->DECIDED_TO_SETTLE",
		"PayerExecConfirmed:DECIDED_TO_SETTLE->PAYER_EXEC_CONFIRMED",
		"OwnershipTransferred:PAYER_EXEC_CONFIRMED->PAYER_EXEC_CONFIRMED:ZC->VENUE:BOJ",
		"OwnershipTransferred:PAYER_EXEC_CONFIRMED->PAYER_EXEC_CONFIRMED:VENUE:BOJ->ZC",
		"PayeeExecConfirmed:PAYER_EXEC_CONFIRMED->PAYEE_EXEC_CONFIRMED", "Settled:PAYEE_EXEC_CONFIRMED->SETTLED"}
	if got := f.entries(r.TxID); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("chain:\n%s", strings.Join(got, "\n"))
	}
}

// TestHighValueWithoutIsolationProofIsNotInstructed: a PAYER_EXEC_PROOF is
// not enough for HIGH_VALUE (spec 002 §12.3): no venue instruction, no BOJ
// movement, the work is escalated to a Case.
func TestHighValueWithoutIsolationProofIsNotInstructed(t *testing.T) {
	f := newFixture(t, nil)
	if err := f.o.SetPosition(f.ctx, "001", VenueBOJ, "JPY", 500_000_000); err != nil {
		t.Fatal(err)
	}
	r := f.submit(pi(LaneHighValue, 1_000), "hv-plain")
	f.run()
	v := f.view(r.TxID)
	if v.State != "PAYER_EXEC_CONFIRMED" || v.Owner != "ZC" || v.ExternalSettlementStatus != ExtNone || v.Case.CaseID == "" {
		t.Fatalf("%+v", v)
	}
	if p := f.positions(); p["001/BOJ"] != 500_000_000 {
		t.Fatalf("BOJ moved: %v", p)
	}
}

func TestHighValueBOJInsufficientCancels(t *testing.T) {
	f := newFixture(t, nil)
	f.b.proofType = ProofPayerHVIsolation
	r := f.submit(pi(LaneHighValue, 1_000), "hv-poor")
	f.run()
	v := f.view(r.TxID)
	if v.State != "CANCELLED" || v.ReasonCode != ReasonBOJInsufficientFunds || v.NextActionHint != HintContactPayerBank {
		t.Fatalf("%+v", v)
	}
	if f.b.count(bankapi.ExecuteDebit) != 0 {
		t.Fatal("debited although BOJ could not settle")
	}
}

// TestTimeoutSweepFamilies drives transfers into each timeout and checks
// the state, the reason code and its family, and that only rows older
// than the limit (from pending_since) move.
func TestTimeoutSweepFamilies(t *testing.T) {
	down := domainerr.New("BANK_ERROR", "unreachable", nil)
	f := newFixture(t, func(c *Config) {
		c.Timeouts = Timeouts{Exec: time.Minute, PayeeProof: 2 * time.Minute, Suspended: time.Hour, AdapterDownAfter: 100}
		c.Backoff = Backoff{Base: time.Hour, Max: time.Hour}
	})
	f.b.failWith(bankapi.ExecuteDebit, down, false)
	a := f.submit(pi(LaneExpress, 1000), "exec-timeout")
	f.run()
	if v := f.view(a.TxID); v.State != "DECIDED_TO_SETTLE" || v.NextActionHint != HintRetryLater {
		t.Fatalf("%+v", v)
	}
	f.clk.Advance(59 * time.Second)
	if res, _ := f.o.TimeoutSweep(f.ctx); res.ExecTimeouts != 0 {
		t.Fatal("suspended before the limit")
	}
	f.clk.Advance(2 * time.Second)
	res, err := f.o.TimeoutSweep(f.ctx)
	if err != nil || res.ExecTimeouts != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	if v := f.view(a.TxID); v.State != "SUSPENDED" || v.ReasonCode != ReasonSuspendExecTimeout || Family(v.ReasonCode) != FamilyWaiting {
		t.Fatalf("%+v", v)
	}
	// Payee proof timeout: debit works, credit does not.
	f.b.failWith(bankapi.ExecuteDebit, nil, false)
	f.b.failWith(bankapi.ExecuteCredit, down, false)
	b := f.submit(pi(LaneExpress, 2000), "payee-timeout")
	f.run()
	if v := f.view(b.TxID); v.State != "PAYER_EXEC_CONFIRMED" {
		t.Fatalf("%+v", v)
	}
	f.clk.Advance(2*time.Minute + time.Second)
	if res, err = f.o.TimeoutSweep(f.ctx); err != nil || res.PayeeProofTimeouts != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	if v := f.view(b.TxID); v.State != "SUSPENDED" || v.ReasonCode != ReasonSuspendPayeeProofTimeout || v.Execution.A != "OK" {
		t.Fatalf("%+v", v)
	}
	// Suspended too long: FAILED_EXECUTION with a Case. a was suspended
	// 2m1s before b, so a limit crossing between them fails only a.
	f.clk.Advance(time.Hour - 2*time.Minute)
	if res, err = f.o.TimeoutSweep(f.ctx); err != nil || res.FailedTimeouts != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	va := f.view(a.TxID)
	if va.State != "FAILED_EXECUTION" || va.ReasonCode != ReasonFailedExecTimeout || va.Case.CaseID == "" || va.NextActionHint != HintOpenCase {
		t.Fatalf("%+v", va)
	}
	if v := f.view(b.TxID); v.State != "SUSPENDED" {
		t.Fatalf("b failed early: %+v", v)
	}
	if n := f.count(`SELECT COUNT(*) FROM HReservations WHERE txid = ? AND is_released = 0`, a.TxID); n != 0 {
		t.Fatal("H kept for a failed transfer")
	}
}

// TestAdapterDownIsNotExecFailed: a bank that cannot be reached parks the
// transfer with the waiting reason SUSPEND_ADAPTER_DOWN and keeps
// retrying; a bank that refuses parks it with the event reason
// EXEC_CREDIT_FAILED and escalates.
func TestAdapterDownIsNotExecFailed(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Timeouts.AdapterDownAfter = 3 })
	f.b.failWith(bankapi.ExecuteDebit, domainerr.New("BANK_TIMEOUT", "no answer", nil), false)
	a := f.submit(pi(LaneExpress, 1000), "down")
	for i := 0; i < 3; i++ {
		f.run()
		f.clk.Advance(f.o.bo.Max)
	}
	v := f.view(a.TxID)
	if v.State != "SUSPENDED" || v.ReasonCode != ReasonSuspendAdapterDown || v.NextActionHint != HintRetryLater || v.Case.CaseID != "" {
		t.Fatalf("%+v", v)
	}
	f.b.failWith(bankapi.ExecuteDebit, nil, false)
	f.run()
	if v := f.view(a.TxID); v.State != "SETTLED" {
		t.Fatalf("after the bank came back: %+v", v)
	}

	f.b.failWith(bankapi.ExecuteCredit, domainerr.New("ACCOUNT_NOT_FOUND", "no such account", nil), false)
	b := f.submit(pi(LaneExpress, 1000), "refused")
	f.run()
	v = f.view(b.TxID)
	if v.State != "SUSPENDED" || v.ReasonCode != ReasonExecCreditFailed || v.Case.CaseID == "" || v.NextActionHint != HintOpenCase ||
		v.Execution.A != "OK" || v.Execution.B != "NG" {
		t.Fatalf("%+v", v)
	}
	if Family(ReasonSuspendAdapterDown) == Family(ReasonExecCreditFailed) {
		t.Fatal("unreachable and refused share a family")
	}
}

func TestWindowClosedSuspendsAndSweepResumes(t *testing.T) {
	f := newFixture(t, nil)
	f.setParticipant("002", func(p *participants.Participant) { p.WindowStart, p.WindowEnd = "12:00", "18:00" }) // now 10:00 JST
	r := f.submit(pi(LaneExpress, 1000), "window")
	f.run()
	v := f.view(r.TxID)
	if v.State != "PRECHECKED_SUSPENDED" || v.ReasonCode != ReasonCounterpartyWindowClosed || v.NextActionHint != HintWait {
		t.Fatalf("%+v", v)
	}
	if f.b.count(bankapi.ReserveFunds) != 0 {
		t.Fatal("reserved while the payee window was closed")
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions WHERE txid = ? AND pending_request_json LIKE '%"lane":"EXPRESS"%'`, r.TxID); n != 1 {
		t.Fatal("pending_request_json not kept")
	}
	f.clk.Advance(time.Hour + 59*time.Minute) // 11:59 JST
	if res, _ := f.o.TimeoutSweep(f.ctx); res.WindowResumed != 0 {
		t.Fatal("resumed before the window opened")
	}
	f.clk.Advance(time.Minute) // 12:00 JST
	if res, err := f.o.TimeoutSweep(f.ctx); err != nil || res.WindowResumed != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	f.run()
	if v := f.view(r.TxID); v.State != "SETTLED" {
		t.Fatalf("%+v", v)
	}
	if n := f.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = 'Resumed'`, r.TxID); n != 1 {
		t.Fatal("no Resumed entry")
	}
}

func TestStandardSuspensionsAndResume(t *testing.T) {
	f := newFixture(t, nil)
	f.b.failWith(bankapi.AuthorityCheck, domainerr.New("BANK_ERROR", "down", nil), true)
	a := f.submit(pi(LaneStandard, 1000), "auth-pending")
	f.run()
	if v := f.view(a.TxID); v.State != "PRECHECKED_SUSPENDED" || v.ReasonCode != ReasonSuspendAuthorityPending {
		t.Fatalf("%+v", v)
	}
	f.clk.Advance(time.Second)
	f.run()
	if v := f.view(a.TxID); v.State != "SETTLED" {
		t.Fatalf("%+v", v)
	}
	if f.b.count(bankapi.NameCheck) != 1 || f.b.count(bankapi.AuthorityCheck) != 2 {
		t.Fatalf("calls %v", f.b.calls)
	}
	if n := f.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = 'Resumed'`, a.TxID); n != 1 {
		t.Fatal("no Resumed entry")
	}
}

func TestFamilies(t *testing.T) {
	for code, fam := range WrittenReasons {
		if got := Family(code); got != fam {
			t.Errorf("%s: family %s, want %s", code, got, fam)
		}
		if fam == FamilyEvent && (strings.HasPrefix(code, "SUSPEND_") || strings.HasSuffix(code, "_TIMEOUT")) {
			t.Errorf("%s: an event reason spelled as a wait", code)
		}
		if fam == FamilyWaiting && !specFixedWaiting[code] && !strings.HasPrefix(code, "SUSPEND_") && !strings.HasSuffix(code, "_TIMEOUT") {
			t.Errorf("%s: a waiting reason not spelled SUSPEND_* / *_TIMEOUT", code)
		}
	}
	if Family("CANCEL_BY_PAYER") != FamilyEvent || Family("CANCEL_PRECHECK_TIMEOUT") != FamilyWaiting {
		t.Error("CANCEL_ is decided by meaning, not prefix")
	}
}

// TestSweepRacesWorker: the sweep suspends a transfer while the worker is
// waiting for the payer bank's answer. The worker's PayerExecConfirmed
// (guarded on DECIDED_TO_SETTLE) does not apply; it reloads and confirms
// from SUSPENDED instead (the bank replays the same request_id), and the
// transfer settles exactly once.
func TestSweepRacesWorker(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Timeouts.Exec = time.Minute })
	swept := false
	f.b.onCall = func(cmd bankapi.Command) {
		if cmd == bankapi.ExecuteDebit && !swept {
			swept = true
			f.clk.Advance(2 * time.Minute)
			if res, err := f.o.TimeoutSweep(f.ctx); err != nil || res.ExecTimeouts != 1 {
				t.Errorf("sweep: %+v %v", res, err)
			}
		}
	}
	r := f.submit(pi(LaneExpress, 1000), "race-sweep")
	f.run()
	if v := f.view(r.TxID); v.State != "SETTLED" {
		t.Fatalf("%+v", v)
	}
	want := []string{"PaymentInitiated:->RECEIVED", "PreCheckPassed:RECEIVED->PRECHECKED", "HReserved:PRECHECKED->H_RESERVED",
		"DecidedToSettle:H_RESERVED->DECIDED_TO_SETTLE", "Suspended:DECIDED_TO_SETTLE->SUSPENDED",
		"PayerExecConfirmed:SUSPENDED->PAYER_EXEC_CONFIRMED", "PayeeExecConfirmed:PAYER_EXEC_CONFIRMED->PAYEE_EXEC_CONFIRMED",
		"Settled:PAYEE_EXEC_CONFIRMED->SETTLED"}
	if got := f.entries(r.TxID); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("chain:\n%s", strings.Join(got, "\n"))
	}
	if n := f.b.count(bankapi.ExecuteDebit); n != 2 {
		t.Fatalf("execute-debit asked %d times (want the first and its replay)", n)
	}
}

// Spec 001 §13.1: an EXPRESS transfer may name its payee by pspr_ref
// alone. The payee bank resolves it before the decision, the resolved
// account is fixed on the row (and in the HReserved entry) before
// DECIDED_TO_SETTLE, and the credit goes to it. An unknown reference
// cancels the transfer; other lanes still need payee.account_hash.
func TestExpressResolvesPayeeByPSPRRef(t *testing.T) {
	f := newFixture(t, nil)
	f.b.aliases["PSPR-SHOP-42"] = "h:shop"
	req := pi(LaneExpress, 3000)
	req.Payee.AccountHash, req.PSPRRef = "", "PSPR-SHOP-42"
	r := f.submit(req, "alias")
	f.run()
	v := f.view(r.TxID)
	if v.State != "SETTLED" {
		t.Fatalf("state %s (%s), want SETTLED", v.State, v.ReasonCode)
	}
	if got := f.b.credited[r.TxID]; got != "h:shop" {
		t.Fatalf("credited %q, want the resolved h:shop", got)
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions WHERE txid = ? AND payee_account_hash = 'h:shop'`, r.TxID); n != 1 {
		t.Fatal("resolved account not fixed on the row")
	}
	if n := f.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = 'HReserved'
		AND json_extract(payload_json, '$.account_resolved_ref') = 'h:shop'`, r.TxID); n != 1 {
		t.Fatal("resolution not recorded in the HReserved entry")
	}

	unknown := req
	unknown.PSPRRef = "PSPR-NOBODY"
	u := f.submit(unknown, "unknown")
	f.run()
	if v := f.view(u.TxID); v.State != "CANCELLED" || v.ReasonCode != ReasonNameMismatch {
		t.Fatalf("unknown reference: %s %s, want CANCELLED %s", v.State, v.ReasonCode, ReasonNameMismatch)
	}
	if _, ok := f.b.credited[u.TxID]; ok {
		t.Fatal("an unresolved transfer was credited")
	}

	for _, c := range []struct {
		name string
		mod  func(*PaymentInitiated)
	}{
		{"STANDARD without account", func(p *PaymentInitiated) { p.Lane = LaneStandard }},
		{"EXPRESS without pspr_ref", func(p *PaymentInitiated) { p.PSPRRef = "" }},
		{"EXPRESS escalated to HIGH_VALUE", func(p *PaymentInitiated) { p.Amount.Value = 100_000_001 }},
	} {
		bad := req
		c.mod(&bad)
		_, err := f.o.Submit(f.ctx, bad, "bad-"+strings.ReplaceAll(c.name, " ", "-"), "001")
		wantCode(t, err, "MISSING_FIELD")
	}
}
