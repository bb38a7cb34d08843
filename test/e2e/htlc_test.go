package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
)

// The HTLC lane end to end (spec 001 ch. 15, 000 §5.2 handoff #4): each
// exit through the real adapters and simulated cores, asserting the
// FinalityLog chain, the cores' balances, H and the payer bank's hold.

// secret returns a 32-byte preimage (hex) and its SHA-256 hashlock.
func secret(i int) (preimage, hashlock string) {
	b := sha256.Sum256([]byte(fmt.Sprintf("htlc-secret-%d", i)))
	preimage = hex.EncodeToString(b[:])
	h := sha256.Sum256(b[:])
	return preimage, hex.EncodeToString(h[:])
}

// syncBuffer collects log lines written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// stubConditions is the test ConditionChecker: it answers met as set.
type stubConditions struct {
	mu    sync.Mutex
	met   bool
	calls int
}

func (c *stubConditions) CheckHTLC(_ context.Context, in orchestrator.ConditionInput) (orchestrator.ConditionOutcome, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	return orchestrator.ConditionOutcome{Met: c.met, Detail: map[string]any{"expr": string(in.Expr), "satisfied": c.met}}, nil
}

type htlcStack struct {
	*stack
	logs *syncBuffer
}

func newHTLCStack(t *testing.T, cond orchestrator.ConditionChecker) *htlcStack {
	logs := &syncBuffer{}
	s := newStack(t, stackOptions{cfg: func(c *orchestrator.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
		c.Conditions = cond
	}}, "001", "002")
	s.bank["001"].account("h:a", "SATO HANAKO", 100_000)
	s.bank["002"].account("h:b", "YAMADA TARO", 5_000)
	return &htlcStack{stack: s, logs: logs}
}

func (s *htlcStack) create(key, hashlock string, amount int64, timelock time.Time, mod func(*orchestrator.HtlcCreate)) orchestrator.HtlcView {
	s.t.Helper()
	req := orchestrator.HtlcCreate{Amount: bankapi.Amount{Value: amount, Currency: "JPY"},
		Payer: orchestrator.Party{BankID: "001", AccountHash: "h:a"}, Payee: orchestrator.Party{BankID: "002", AccountHash: "h:b"},
		HashAlg: orchestrator.HashAlgSHA256, Hashlock: hashlock, Timelock: timelock.UTC().Format(time.RFC3339Nano)}
	if mod != nil {
		mod(&req)
	}
	v, err := s.o.CreateHTLC(s.ctx, req, key, "001")
	if err != nil {
		s.t.Fatalf("create %s: %v", key, err)
	}
	return v
}

func (s *htlcStack) claim(id, preimage string) (orchestrator.HtlcView, error) {
	return s.o.ClaimHTLC(s.ctx, id, orchestrator.HtlcClaim{Preimage: preimage, PresenterOrgID: "002", PresenterSystemID: "payee-gw",
		PresentedAt: s.clk.Now().Format(time.RFC3339)}, "002")
}

// chain is the FinalityLog of txid as "Event:FROM>TO" in order.
func (s *htlcStack) chain(txid string) []string {
	s.t.Helper()
	var out []string
	err := s.zc.Read(s.ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(s.ctx, `SELECT event_type, COALESCE(state_from, ''), state_to FROM FinalityLog WHERE txid = ? ORDER BY event_seq`, txid)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e, f, to string
			if err := rows.Scan(&e, &f, &to); err != nil {
				return err
			}
			out = append(out, e+":"+f+">"+to)
		}
		return rows.Err()
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

func (s *htlcStack) wantChain(txid string, want ...string) {
	s.t.Helper()
	got := s.chain(txid)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		s.t.Fatalf("chain of %s:\n got  %v\n want %v", txid, got, want)
	}
}

// hUsed is the payer's h_used; open counts its unreleased reservations of txid.
func (s *htlcStack) hUsed() int64 {
	return int64(s.count(`SELECT h_used FROM Participants WHERE bank_id = '001'`))
}

