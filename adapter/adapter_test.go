package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox"
)

func credit(req, tx, acct string, v int64) bankapi.ExecuteCreditRequest {
	return bankapi.ExecuteCreditRequest{RequestIDValue: req, TxID: tx, Amount: jpy(v), DecisionProofRef: "DP-" + tx, PayeeAccountHash: acct}
}

func TestExecuteCreditDuplicateIsAppliedOnce(t *testing.T) {
	h := newHarness(t)
	h.account("h:b", "0000002", "ヤマダ タロウ", 1000)
	first, err := h.a.ExecuteCredit(h.ctx, credit("r1", "TX-1", "h:b", 500))
	if err != nil {
		t.Fatal(err)
	}
	again, err := h.a.ExecuteCredit(h.ctx, credit("r1", "TX-1", "h:b", 500))
	if err != nil {
		t.Fatal(err)
	}
	if first != again {
		t.Fatalf("replay returned %+v, first %+v", again, first)
	}
	// A retry of the same transfer under a new request_id gets the same proof.
	other, err := h.a.ExecuteCredit(h.ctx, credit("r2", "TX-1", "h:b", 500))
	if err != nil || other.BankProofRef.ProofID != first.BankProofRef.ProofID {
		t.Fatalf("retry under new request_id: %+v %v", other, err)
	}
	h.drain()
	if got := h.core.bal("0000002"); got != 1500 {
		t.Fatalf("core balance %d, want 1500 (credit applied once)", got)
	}
	if s := h.shadow("h:b"); s.CoreBalance != 1500 || s.PendingCredits != 0 {
		t.Fatalf("shadow %+v", s)
	}
	if first.BankProofRef.ProofType != bankapi.ProofPayeeExec || first.BankProofRef.IssuerBankID != "001" {
		t.Fatalf("proof %+v", first.BankProofRef)
	}
}

func TestSameRequestIDOtherBodyIsConflict(t *testing.T) {
	h := newHarness(t)
	h.account("h:b", "0000002", "B", 0)
	if _, err := h.a.ExecuteCredit(h.ctx, credit("r1", "TX-1", "h:b", 500)); err != nil {
		t.Fatal(err)
	}
	_, err := h.a.ExecuteCredit(h.ctx, credit("r1", "TX-1", "h:b", 501))
	if domainerr.Code(err) != "IDEMPOTENCY_KEY_CONFLICT" {
		t.Fatalf("err = %v", err)
	}
	_, err = h.a.ExecuteCredit(h.ctx, credit("r9", "TX-1", "h:b", 999))
	if domainerr.Code(err) != "IDEMPOTENCY_KEY_CONFLICT" {
		t.Fatalf("same txid other amount: err = %v", err)
	}
}

// Run with -race: N goroutines send the same execute-credit at once.
func TestExecuteCreditConcurrentDuplicatesPostOnce(t *testing.T) {
	h := newHarness(t)
	h.account("h:b", "0000002", "B", 0)
	const n = 8
	var wg sync.WaitGroup
	proofs := make([]string, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r, err := h.a.ExecuteCredit(h.ctx, credit("r1", "TX-1", "h:b", 700))
			proofs[i], errs[i] = r.BankProofRef.ProofID, err
		}(i)
	}
	wg.Wait()
	for i := range errs {
		if errs[i] != nil && domainerr.Code(errs[i]) != "LEGACY_ADAPTER_REQUEST_IN_FLIGHT" {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if errs[i] == nil && proofs[i] != proofs[0] && proofs[0] != "" {
			t.Fatalf("different proofs %q %q", proofs[i], proofs[0])
		}
	}
	rows, err := h.a.Outbox().List(h.ctx, outbox.Filter{TxID: "TX-1"})
	if err != nil || len(rows) != 1 {
		t.Fatalf("outbox rows %d (%v), want 1", len(rows), err)
	}
	h.drain()
	if got := h.core.bal("0000002"); got != 700 {
		t.Fatalf("core balance %d, want 700", got)
	}
}