func (s *htlcStack) openH(txid string) int {
	return s.count(`SELECT COUNT(*) FROM HReservations WHERE txid = ? AND is_released = 0`, txid)
}

// hold is the status of the payer bank adapter's hold for txid ("" none).
func (s *htlcStack) hold(txid string) string {
	s.t.Helper()
	var st string
	err := s.bank["001"].a.DB().Read(s.ctx, func(tx *store.Tx) error {
		err := tx.QueryRowContext(s.ctx, `SELECT status FROM AdapterHolds WHERE txid = ?`, txid).Scan(&st)
		if err != nil && strings.Contains(err.Error(), "no rows") {
			return nil
		}
		return err
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return st
}

// wantNowhere asserts that no row of the coordinator or any bank database
// and no log line holds needle (the preimage: 001 §15.4).
func (s *htlcStack) wantNowhere(needle string) {
	s.t.Helper()
	dbs := map[string]*store.DB{"zc": s.zc}
	for id, b := range s.bank {
		dbs["adapter-"+id] = b.a.DB()
	}
	for name, db := range dbs {
		err := db.Read(s.ctx, func(tx *store.Tx) error {
			rows, err := tx.QueryContext(s.ctx, `SELECT name FROM sqlite_master WHERE type = 'table'`)
			if err != nil {
				return err
			}
			var tables []string
			for rows.Next() {
				var n string
				if err := rows.Scan(&n); err != nil {
					rows.Close()
					return err
				}
				tables = append(tables, n)
			}
			rows.Close()
			scanned := 0
			for _, tb := range tables {
				rs, err := tx.QueryContext(s.ctx, `SELECT * FROM "`+tb+`"`)
				if err != nil {
					return err
				}
				cols, _ := rs.Columns()
				for rs.Next() {
					vals := make([]any, len(cols))
					ptrs := make([]any, len(cols))
					for i := range vals {
						ptrs[i] = &vals[i]
					}
					if err := rs.Scan(ptrs...); err != nil {
						rs.Close()
						return err
					}
					scanned++
					for i, v := range vals {
						if strings.Contains(strings.ToLower(fmt.Sprint(asText(v))), needle) {
							s.t.Errorf("%s.%s.%s holds the preimage", name, tb, cols[i])
						}
					}
				}
				rs.Close()
			}
			if scanned == 0 {
				s.t.Errorf("%s: no rows scanned", name)
			}
			return nil
		})
		if err != nil {
			s.t.Fatal(err)
		}
	}
	if strings.Contains(strings.ToLower(s.logs.String()), needle) {
		s.t.Errorf("a log line holds the preimage")
	}
	if s.logs.String() == "" {
		s.t.Errorf("no log lines captured")
	}
}

func asText(v any) any {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return v
}

var (
	evInit     = string(finality.PaymentInitiated) + ":>RECEIVED"
	evLocked   = string(finality.HtlcLocked) + ":RECEIVED>HTLC_LOCKED"
	evFulfill  = string(finality.HtlcFulfillRequested) + ":HTLC_LOCKED>HTLC_FULFILL_REQUESTED"
	evDecided  = string(finality.DecidedToSettle) + ":HTLC_FULFILL_REQUESTED>DECIDED_TO_SETTLE"
	evPayer    = string(finality.PayerExecConfirmed) + ":DECIDED_TO_SETTLE>PAYER_EXEC_CONFIRMED"
	evPayee    = string(finality.PayeeExecConfirmed) + ":PAYER_EXEC_CONFIRMED>PAYEE_EXEC_CONFIRMED"
	evSettled  = string(finality.Settled) + ":PAYEE_EXEC_CONFIRMED>SETTLED"
	evCancel   = string(finality.DecidedCancel) + ":HTLC_LOCKED>DECIDED_CANCEL"
	evCanceled = string(finality.Cancelled) + ":DECIDED_CANCEL>CANCELLED"
	evRejected = string(finality.HtlcClaimRejected) + ":HTLC_LOCKED>HTLC_LOCKED"
)

func wantCode(t *testing.T, err error, code string) *domainerr.Error {
	t.Helper()
	de, ok := domainerr.As(err)
	if !ok || de.Code != code {
		t.Fatalf("error %v, want %s", err, code)
	}
	return de
}

// raceTheSweep runs act(0..n-1) in n goroutines (odd ones a little
// later) against the timeout sweep, which moves the clock from 1 ms before
// the timelock tl to tl and sweeps three times; then it sweeps once more
// and runs the workers. It returns each act's error.
func (s *htlcStack) raceTheSweep(n int, tl time.Time, act func(i int) error) []error {
	s.t.Helper()
	s.clk.Set(tl.Add(-time.Millisecond))
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 1 {
				time.Sleep(time.Duration(i) * time.Millisecond)
			}
			errs[i] = act(i)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(2 * time.Millisecond)
		s.clk.Set(tl)
		for k := 0; k < 3; k++ {
			if _, err := s.o.TimeoutSweep(s.ctx); err != nil {
				s.t.Error(err)
			}
		}
	}()
	wg.Wait()
	if _, err := s.o.TimeoutSweep(s.ctx); err != nil {
		s.t.Fatal(err)
	}
	s.run()
	return errs
}

// lockOne creates an HTLC and runs the lock; it asserts H and the hold.
func (s *htlcStack) lockOne(key string, i int, amount int64, timelock time.Time, mod func(*orchestrator.HtlcCreate)) (orchestrator.HtlcView, string) {
	s.t.Helper()
	pre, hl := secret(i)
	v := s.create(key, hl, amount, timelock, mod)
	s.run()
	s.wantState(v.TxID, "HTLC_LOCKED", "")
	if s.openH(v.TxID) != 1 {
		s.t.Fatalf("H reservations of %s: %d open", v.TxID, s.openH(v.TxID))
	}
	if st := s.hold(v.TxID); st != "HELD" {
		s.t.Fatalf("payer bank hold %q, want HELD", st)
	}
	return v, pre
}

// TestHTLCClaimSettlesOnceFullStack: create, lock (H and the payer
// bank's hold), claim with the preimage, settle through both cores; a
// second claim answers the same and moves nothing; the preimage is
// nowhere.
func TestHTLCClaimSettlesOnceFullStack(t *testing.T) {
	s := newHTLCStack(t, nil)
	before := s.snapshot()
	v, pre := s.lockOne("h1", 1, 12_345, start.Add(time.Hour), nil)
	if v.AuthorityRecheckRequired || v.State != "HTLC_RECEIVED" {
		t.Fatalf("create view %+v", v)
	}
	if s.hUsed() != 12_345 {
		t.Fatalf("h_used %d while locked", s.hUsed())
	}
	s.checkInvariants(before, s.snapshot()) // locked: nothing moved yet
	got, err := s.claim(v.HtlcID, pre)
	if err != nil || got.State != "HTLC_FULFILL_REQUESTED" || !got.SecretVerified || got.Replayed {
		t.Fatalf("claim %+v %v", got, err)
	}
	s.run()
	s.wantState(v.TxID, "SETTLED", "")
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -12_345}, move{"002", "h:b", 12_345})
	if s.hUsed() != 0 || s.openH(v.TxID) != 0 {
		t.Fatalf("H after settlement: used %d open %d", s.hUsed(), s.openH(v.TxID))
	}
	if st := s.hold(v.TxID); st != "CONSUMED" {
		t.Fatalf("hold %q after settlement", st)
	}
	full := []string{evInit, evLocked, evFulfill, evDecided, evPayer, evPayee, evSettled}
	s.wantChain(v.TxID, full...)
	// Double claim: the same answer, nothing written, nothing moved again.
	again, err := s.claim(v.HtlcID, pre)
	if err != nil || !again.Replayed || again.State != "HTLC_FULFILL_REQUESTED" {
		t.Fatalf("second claim %+v %v", again, err)
	}
	s.run()
	s.wantChain(v.TxID, full...)
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -12_345}, move{"002", "h:b", 12_345})
	if c := s.banks.Calls(); c[bankapi.ExecuteDebit] != 1 || c[bankapi.ExecuteCredit] != 1 || c[bankapi.ReserveFunds] != 1 {
		t.Fatalf("calls %v", c)
	}
	if n := s.count(`SELECT secret_verified FROM HtlcContracts WHERE htlc_id = ?`, v.HtlcID); n != 1 {
		t.Fatalf("secret_verified %d", n)
	}
	// The same create key and body: the stored answer, one row.
	pre1, hl := secret(1)
	_ = pre1
	rep, err := s.o.CreateHTLC(s.ctx, orchestrator.HtlcCreate{Amount: bankapi.Amount{Value: 12_345, Currency: "JPY"},
		Payer: orchestrator.Party{BankID: "001", AccountHash: "h:a"}, Payee: orchestrator.Party{BankID: "002", AccountHash: "h:b"},
		HashAlg: orchestrator.HashAlgSHA256, Hashlock: hl, Timelock: start.Add(time.Hour).UTC().Format(time.RFC3339Nano)}, "h1", "001")
	if err != nil || !rep.Replayed || rep.HtlcID != v.HtlcID {
		t.Fatalf("create replay %+v %v", rep, err)
	}
	if n := s.count(`SELECT COUNT(*) FROM HtlcContracts`); n != 1 {
		t.Fatalf("%d contracts", n)
	}
	s.wantNowhere(pre)
}