func TestNameCheckInFlightDuplicateAndOrphanSweep(t *testing.T) {
	h := newHarness(t)
	h.account("h:b", "0000002", "ヤマダ タロウ", 0)
	block := make(chan struct{})
	asked := make(chan struct{}, 4)
	h.core.set(func(c *fakeCore) { c.block, c.asked = block, asked })
	req := bankapi.NameCheckRequest{RequestIDValue: "n1", TxID: "TX-1", AccountHash: "h:b"}
	done := make(chan bankapi.NameCheckResponse)
	go func() {
		r, err := h.a.NameCheck(h.ctx, req)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	<-asked
	_, err := h.a.NameCheck(h.ctx, req)
	de, ok := domainerr.As(err)
	if !ok || de.Code != "LEGACY_ADAPTER_REQUEST_IN_FLIGHT" || !de.Retryable() {
		t.Fatalf("duplicate while in flight: %v", err)
	}
	close(block)
	if r := <-done; r.Result != bankapi.ResultMatch {
		t.Fatalf("name-check = %+v", r)
	}
	h.core.set(func(c *fakeCore) { c.block, c.asked = nil, nil; c.names["0000002"] = "changed" })
	if r, err := h.a.NameCheck(h.ctx, req); err != nil || r.Result != bankapi.ResultMatch {
		t.Fatalf("completed request must replay the cached MATCH: %+v %v", r, err)
	}

	// A claim abandoned by a crashed caller (IN_FLIGHT forever) is swept
	// after idem.OrphanAge; the retry then runs.
	req2 := bankapi.NameCheckRequest{RequestIDValue: "n2", TxID: "TX-2", AccountHash: "h:b"}
	body, _ := requestBody("name-check", req2)
	err = h.a.db.Write(h.ctx, func(tx *store.Tx) error {
		_, err := h.a.keys.Acquire(h.ctx, tx, h.a.requestKey("n2"), body)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.a.NameCheck(h.ctx, req2); domainerr.Code(err) != "LEGACY_ADAPTER_REQUEST_IN_FLIGHT" {
		t.Fatalf("abandoned claim before the sweep: %v", err)
	}
	h.clk.Advance(idem.OrphanAge + time.Second)
	if s, err := h.a.SweepRequests(h.ctx); err != nil || s.Orphans != 1 {
		t.Fatalf("sweep: %+v %v", s, err)
	}
	if r, err := h.a.NameCheck(h.ctx, req2); err != nil || r.Result != bankapi.ResultMismatch || r.ReasonCode != bankapi.ReasonNameMismatch {
		t.Fatalf("after the sweep: %+v %v", r, err)
	}
}

func TestNameCheckDefersAndNeverThrows(t *testing.T) {
	cases := []struct {
		name     string
		realTime bool
		at       time.Time
		offline  bool
		want     string
	}{
		{"real-time online", true, start, false, bankapi.ResultMatch},
		{"not real-time", false, start, false, bankapi.ResultDeferred},
		{"batch window 23:30 JST", true, time.Date(2026, 12, 2, 14, 30, 0, 0, time.UTC), false, bankapi.ResultDeferred},
		{"batch window after midnight", true, time.Date(2026, 12, 2, 15, 30, 0, 0, time.UTC), false, bankapi.ResultDeferred},
		{"core not answering", true, start, true, bankapi.ResultDeferred},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, func(cfg *Config) { cfg.RealTime = c.realTime })
			h.account("h:b", "0000002", "B", 0)
			h.clk.Set(c.at)
			h.core.set(func(fc *fakeCore) { fc.offline = c.offline })
			r, err := h.a.NameCheck(h.ctx, bankapi.NameCheckRequest{RequestIDValue: "n", TxID: "TX", AccountHash: "h:b"})
			if err != nil || r.Result != c.want {
				t.Fatalf("name-check = %+v, %v; want %s", r, err, c.want)
			}
			if c.want == bankapi.ResultDeferred {
				// DEFERRED is not cached: once the core answers, the same
				// request_id gets the real answer.
				h.clk.Set(start)
				h.core.set(func(fc *fakeCore) { fc.offline = false })
				h.a.realTime = true
				r, err := h.a.NameCheck(h.ctx, bankapi.NameCheckRequest{RequestIDValue: "n", TxID: "TX", AccountHash: "h:b"})
				if err != nil || r.Result != bankapi.ResultMatch {
					t.Fatalf("after deferral: %+v %v", r, err)
				}
			}
		})
	}
}