// TestHTLCWrongPreimageStaysClaimable: a wrong preimage is refused,
// recorded as HtlcClaimRejected (INVALID_PREIMAGE, no transition), and the
// right one still claims.
func TestHTLCWrongPreimageStaysClaimable(t *testing.T) {
	s := newHTLCStack(t, nil)
	before := s.snapshot()
	v, pre := s.lockOne("h2", 2, 3_000, start.Add(time.Hour), nil)
	wrong, _ := secret(99)
	_, err := s.claim(v.HtlcID, wrong)
	wantCode(t, err, "PREIMAGE_MISMATCH")
	s.wantState(v.TxID, "HTLC_LOCKED", "")
	s.wantChain(v.TxID, evInit, evLocked, evRejected)
	if n := s.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND json_extract(payload_json, '$.reason_code') = 'INVALID_PREIMAGE'`, v.TxID); n != 1 {
		t.Fatalf("INVALID_PREIMAGE entries %d", n)
	}
	if _, err := s.o.ClaimHTLC(s.ctx, v.HtlcID, orchestrator.HtlcClaim{Preimage: pre}, "001"); err == nil {
		t.Fatal("the payer bank claimed")
	} else {
		wantCode(t, err, "HTLC_NOT_FOUND")
	}
	if _, err := s.claim(v.HtlcID, pre); err != nil {
		t.Fatal(err)
	}
	s.run()
	s.wantState(v.TxID, "SETTLED", "")
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -3_000}, move{"002", "h:b", 3_000})
	s.wantNowhere(pre)
	s.wantNowhere(wrong)
}

// TestHTLCTimelockExpiryFullStack: the sweep leaves an HTLC alone until its
// timelock, then cancels it (TIMELOCK_EXPIRED): H released, the payer
// bank's hold released, no money moved; a claim afterwards is EXPIRED.
func TestHTLCTimelockExpiryFullStack(t *testing.T) {
	s := newHTLCStack(t, nil)
	before := s.snapshot()
	tl := start.Add(10 * time.Minute)
	v, pre := s.lockOne("h3", 3, 4_000, tl, nil)
	s.clk.Set(tl.Add(-time.Millisecond))
	if res, err := s.o.TimeoutSweep(s.ctx); err != nil || res.HtlcTimelockExpired != 0 {
		t.Fatalf("1 ms before the timelock: %+v %v", res, err)
	}
	s.clk.Set(tl)
	if res, err := s.o.TimeoutSweep(s.ctx); err != nil || res.HtlcTimelockExpired != 1 || res.HtlcLeaseReclaimed != 0 {
		t.Fatalf("at the timelock: %+v %v", res, err)
	}
	s.wantState(v.TxID, "DECIDED_CANCEL", "TIMELOCK_EXPIRED")
	if s.hUsed() != 0 || s.openH(v.TxID) != 0 {
		t.Fatalf("H after the cancel: used %d open %d", s.hUsed(), s.openH(v.TxID))
	}
	s.run()
	s.wantState(v.TxID, "CANCELLED", "TIMELOCK_EXPIRED")
	if st := s.hold(v.TxID); st != "RELEASED" {
		t.Fatalf("hold %q after the cancel", st)
	}
	s.wantChain(v.TxID, evInit, evLocked, evCancel, evCanceled)
	_, err := s.claim(v.HtlcID, pre)
	wantCode(t, err, "EXPIRED")
	s.checkInvariants(before, s.snapshot())
	if n := s.count(`SELECT COUNT(*) FROM HtlcContracts WHERE htlc_id = ? AND state = 'HTLC_CANCELLED'`, v.HtlcID); n != 1 {
		t.Fatal("contract not HTLC_CANCELLED")
	}
	// A claim arriving after the timelock but before the sweep cancels it itself.
	v2, pre2 := s.lockOne("h3b", 31, 1_000, s.clk.Now().Add(time.Minute), nil)
	s.clk.Advance(time.Minute)
	_, err = s.claim(v2.HtlcID, pre2)
	wantCode(t, err, "EXPIRED")
	s.run()
	s.wantState(v2.TxID, "CANCELLED", "TIMELOCK_EXPIRED")
	s.checkInvariants(before, s.snapshot())
}

// TestHTLCRecheckFailsClosed: an HTLC whose timelock runs past the JST
// business day is rechecked at claim. No answer: the claim is refused
// with HtlcClaimRejected (RECHECK_AUTHORITY_UNAVAILABLE) and the HTLC stays
// claimable; NG: the HTLC is cancelled (RECHECK_AUTHORITY_NG).
func TestHTLCRecheckFailsClosed(t *testing.T) {
	s := newHTLCStack(t, nil)
	before := s.snapshot()
	nextDay := start.Add(20 * time.Hour) // 06:00 JST the next day
	v, pre := s.lockOne("h4", 4, 2_000, nextDay, nil)
	if !v.AuthorityRecheckRequired {
		t.Fatal("recheck not required for a timelock past the business day")
	}
	s.banks.SetDown("001", true, bankapi.AuthorityCheck)
	_, err := s.claim(v.HtlcID, pre)
	de := wantCode(t, err, "BANK_ERROR")
	if de.Details["state_reason_code"] != "RECHECK_AUTHORITY_UNAVAILABLE" {
		t.Fatalf("details %v", de.Details)
	}
	s.wantState(v.TxID, "HTLC_LOCKED", "")
	s.wantChain(v.TxID, evInit, evLocked, evRejected)
	s.banks.SetDown("001", false)
	if _, err := s.claim(v.HtlcID, pre); err != nil {
		t.Fatal(err)
	}
	s.run()
	s.wantState(v.TxID, "SETTLED", "")
	moves := []move{{"001", "h:a", -2_000}, {"002", "h:b", 2_000}}
	s.checkInvariants(before, s.snapshot(), moves...)

	w, pre2 := s.lockOne("h5", 5, 1_500, nextDay, nil)
	if err := s.bank["001"].a.AddScreeningEntry(s.ctx, "TXID", w.TxID, "listed after the lock"); err != nil {
		t.Fatal(err)
	}
	_, err = s.claim(w.HtlcID, pre2)
	if de := wantCode(t, err, "AUTHORITY_CHECK_NG"); de.Details["state_reason_code"] != "RECHECK_AUTHORITY_NG" {
		t.Fatalf("details %v", de.Details)
	}
	s.wantState(w.TxID, "DECIDED_CANCEL", "RECHECK_AUTHORITY_NG")
	s.run()
	s.wantState(w.TxID, "CANCELLED", "RECHECK_AUTHORITY_NG")
	s.wantChain(w.TxID, evInit, evLocked, evCancel, evCanceled)
	if s.hUsed() != 0 || s.openH(w.TxID) != 0 || s.hold(w.TxID) != "RELEASED" {
		t.Fatalf("after NG: h_used %d open %d hold %s", s.hUsed(), s.openH(w.TxID), s.hold(w.TxID))
	}
	s.checkInvariants(before, s.snapshot(), moves...)
	if c := s.banks.Calls(); c[bankapi.AuthorityCheck] != 4 { // INITIAL x2, RECHECK x2 (the unanswered one never reached the bank)
		t.Fatalf("authority-check calls %v", c)
	}
}

// TestHTLCConditionsGateTheClaim: attached conditions are evaluated by
// the ConditionChecker at claim; not met refuses (HtlcConditionsEvaluated,
// met false) and leaves the HTLC claimable; met lets it settle.
func TestHTLCConditionsGateTheClaim(t *testing.T) {
	cond := &stubConditions{}
	s := newHTLCStack(t, cond)
	before := s.snapshot()
	expr := json.RawMessage(`{"op":"AND","operands":[{"template_id":"TPL-DELIVERY"},{"template_id":"TPL-INSPECTION"}]}`)
	v, pre := s.lockOne("h6", 6, 2_500, start.Add(time.Hour), func(r *orchestrator.HtlcCreate) { r.ConditionExpr = expr })
	if n := s.count(`SELECT COUNT(*) FROM HtlcContracts WHERE htlc_id = ? AND json_extract(condition_expr_json, '$.op') = 'AND'`, v.HtlcID); n != 1 {
		t.Fatal("condition expression not stored")
	}
	_, err := s.claim(v.HtlcID, pre)
	wantCode(t, err, "CONDITIONS_NOT_MET")
	s.wantState(v.TxID, "HTLC_LOCKED", "")
	evCond := string(finality.HtlcConditionsEvaluated) + ":HTLC_LOCKED>HTLC_LOCKED"
	s.wantChain(v.TxID, evInit, evLocked, evCond)
	cond.mu.Lock()
	cond.met = true
	cond.mu.Unlock()
	if _, err := s.claim(v.HtlcID, pre); err != nil {
		t.Fatal(err)
	}
	s.run()
	s.wantChain(v.TxID, evInit, evLocked, evCond, evCond, evFulfill, evDecided, evPayer, evPayee, evSettled)
	if n := s.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = 'HtlcConditionsEvaluated' AND json_extract(payload_json, '$.met') = 1`, v.TxID); n != 1 {
		t.Fatalf("met evaluations %d", n)
	}
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -2_500}, move{"002", "h:b", 2_500})
	// A malformed expression is refused at create.
	_, hl := secret(7)
	_, err = s.o.CreateHTLC(s.ctx, orchestrator.HtlcCreate{Amount: bankapi.Amount{Value: 1, Currency: "JPY"},
		Payer: orchestrator.Party{BankID: "001", AccountHash: "h:a"}, Payee: orchestrator.Party{BankID: "002", AccountHash: "h:b"},
		HashAlg: orchestrator.HashAlgSHA256, Hashlock: hl, Timelock: start.Add(time.Hour).Format(time.RFC3339),
		ConditionExpr: json.RawMessage(`{"op":"THRESHOLD","k":3,"operands":[{"template_id":"A"}]}`)}, "bad-expr", "001")
	wantCode(t, err, "CONDITION_EXPR_INVALID")
}