// An EXPRESS transfer without payee.account_hash names its payee by
// pspr_ref: the bank resolves it from its own directory, also while the
// core is in its batch window (no core inquiry), and an unknown or frozen
// target is a MISMATCH, cached like any answer.
func TestNameCheckResolvesPSPRRef(t *testing.T) {
	h := newHarness(t, func(cfg *Config) { cfg.RealTime = false }) // the core could not answer a name check
	h.account("h:b", "0000002", "B", 0)
	h.account("h:c", "0000003", "C", 0)
	for _, a := range [][2]string{{"PSPR-B", "h:b"}, {"PSPR-C", "h:c"}} {
		if err := h.a.RegisterAlias(h.ctx, a[0], a[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.a.RegisterAlias(h.ctx, "PSPR-B", "h:c"); !domainerr.Has(err, "STATE_GUARD") {
		t.Fatalf("re-registering a reference: %v", err)
	}
	if err := h.a.RegisterAlias(h.ctx, "PSPR-X", "h:none"); !domainerr.Has(err, "ACCOUNT_NOT_FOUND") {
		t.Fatalf("alias to an unknown account: %v", err)
	}
	if err := h.a.SetAccountStatus(h.ctx, "h:c", AccountFrozen); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		id, ref string
		want    bankapi.NameCheckResponse
	}{
		{"n1", "PSPR-B", bankapi.NameCheckResponse{Result: bankapi.ResultMatch, ResolvedAccountHash: "h:b"}},
		{"n2", "PSPR-UNKNOWN", bankapi.NameCheckResponse{Result: bankapi.ResultMismatch, ReasonCode: bankapi.ReasonAccountNotFound}},
		{"n3", "PSPR-C", bankapi.NameCheckResponse{Result: bankapi.ResultMismatch, ReasonCode: bankapi.ReasonAccountFrozen}},
	}
	for _, c := range cases {
		r, err := h.a.NameCheck(h.ctx, bankapi.NameCheckRequest{RequestIDValue: c.id, TxID: "TX-" + c.id, PSPRRef: c.ref})
		if err != nil || r != c.want {
			t.Fatalf("%s: %+v, %v; want %+v", c.ref, r, err, c.want)
		}
	}
	// The answer is cached under its request_id.
	if r, err := h.a.NameCheck(h.ctx, bankapi.NameCheckRequest{RequestIDValue: "n1", TxID: "TX-n1", PSPRRef: "PSPR-B"}); err != nil || r.ResolvedAccountHash != "h:b" {
		t.Fatalf("replay: %+v %v", r, err)
	}
	if _, err := h.a.NameCheck(h.ctx, bankapi.NameCheckRequest{RequestIDValue: "n4", TxID: "TX-4"}); !domainerr.Has(err, "MISSING_FIELD") {
		t.Fatalf("neither account_hash nor pspr_ref: %v", err)
	}
}

func TestReserveDebitReleaseOnTheShadow(t *testing.T) {
	h := newHarness(t)
	h.account("h:a", "0000001", "A", 10_000)
	r, err := h.a.ReserveFunds(h.ctx, bankapi.ReserveFundsRequest{RequestIDValue: "q1", TxID: "TX-1", Amount: jpy(4000), AccountHash: "h:a"})
	if err != nil || r.Result != bankapi.ResultReserved || r.ReservationRef == "" {
		t.Fatalf("reserve: %+v %v", r, err)
	}
	if s := h.shadow("h:a"); s.Holds != 4000 || s.Available != 6000 || s.CoreBalance != 10_000 {
		t.Fatalf("after reserve: %+v", s)
	}
	ng, err := h.a.ReserveFunds(h.ctx, bankapi.ReserveFundsRequest{RequestIDValue: "q2", TxID: "TX-2", Amount: jpy(6001), AccountHash: "h:a"})
	if err != nil || ng.Result != bankapi.ResultError || ng.ReasonCode != bankapi.ReasonInsufficientFunds {
		t.Fatalf("over-reserve: %+v %v", ng, err)
	}
	d, err := h.a.ExecuteDebit(h.ctx, bankapi.ExecuteDebitRequest{RequestIDValue: "d1", TxID: "TX-1", Amount: jpy(4000),
		DecisionProofRef: "DP", HReservation: &bankapi.HReservation{ReservationID: r.ReservationRef, Mode: "RESERVED"}})
	if err != nil || d.BankProofRef.ProofType != bankapi.ProofPayerExec {
		t.Fatalf("debit: %+v %v", d, err)
	}
	if s := h.shadow("h:a"); s.Holds != 0 || s.PendingDebits != 4000 || s.Available != 6000 {
		t.Fatalf("after debit: %+v", s)
	}
	_, err = h.a.ReleaseReserve(h.ctx, bankapi.ReleaseReserveRequest{RequestIDValue: "x1", TxID: "TX-1", ReservationRef: r.ReservationRef})
	if domainerr.Code(err) != "STATE_GUARD" {
		t.Fatalf("release of a consumed hold: %v", err)
	}
	h.drain()
	if s := h.shadow("h:a"); s.CoreBalance != 6000 || s.PendingDebits != 0 || h.core.bal("0000001") != 6000 {
		t.Fatalf("after drain: %+v core %d", s, h.core.bal("0000001"))
	}
	// reserve then release: available restored; releasing twice answers RELEASED.
	r2, _ := h.a.ReserveFunds(h.ctx, bankapi.ReserveFundsRequest{RequestIDValue: "q3", TxID: "TX-3", Amount: jpy(1000), AccountHash: "h:a"})
	for i, id := range []string{"x2", "x3"} {
		rel, err := h.a.ReleaseReserve(h.ctx, bankapi.ReleaseReserveRequest{RequestIDValue: id, TxID: "TX-3", ReservationRef: r2.ReservationRef})
		if err != nil || rel.Result != bankapi.ResultReleased {
			t.Fatalf("release %d: %+v %v", i, rel, err)
		}
	}
	if s := h.shadow("h:a"); s.Available != 6000 {
		t.Fatalf("after release: %+v", s)
	}
}

func TestExecuteDebitRefusals(t *testing.T) {
	h := newHarness(t)
	h.account("h:a", "0000001", "A", 1000)
	h.account("h:f", "0000009", "F", 1000)
	if err := h.a.SetAccountStatus(h.ctx, "h:f", AccountFrozen); err != nil {
		t.Fatal(err)
	}
	hv := func(req, tx, acct string, v int64) bankapi.ExecuteDebitRequest {
		return bankapi.ExecuteDebitRequest{RequestIDValue: req, TxID: tx, Amount: jpy(v), DecisionProofRef: "DP", Lane: "HIGH_VALUE", PayerAccountHash: acct}
	}
	cases := []struct {
		name string
		req  bankapi.ExecuteDebitRequest
		code string
	}{
		{"insufficient", hv("d1", "TX-1", "h:a", 1001), "RESERVE_FAILED"},
		{"frozen", hv("d2", "TX-2", "h:f", 1), "ACCOUNT_FROZEN"},
		{"unknown account", hv("d3", "TX-3", "h:zz", 1), "ACCOUNT_NOT_FOUND"},
		{"unknown hold", bankapi.ExecuteDebitRequest{RequestIDValue: "d4", TxID: "TX-4", Amount: jpy(1), DecisionProofRef: "DP",
			HReservation: &bankapi.HReservation{ReservationID: "nope"}}, "TX_NOT_FOUND"},
		{"other currency", bankapi.ExecuteDebitRequest{RequestIDValue: "d5", TxID: "TX-5", Amount: bankapi.Amount{Value: 1, Currency: "USD"},
			DecisionProofRef: "DP", PayerAccountHash: "h:a"}, "INVALID_CURRENCY"},
		{"zero amount", hv("d6", "TX-6", "h:a", 0), "INVALID_AMOUNT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := h.a.ExecuteDebit(h.ctx, c.req); domainerr.Code(err) != c.code {
				t.Fatalf("err = %v, want %s", err, c.code)
			}
		})
	}
	// Refusals leave no trace: no outbox row, no claim (a retry re-evaluates).
	rows, _ := h.a.Outbox().List(h.ctx, outbox.Filter{})
	if len(rows) != 0 {
		t.Fatalf("refused debits queued %d postings", len(rows))
	}
	if _, err := h.a.ExecuteDebit(h.ctx, hv("d1", "TX-1", "h:a", 1000)); err != nil {
		t.Fatalf("after a refusal the request_id is free: %v", err)
	}
}

func TestCompensationReversesTheDebitNetZero(t *testing.T) {
	h := newHarness(t)
	h.account("h:a", "0000001", "A", 5000)
	r, _ := h.a.ReserveFunds(h.ctx, bankapi.ReserveFundsRequest{RequestIDValue: "q1", TxID: "TX-1", Amount: jpy(2000), AccountHash: "h:a"})
	if _, err := h.a.ExecuteDebit(h.ctx, bankapi.ExecuteDebitRequest{RequestIDValue: "d1", TxID: "TX-1", Amount: jpy(2000), DecisionProofRef: "DP",
		HReservation: &bankapi.HReservation{ReservationID: r.ReservationRef, Mode: "RESERVED"}}); err != nil {
		t.Fatal(err)
	}
	comp, err := h.a.Compensate(h.ctx, CompensateRequest{RequestIDValue: "c1", TxID: "TX-1", Reason: "EXEC_CREDIT_FAILED"})
	if err != nil || len(comp.Reversals) != 1 {
		t.Fatalf("compensate: %+v %v", comp, err)
	}
	if again, err := h.a.Compensate(h.ctx, CompensateRequest{RequestIDValue: "c1", TxID: "TX-1", Reason: "EXEC_CREDIT_FAILED"}); err != nil || again.Reversals[0] != comp.Reversals[0] {
		t.Fatalf("replay: %+v %v", again, err)
	}
	if _, err := h.a.Compensate(h.ctx, CompensateRequest{RequestIDValue: "c2", TxID: "TX-1"}); domainerr.Code(err) != "ALREADY_PROCESSED" {
		t.Fatalf("second compensation: %v", err)
	}
	h.drain()
	rows, _ := h.a.Outbox().List(h.ctx, outbox.Filter{TxID: "TX-1"})
	if len(rows) != 2 || rows[1].Posting.ReversalOf != rows[0].Posting.Ref || rows[0].Status != outbox.Applied || rows[1].Status != outbox.Applied {
		t.Fatalf("outbox rows: %+v", rows)
	}
	if h.core.bal("0000001") != 5000 {
		t.Fatalf("core %d, want 5000", h.core.bal("0000001"))
	}
	if s := h.shadow("h:a"); s.CoreBalance != 5000 || s.Available != 5000 {
		t.Fatalf("shadow %+v", s)
	}
	// Settled transfers cannot be compensated.
	h.a.ExecuteDebit(h.ctx, bankapi.ExecuteDebitRequest{RequestIDValue: "d2", TxID: "TX-2", Amount: jpy(100), DecisionProofRef: "DP", PayerAccountHash: "h:a"})
	h.a.DebitSettled(h.ctx, bankapi.DebitSettledRequest{RequestIDValue: "s2", TxID: "TX-2", Amount: jpy(100), PayeeBankID: "002", SettledAt: "2026-12-02T01:00:00Z"})
	if _, err := h.a.Compensate(h.ctx, CompensateRequest{RequestIDValue: "c3", TxID: "TX-2"}); domainerr.Code(err) != "STATE_GUARD" {
		t.Fatalf("compensate settled: %v", err)
	}
}