// TestHTLCConcurrentClaimsClaimOnce: 16 goroutines present the preimage
// at once; exactly one claim transitions, the others get the same answer
// as a replay; the money moves once.
func TestHTLCConcurrentClaimsClaimOnce(t *testing.T) {
	s := newHTLCStack(t, nil)
	before := s.snapshot()
	v, pre := s.lockOne("h8", 8, 7_000, start.Add(time.Hour), nil)
	const n = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	fresh, replays := 0, 0
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := s.claim(v.HtlcID, pre)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("claim: %v", err)
			case got.Replayed:
				replays++
			default:
				fresh++
			}
		}()
	}
	wg.Wait()
	if fresh != 1 || replays != n-1 {
		t.Fatalf("fresh %d replays %d", fresh, replays)
	}
	s.run()
	s.wantChain(v.TxID, evInit, evLocked, evFulfill, evDecided, evPayer, evPayee, evSettled)
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -7_000}, move{"002", "h:b", 7_000})
	if c := s.banks.Calls(); c[bankapi.ExecuteDebit] != 1 {
		t.Fatalf("calls %v", c)
	}
}

// TestHTLCClaimVersusExpiryRace: claims and the timeout sweep race at the
// timelock for 8 HTLCs. Each ends exactly one way — claimed and settled,
// or cancelled — the claim's answer agrees with it, and balances and H
// add up.
func TestHTLCClaimVersusExpiryRace(t *testing.T) {
	s := newHTLCStack(t, nil)
	before := s.snapshot()
	tl := start.Add(30 * time.Minute)
	const n = 8
	vs := make([]orchestrator.HtlcView, n)
	pres := make([]string, n)
	for i := range vs {
		vs[i], pres[i] = s.lockOne(fmt.Sprintf("race-%d", i), 100+i, int64(1_000+i), tl, nil)
	}
	errs := s.raceTheSweep(n, tl, func(i int) error {
		_, err := s.claim(vs[i].HtlcID, pres[i])
		return err
	})
	var moves []move
	settled := 0
	for i, v := range vs {
		view := s.view(v.TxID)
		chain := strings.Join(s.chain(v.TxID), " ")
		fulfil, cancel := strings.Count(chain, "HtlcFulfillRequested"), strings.Count(chain, "DecidedCancel")
		switch {
		case errs[i] == nil:
			if view.State != "SETTLED" || fulfil != 1 || cancel != 0 {
				t.Errorf("%d: claim succeeded but state %s chain %s", i, view.State, chain)
			}
			settled++
			moves = append(moves, move{"001", "h:a", -int64(1_000 + i)}, move{"002", "h:b", int64(1_000 + i)})
		case domainerr.Has(errs[i], "EXPIRED"):
			if view.State != "CANCELLED" || view.ReasonCode != "TIMELOCK_EXPIRED" || fulfil != 0 || cancel != 1 {
				t.Errorf("%d: claim EXPIRED but state %s/%s chain %s", i, view.State, view.ReasonCode, chain)
			}
			if s.hold(v.TxID) != "RELEASED" {
				t.Errorf("%d: hold %s", i, s.hold(v.TxID))
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
	t.Logf("%d of %d claimed before the sweep", settled, n)
}

// TestHTLCLockRefusals: the lock's own exits. The payer bank's AML check
// answers NG (AUTHORITY_CHECK_NG) or it cannot hold the funds
// (INSUFFICIENT_FUNDS): the HTLC is cancelled from RECEIVED with no H, no
// hold, nothing moved, and the payer's daily total given back.
func TestHTLCLockRefusals(t *testing.T) {
	s := newHTLCStack(t, nil)
	before := s.snapshot()
	if err := s.bank["001"].a.AddScreeningEntry(s.ctx, "TXID", "001-HTLC-LISTED", "test list"); err != nil {
		t.Fatal(err)
	}
	_, hl := secret(40)
	listed := s.create("h40", hl, 1_000, start.Add(time.Hour), func(r *orchestrator.HtlcCreate) { r.TxID = "001-HTLC-LISTED" })
	_, hl2 := secret(41)
	poor := s.create("h41", hl2, 900_000, start.Add(time.Hour), nil) // the payer holds 100,000
	s.run()
	evCancelRx := string(finality.DecidedCancel) + ":RECEIVED>DECIDED_CANCEL"
	for _, c := range []struct {
		v      orchestrator.HtlcView
		reason string
	}{{listed, "AUTHORITY_CHECK_NG"}, {poor, "INSUFFICIENT_FUNDS"}} {
		s.wantState(c.v.TxID, "CANCELLED", c.reason)
		s.wantChain(c.v.TxID, evInit, evCancelRx, evCanceled)
		if s.openH(c.v.TxID) != 0 || s.hold(c.v.TxID) == "HELD" {
			t.Fatalf("%s: H open %d, hold %q", c.reason, s.openH(c.v.TxID), s.hold(c.v.TxID))
		}
		if n := s.count(`SELECT COUNT(*) FROM HtlcContracts WHERE htlc_id = ? AND state = 'HTLC_CANCELLED'`, c.v.HtlcID); n != 1 {
			t.Fatalf("%s: contract not cancelled", c.reason)
		}
	}
	if s.hUsed() != 0 || s.count(`SELECT daily_amount_used FROM Participants WHERE bank_id = '001'`) != 0 {
		t.Fatalf("h_used %d, daily %d", s.hUsed(), s.count(`SELECT daily_amount_used FROM Participants WHERE bank_id = '001'`))
	}
	if c := s.banks.Calls(); c[bankapi.ReserveFunds] != 1 {
		t.Fatalf("reserve-funds calls %v (the listed HTLC must not reach it)", c)
	}
	s.checkInvariants(before, s.snapshot())
}

// TestCostPerSettledHTLC measures, and bounds, the coordinator's SQL
// statements and commits per HTLC from create to SETTLED (create, lock,
// claim, decision, a, b, notifications), beside EXPRESS in the same run
// (figures in docs/htlc.md).
func TestCostPerSettledHTLC(t *testing.T) {
	s := newHTLCStack(t, nil)
	s.bank["001"].account("h:rich", "SATO ICHIRO", 1_000_000_000)
	const n = 64
	z0 := s.zc.Stats()
	views := make([]orchestrator.HtlcView, n)
	pres := make([]string, n)
	for i := range views {
		var hl string
		pres[i], hl = secret(1000 + i)
		views[i] = s.create(fmt.Sprintf("cost-%d", i), hl, int64(100+i), start.Add(time.Hour), func(r *orchestrator.HtlcCreate) { r.Payer.AccountHash = "h:rich" })
	}
	if _, err := s.o.RunUntilIdle(s.ctx); err != nil {
		t.Fatal(err)
	}
	for i, v := range views {
		if _, err := s.claim(v.HtlcID, pres[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.o.RunUntilIdle(s.ctx); err != nil {
		t.Fatal(err)
	}
	z1 := s.zc.Stats()
	for _, v := range views {
		if q := s.view(v.TxID); q.State != "SETTLED" {
			t.Fatalf("%s: %s", v.TxID, q.State)
		}
	}
	stmts, commits := (z1.Statements-z0.Statements)/n, (z1.Commits-z0.Commits)/n
	ex, _ := cost(t, s.stack, orchestrator.LaneExpress, n)
	t.Logf("HTLC: %d statements, %d commits per settled HTLC; EXPRESS in the same run: %d statements, %d commits", stmts, commits, ex.Statements, ex.Commits)
	if commits > ex.Commits+3 { // + create's own, the lock's, the claim's
		t.Errorf("%d coordinator commits per settled HTLC, bound EXPRESS %d + 3", commits, ex.Commits)
	}
}