func TestAccountVerifyScoresAndNeverLeaksTheName(t *testing.T) {
	h := newHarness(t)
	h.account("h:b", "0000002", "佐藤 花子", 0)
	h.a.SetAccountStatus(h.ctx, "h:b", AccountActive)
	cases := []struct {
		name, given, result string
		score               float64
	}{
		{"exact", "佐藤 花子", bankapi.ResultMatched, 1.0},
		{"full-width space", "佐藤　花子", bankapi.ResultMatched, 1.0},
		{"one substitution", "佐藤 花了", bankapi.ResultMatched, 0.8},
		{"one deletion", "佐藤 花", bankapi.ResultMatched, 0.8},
		{"two edits", "佐藤 太郎", bankapi.ResultMismatched, 0.0},
		{"existence only", "", bankapi.ResultMatched, 1.0},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := h.a.AccountVerify(h.ctx, bankapi.AccountVerifyRequest{RequestIDValue: fmt.Sprint("v", i), VerificationID: "V", TargetAccountHash: "h:b", TargetAccountName: c.given})
			if err != nil || r.Result != c.result || r.MatchScore != c.score {
				t.Fatalf("verify = %+v %v", r, err)
			}
			b, _ := json.Marshal(r)
			if c.given != "佐藤 花子" && contains(string(b), "佐藤 花子") {
				t.Fatalf("response leaks the stored name: %s", b)
			}
			if c.given == "" && r.NameProvided != nil {
				t.Fatalf("name_provided = %v, want null", *r.NameProvided)
			}
		})
	}
	r, err := h.a.AccountVerify(h.ctx, bankapi.AccountVerifyRequest{RequestIDValue: "vx", VerificationID: "V", TargetAccountHash: "h:none", TargetAccountName: "X"})
	if err != nil || r.Result != bankapi.ResultNotFound || r.MatchScore != 0 {
		t.Fatalf("unknown account: %+v %v", r, err)
	}
}

func contains(s, sub string) bool {
	return len(sub) > 0 && len(s) >= len(sub) && (func() bool {
		for i := 0; i+len(sub) <= len(s); i++ {
			if s[i:i+len(sub)] == sub {
				return true
			}
		}
		return false
	})()
}

func TestNotificationsArePulledExactlyOnceConcurrent(t *testing.T) {
	h := newHarness(t)
	cn := bankapi.CreditNotifyRequest{RequestIDValue: "cn1", TxID: "TX-1", PayeeAccountHash: "h:b", Amount: jpy(1200), PayerBankID: "002", Purpose: "P2P"}
	for _, id := range []string{"cn1", "cn1", "cn2"} { // replay, then a resend under a new request_id
		cn.RequestIDValue = id
		if r, err := h.a.CreditNotify(h.ctx, cn); err != nil || r.Result != bankapi.ResultNotified {
			t.Fatalf("credit-notify: %+v %v", r, err)
		}
	}
	rtp := bankapi.RTPNotifyRequest{RequestIDValue: "rn1", RTPID: "RTP-1", PayeeBankID: "002", PayerBankID: "001", Amount: jpy(2000),
		ExpiresAt: "2026-12-03T00:00:00Z", PayeeName: "田中商店"}
	if _, err := h.a.RTPNotify(h.ctx, rtp); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ns, err := h.a.PullNotifications(h.ctx, 10)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			for _, n := range ns {
				seen[n.Kind+":"+n.Ref]++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(seen) != 2 || seen["CREDIT:TX-1"] != 1 || seen["RTP:RTP-1"] != 1 {
		t.Fatalf("pulled %v, want each notification once", seen)
	}
	if ns, _ := h.a.PullNotifications(h.ctx, 10); len(ns) != 0 {
		t.Fatalf("second pull returned %d", len(ns))
	}
}

func TestAuthorityCheckScreensLocally(t *testing.T) {
	h := newHarness(t)
	h.account("h:a", "0000001", "A", 1000)
	h.account("h:s", "0000003", "S", 1000)
	h.a.AddScreeningEntry(h.ctx, ScreenAccount, "h:s", "OFAC list")
	h.a.AddScreeningEntry(h.ctx, ScreenVaultRef, "VR-bad", "PEP")
	h.a.ReserveFunds(h.ctx, bankapi.ReserveFundsRequest{RequestIDValue: "q1", TxID: "TX-S", Amount: jpy(10), AccountHash: "h:s"})
	h.a.ReserveFunds(h.ctx, bankapi.ReserveFundsRequest{RequestIDValue: "q2", TxID: "TX-A", Amount: jpy(10), AccountHash: "h:a"})
	cases := []struct {
		tx, vault, result, reason string
	}{
		{"TX-A", "", bankapi.ResultOK, ""},
		{"TX-S", "", bankapi.ResultNG, bankapi.ReasonSanctionsMatch},
		{"TX-A", "VR-bad", bankapi.ResultNG, bankapi.ReasonSanctionsMatch},
		{"TX-unknown", "", bankapi.ResultOK, ""},
	}
	for i, c := range cases {
		r, err := h.a.AuthorityCheck(h.ctx, bankapi.AuthorityCheckRequest{RequestIDValue: fmt.Sprint("ac", i), TxID: c.tx, CheckType: bankapi.CheckInitial, VaultRef: c.vault})
		if err != nil || r.Result != c.result || r.ReasonCode != c.reason {
			t.Errorf("%s/%s: %+v %v", c.tx, c.vault, r, err)
		}
	}
}

func TestLegReadyCheckDelegates(t *testing.T) {
	h := newHarness(t)
	h.account("h:a", "0000001", "A", 3000)
	leg := func(id, role, acct string, v int64) bankapi.CheckResponse {
		r, err := h.a.LegReadyCheck(h.ctx, bankapi.LegReadyCheckRequest{RequestIDValue: id, GTID: "GT-1", LegID: id, Role: role, Amount: jpy(v), AccountHash: acct})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := leg("L1", bankapi.RolePayer, "h:a", 3000); r.Result != bankapi.ResultOK {
		t.Fatalf("payer leg: %+v", r)
	}
	if s := h.shadow("h:a"); s.Holds != 3000 {
		t.Fatalf("payer leg must reserve: %+v", s)
	}
	if r := leg("L2", bankapi.RolePayer, "h:a", 1); r.Result != bankapi.ResultNG || r.ReasonCode != bankapi.ReasonInsufficientFunds {
		t.Fatalf("payer leg over: %+v", r)
	}
	if r := leg("L3", bankapi.RolePayee, "h:a", 1); r.Result != bankapi.ResultOK {
		t.Fatalf("payee leg: %+v", r)
	}
	if r := leg("L4", bankapi.RolePayee, "h:none", 1); r.Result != bankapi.ResultNG || r.ReasonCode != bankapi.ReasonAccountNotFound {
		t.Fatalf("payee leg unknown: %+v", r)
	}
}

func TestInitializeAndCleanupBank(t *testing.T) {
	h := newHarness(t)
	if r, err := h.a.InitializeBank(h.ctx, bankapi.InitializeBankRequest{RequestIDValue: "i1"}); err != nil || r.Result != bankapi.ResultAlreadyInitialized || r.BankID != "001" {
		t.Fatalf("initialize again: %+v %v", r, err)
	}
	h.account("h:a", "0000001", "A", 100)
	h.core.set(func(c *fakeCore) { c.offline = true })
	h.a.ExecuteCredit(h.ctx, credit("c1", "TX-1", "h:a", 5))
	if _, err := h.a.CleanupBank(h.ctx, bankapi.CleanupBankRequest{}); domainerr.Code(err) != "STATE_GUARD" {
		t.Fatalf("cleanup with a pending posting: %v", err)
	}
	h.core.set(func(c *fakeCore) { c.offline = false })
	h.drain()
	if r, err := h.a.CleanupBank(h.ctx, bankapi.CleanupBankRequest{}); err != nil || r.Result != bankapi.ResultCleanedUp {
		t.Fatalf("cleanup: %+v %v", r, err)
	}
	if _, err := h.a.Shadow(h.ctx, "h:a"); domainerr.Code(err) != "ACCOUNT_NOT_FOUND" {
		t.Fatalf("account survived cleanup: %v", err)
	}
	if _, err := h.a.ExecuteCredit(h.ctx, credit("c2", "TX-2", "h:a", 5)); domainerr.Code(err) != "STATE_GUARD" {
		t.Fatalf("command after cleanup: %v", err)
	}
	if r, err := h.a.InitializeBank(h.ctx, bankapi.InitializeBankRequest{}); err != nil || r.Result != bankapi.ResultInitialized {
		t.Fatalf("re-initialize: %+v %v", r, err)
	}
}

func TestReconciliationDetectsDriftOnceWithACase(t *testing.T) {
	h := newHarness(t)
	h.account("h:a", "0000001", "A", 1000)
	h.account("h:b", "0000002", "B", 2000)
	h.a.ExecuteCredit(h.ctx, credit("c1", "TX-1", "h:a", 300))
	// Pending (not yet drained) postings do not count as drift.
	rs, err := h.a.ReconcileAll(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Status != ReconMatched {
			t.Fatalf("clean flow with a pending posting: %+v", r)
		}
	}
	h.drain()
	h.core.set(func(c *fakeCore) { c.balance["0000002"] -= 77 }) // out-of-band change
	for i := 0; i < 2; i++ {
		rs, err = h.a.ReconcileAll(h.ctx)
		if err != nil {
			t.Fatal(err)
		}
	}
	if rs[0].Status != ReconMatched || rs[1].Status != ReconDrift || rs[1].Drift != -77 || rs[1].CaseID == "" {
		t.Fatalf("recon: %+v", rs)
	}
	ds, _ := h.a.Drifts(h.ctx, "OPEN")
	if len(ds) != 1 || ds[0].CaseID != rs[1].CaseID || ds[0].ShadowBalance != 2000 || ds[0].CoreBalance != 1923 {
		t.Fatalf("drift rows: %+v", ds)
	}
	if h.cases.count() != 1 || h.cases.reqs[0].DetectionPath != "ADAPTER_RECON" {
		t.Fatalf("cases: %+v", h.cases.reqs)
	}
	if err := h.a.ResolveDrift(h.ctx, ds[0].DriftID, "teller withdrawal confirmed", true); err != nil {
		t.Fatal(err)
	}
	rs, _ = h.a.ReconcileAll(h.ctx)
	if rs[1].Status != ReconMatched {
		t.Fatalf("after adopting the core balance: %+v", rs[1])
	}
	// Result-file path.
	rs, err = h.a.ReconcileResultFile(h.ctx, map[string]int64{"0000001": 1300, "0000002": 1924})
	if err != nil || rs[0].Status != ReconMatched || rs[1].Status != ReconDrift || rs[1].Drift != 1 {
		t.Fatalf("result file: %+v %v", rs, err)
	}
}

func TestCommandsNeedAnInitializedBank(t *testing.T) {
	ctx := context.Background()
	a, err := Open(ctx, Config{BankID: "009", DBPath: t.TempDir() + "/a.db"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, err = a.ReserveFunds(ctx, bankapi.ReserveFundsRequest{RequestIDValue: "r", TxID: "T", Amount: jpy(1), AccountHash: "h"})
	if domainerr.Code(err) != "STATE_GUARD" {
		t.Fatalf("err = %v", err)
	}
}

// The adapter's IdempotencyKeys is the coordinator's table, column for
// column, so coordinator/idem works on it unchanged.
func TestIdempotencyKeysMatchCoordinator(t *testing.T) {
	ctx := context.Background()
	coord, err := store.Open(ctx, t.TempDir()+"/zc.db", store.Schema)
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Close()
	h := newHarness(t)
	cols := func(db *store.DB) string {
		var out string
		err := db.Read(ctx, func(tx *store.Tx) error {
			q := `SELECT name, type, "notnull", COALESCE(dflt_value,''), pk FROM pragma_table_info('IdempotencyKeys') ORDER BY cid`
			if db.Postgres() { // both databases are on one backend: compare in its terms
				q = `SELECT c.column_name, c.data_type, CASE WHEN c.is_nullable = 'NO' THEN 1 ELSE 0 END, COALESCE(c.column_default, ''),
					CASE WHEN EXISTS (SELECT 1 FROM information_schema.key_column_usage k WHERE k.table_schema = c.table_schema
						AND k.table_name = c.table_name AND k.column_name = c.column_name) THEN 1 ELSE 0 END
					FROM information_schema.columns c WHERE c.table_schema = current_schema() AND c.table_name = 'idempotencykeys'
					AND c.column_name <> 'rowid' ORDER BY c.ordinal_position`
			}
			rows, err := tx.QueryContext(ctx, q)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var name, typ, dflt string
				var nn, pk int
				if err := rows.Scan(&name, &typ, &nn, &dflt, &pk); err != nil {
					return err
				}
				out += fmt.Sprintf("%s %s %d %s %d\n", name, typ, nn, dflt, pk)
			}
			return rows.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if a, c := cols(h.a.db), cols(coord); a != c || a == "" {
		t.Fatalf("IdempotencyKeys differs:\nadapter:\n%s\ncoordinator:\n%s", a, c)
	}
}

// The per-txid replay guard is per account: two payer accounts debited
// under one txid (a GTID with two payer legs at this bank) both post.
func TestSameTxIDOnTwoAccountsPostsBoth(t *testing.T) {
	h := newHarness(t)
	h.account("h:a", "0000001", "A", 1000)
	h.account("h:c", "0000003", "C", 1000)
	d := func(req, acct string) bankapi.ExecuteDebitRequest {
		return bankapi.ExecuteDebitRequest{RequestIDValue: req, TxID: "GT-1", Amount: jpy(300), DecisionProofRef: "DP", PayerAccountHash: acct}
	}
	r1, err1 := h.a.ExecuteDebit(h.ctx, d("d1", "h:a"))
	r2, err2 := h.a.ExecuteDebit(h.ctx, d("d2", "h:c"))
	r3, err3 := h.a.ExecuteDebit(h.ctx, d("d3", "h:a")) // a retry of the first leg
	if err1 != nil || err2 != nil || err3 != nil || r1.BankProofRef.ProofID == r2.BankProofRef.ProofID || r3.BankProofRef.ProofID != r1.BankProofRef.ProofID {
		t.Fatalf("%v %v %v / %s %s %s", err1, err2, err3, r1.BankProofRef.ProofID, r2.BankProofRef.ProofID, r3.BankProofRef.ProofID)
	}
	h.drain()
	if h.core.bal("0000001") != 700 || h.core.bal("0000003") != 700 {
		t.Fatalf("core %d %d", h.core.bal("0000001"), h.core.bal("0000003"))
	}
}

func TestReconcileAllStopsAskingAnOfflineCore(t *testing.T) {
	h := newHarness(t)
	h.account("h:a", "0000001", "A", 1)
	h.account("h:b", "0000002", "B", 2)
	h.core.set(func(c *fakeCore) { c.offline = true })
	rs, err := h.a.ReconcileAll(h.ctx)
	if err != nil || len(rs) != 2 || rs[0].Status != ReconUnavailable || rs[1].Status != ReconUnavailable || rs[1].Err == nil {
		t.Fatalf("%+v %v", rs, err)
	}
	if ds, _ := h.a.Drifts(h.ctx, ""); len(ds) != 0 || h.cases.count() != 0 {
		t.Fatalf("an unanswered inquiry must not be a drift: %+v", ds)
	}
}

func TestExecuteCreditToUnknownAccountGoesToCustody(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CustodyAccount = "h:suspense" })
	h.account("h:suspense", "0000099", "BETSUDAN YOKIN", 0)
	r, err := h.a.ExecuteCredit(h.ctx, credit("c1", "TX-1", "h:closed", 800))
	if err != nil || r.BankProofRef.CustodyDetail == nil || !r.BankProofRef.CustodyDetail.IsCustody ||
		r.BankProofRef.CustodyDetail.ReasonCode != "ACCOUNT_CLOSED" || r.BankProofRef.CustodyDetail.CustodyAccountRef == "" {
		t.Fatalf("credit to a closed account: %+v %v", r, err)
	}
	again, err := h.a.ExecuteCredit(h.ctx, credit("c2", "TX-1", "h:closed", 800))
	if err != nil || again.BankProofRef.ProofID != r.BankProofRef.ProofID {
		t.Fatalf("retry under a new request_id: %+v %v", again, err)
	}
	h.drain()
	if h.core.bal("0000099") != 800 {
		t.Fatalf("custody core balance %d", h.core.bal("0000099"))
	}
	b, _ := json.Marshal(r)
	if !contains(string(b), `"custody_detail":{"is_custody":true,"reason_code":"ACCOUNT_CLOSED"`) {
		t.Fatalf("wire shape: %s", b)
	}
}

// A posting in doubt (sent, no answer) makes the account UNSETTLED, never a
// drift, even though the core already has it.
func TestReconciliationSkipsAccountsWithPostingsInDoubt(t *testing.T) {
	h := newHarness(t)
	h.account("h:a", "0000001", "A", 1000)
	h.a.ExecuteCredit(h.ctx, credit("c1", "TX-1", "h:a", 50))
	h.core.set(func(c *fakeCore) { c.lostNext = 1 })
	if d := h.drain(); d.InDoubt != 1 {
		t.Fatalf("drain: %+v", d)
	}
	r, err := h.a.ReconcileAccount(h.ctx, "h:a")
	if err != nil || r.Status != ReconUnsettled || r.DriftID != "" {
		t.Fatalf("recon with a posting in doubt: %+v %v", r, err)
	}
	if _, err := h.a.Outbox().ResolveInDoubt(h.ctx); err != nil {
		t.Fatal(err)
	}
	if r, _ := h.a.ReconcileAccount(h.ctx, "h:a"); r.Status != ReconMatched || r.ShadowBalance != 1050 {
		t.Fatalf("after resolution: %+v", r)
	}
	if h.cases.count() != 0 {
		t.Fatal("a case was opened for an in-doubt posting")
	}
}

// If the Case cannot be opened, the drift row stays OPEN without case_id
// and the next reconciliation opens the Case for the same row.
func TestDriftCaseIsOpenedOnTheNextRunAfterAFailure(t *testing.T) {
	h := newHarness(t)
	h.account("h:a", "0000001", "A", 1000)
	h.core.set(func(c *fakeCore) { c.balance["0000001"] = 990 })
	h.cases.fail = errors.New("coordinator unreachable")
	if _, err := h.a.ReconcileAccount(h.ctx, "h:a"); err == nil {
		t.Fatal("a failed case opening must be reported")
	}
	ds, _ := h.a.Drifts(h.ctx, "OPEN")
	if len(ds) != 1 || ds[0].CaseID != "" {
		t.Fatalf("drift rows: %+v", ds)
	}
	h.cases.fail = nil
	r, err := h.a.ReconcileAccount(h.ctx, "h:a")
	if err != nil || r.DriftID != ds[0].DriftID || r.CaseID == "" {
		t.Fatalf("second run: %+v %v", r, err)
	}
	if ds, _ := h.a.Drifts(h.ctx, ""); len(ds) != 1 || ds[0].CaseID != r.CaseID {
		t.Fatalf("drift rows after: %+v", ds)
	}
}

func TestReserveFundsReplayHoldsOnce(t *testing.T) {
	h := newHarness(t)
	h.account("h:a", "0000001", "A", 1000)
	req := bankapi.ReserveFundsRequest{RequestIDValue: "q1", TxID: "TX-1", Amount: jpy(600), AccountHash: "h:a"}
	r1, err1 := h.a.ReserveFunds(h.ctx, req)
	r2, err2 := h.a.ReserveFunds(h.ctx, req)
	if err1 != nil || err2 != nil || r1 != r2 || r1.Result != bankapi.ResultReserved {
		t.Fatalf("%+v %v / %+v %v", r1, err1, r2, err2)
	}
	if s := h.shadow("h:a"); s.Holds != 600 || s.Available != 400 {
		t.Fatalf("replayed reserve held twice: %+v", s)
	}
}
