package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/fx"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
	"github.com/zcgw/zcgw/formats/coreacct"
)

// The FX world: bank 0001 (JPY) pays, bank 0009 is the FX provider with a
// yen and a dollar account, bank 0002 keeps the payee's dollar account.
// 1 USD = 150 JPY: JPY->USD is 66666667 (x1e8, yen to cents).
const (
	fxPayer = "0001"
	fxFXP   = "0009"
	fxPayee = "0002"
	rateJU  = 66_666_667
)

type fxWorld struct {
	*stack
	fx   *fx.FX
	cur  map[string]map[string]string // bank -> account hash -> currency
	next map[string]int
}

func newFXWorld(t *testing.T) *fxWorld {
	t.Helper()
	s := newStack(t, stackOptions{currencies: map[string][]string{fxFXP: {"USD"}, fxPayee: {"USD"}}}, fxPayer, fxFXP, fxPayee)
	w := &fxWorld{stack: s, cur: map[string]map[string]string{}, next: map[string]int{}}
	lanes := lane.New(s.zc, finality.New(s.clk), sysmode.Gate{}, s.clk, nil)
	var err error
	if w.fx, err = fx.New(fx.Config{DB: s.zc, Lanes: lanes, Banks: s.banks, Legs: s.o, Clock: s.clk}); err != nil {
		t.Fatal(err)
	}
	if err := s.o.Participants().SetFxProvider(s.ctx, fxFXP, true); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{fxFXP, fxPayee} {
		if err := hlimit.SetCurrencyLimitDB(s.ctx, s.zc, b, "USD", 50_000_000); err != nil {
			t.Fatal(err)
		}
	}
	w.open(fxPayer, "h:payer-jpy", "FX PAYER", "JPY", 1_000_000)
	w.open(fxFXP, "h:fxp-jpy", "FXP YEN", "JPY", 0)
	w.open(fxFXP, "h:fxp-usd", "FXP DOLLAR", "USD", 10_000_000)
	w.open(fxPayee, "h:payee-usd", "FX PAYEE", "USD", 0)
	return w
}

// open opens an account in currency at the bank's core (its own account
// number: a foreign-currency deposit is an account of its own) and
// registers it with the adapter from the core: balance and currency are
// what the core reports over the core link (BALR).
func (w *fxWorld) open(bankID, hash, name, currency string, balance int64) {
	t := w.t
	t.Helper()
	b := w.bank[bankID]
	w.next[bankID]++
	core := coreacct.Format("200", 1, fmt.Sprintf("%07d", w.next[bankID]))
	if err := b.core.OpenAccountIn(w.ctx, core, name, currency, balance); err != nil {
		t.Fatal(err)
	}
	if err := b.a.OpenAccountFromCore(w.ctx, adapter.Account{Hash: hash, CoreAccount: core, HolderName: name}); err != nil {
		t.Fatal(err)
	}
	if s, err := b.a.Shadow(w.ctx, hash); err != nil || (s.Currency != currency && !(s.Currency == "" && currency == "JPY")) {
		t.Fatalf("account %s registered in %q from the core, opened in %s (%v)", hash, s.Currency, currency, err)
	}
	b.mu.Lock()
	b.acct[hash] = core
	b.mu.Unlock()
	if w.cur[bankID] == nil {
		w.cur[bankID] = map[string]string{}
	}
	w.cur[bankID][hash] = currency
}

func (w *fxWorld) quote(validFor time.Duration) fx.Quote {
	w.t.Helper()
	q, err := w.fx.PutRate(w.ctx, fx.RateRequest{FxpBankID: fxFXP, FromCurrency: "JPY", ToCurrency: "USD", Rate: rateJU,
		ValidTo: clock.Stamp(w.clk.Now().Add(validFor))})
	if err != nil {
		w.t.Fatal(err)
	}
	return q
}

func (w *fxWorld) request(gtid string, amount int64, bind bool) fx.TransferRequest {
	return fx.TransferRequest{GTID: gtid, IdempotencyKey: "k-" + gtid, FromCurrency: "JPY", ToCurrency: "USD", Amount: amount,
		Payer: fx.Party{BankID: fxPayer, AccountHash: "h:payer-jpy"}, Payee: fx.Party{BankID: fxPayee, AccountHash: "h:payee-usd"},
		FxpAccounts: map[string]string{fx.FxpAccountKey(fxFXP, "JPY"): "h:fxp-jpy", fx.FxpAccountKey(fxFXP, "USD"): "h:fxp-usd"},
		BindHTLC:    bind}
}

// balances reads every account's core balance: bank -> hash -> balance.
func (w *fxWorld) balances() map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for id, accts := range w.cur {
		out[id] = map[string]int64{}
		for h := range accts {
			out[id][h] = w.bank[id].coreBalance(h)
		}
	}
	return out
}

// checkMoves asserts every account moved by exactly want (others not at
// all) and that each currency is conserved across the system.
func (w *fxWorld) checkMoves(before map[string]map[string]int64, want map[string]int64) {
	w.t.Helper()
	after := w.balances()
	perCcy := map[string]int64{}
	for id, accts := range after {
		for h, bal := range accts {
			d := bal - before[id][h]
			if d != want[h] {
				w.t.Errorf("%s %s moved %d, want %d", id, h, d, want[h])
			}
			perCcy[w.cur[id][h]] += d
		}
	}
	for c, d := range perCcy {
		if d != 0 {
			w.t.Errorf("currency %s not conserved: customers moved %d in total", c, d)
		}
	}
}

// hUsed is bank's H in use in currency.
func (w *fxWorld) hUsed(bankID, currency string) int64 {
	w.t.Helper()
	var u hlimit.Usage
	if err := w.zc.Read(w.ctx, func(tx *store.Tx) (err error) {
		u, err = hlimit.UsageOf(w.ctx, tx, bankID, currency)
		return err
	}); err != nil {
		w.t.Fatal(err)
	}
	return u.Used
}

// chain lists the event types of a chain (txid or gtid), oldest first.
func (w *fxWorld) chain(col, id string) []string {
	w.t.Helper()
	var out []string
	if err := w.zc.Read(w.ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(w.ctx, `SELECT event_type FROM FinalityLog WHERE `+col+` = ? ORDER BY event_seq`, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e string
			if err := rows.Scan(&e); err != nil {
				return err
			}
			out = append(out, e)
		}
		return rows.Err()
	}); err != nil {
		w.t.Fatal(err)
	}
	return out
}

func (w *fxWorld) wantChain(col, id string, want ...finality.EventType) {
	w.t.Helper()
	got := w.chain(col, id)
	var filtered []string
	for _, e := range got {
		if e != string(finality.CorePostingApplied) { // the cores' posting reports arrive asynchronously
			filtered = append(filtered, e)
		}
	}
	if fmt.Sprint(filtered) != fmt.Sprint(want) {
		w.t.Errorf("%s %s chain %v, want %v", col, id, filtered, want)
	}
}

func (w *fxWorld) sweep() fx.SweepResult {
	w.t.Helper()
	r, err := w.fx.Sweep(w.ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

func (w *fxWorld) wantStatus(gtid string, st fx.TransferStatus, gs lane.GtidState) fx.Transfer {
	w.t.Helper()
	tr, err := w.fx.Get(w.ctx, gtid)
	if err != nil {
		w.t.Fatal(err)
	}
	if tr.Status != st || tr.GtidState != gs {
		w.t.Fatalf("%s: status %s gtid %s, want %s %s", gtid, tr.Status, tr.GtidState, st, gs)
	}
	return tr
}

var settledLeg = []finality.EventType{finality.DecidedToSettle, finality.PayerExecConfirmed, finality.PayeeExecConfirmed, finality.Settled}

// Claim: the locked conduit settles through the three banks' adapters and
// cores; yen and dollars are each conserved; H is held per currency while
// locked and released at settlement.
func TestFXClaimSettlesThroughTheCores(t *testing.T) {
	w := newFXWorld(t)
	w.quote(time.Hour)
	before := w.balances()
	res, err := w.fx.Create(w.ctx, w.request("FXG-CLAIM", 150_000, true))
	if err != nil {
		t.Fatal(err)
	}
	if res.Result != fx.ResultLocked || res.AmountTo != 100_000 || res.Secret == "" || len(res.Legs) != 2 {
		t.Fatalf("create: %+v", res)
	}
	// The same request again replays the first answer (never the secret)
	// and charges nothing twice; another body under the gtid conflicts.
	again, err := w.fx.Create(w.ctx, w.request("FXG-CLAIM", 150_000, true))
	if err != nil || again.Result != fx.ResultLocked || again.AmountTo != 100_000 || again.Secret != "" || again.Hashlock != res.Hashlock {
		t.Fatalf("replay: %+v %v", again, err)
	}
	if _, err := w.fx.Create(w.ctx, w.request("FXG-CLAIM", 160_000, true)); err == nil {
		t.Fatal("another body under the same gtid was accepted")
	} else {
		wantCode(t, err, "IDEMPOTENCY_KEY_CONFLICT")
	}
	if got := w.hUsed(fxPayer, "JPY"); got != 150_000 {
		t.Errorf("payer JPY H in use %d, want 150000", got)
	}
	if got := w.hUsed(fxFXP, "USD"); got != 100_000 {
		t.Errorf("FXP USD H in use %d, want 100000", got)
	}
	if _, err := w.fx.Claim(w.ctx, "FXG-CLAIM", "wrong"); err == nil {
		t.Fatal("a wrong secret was accepted")
	} else {
		wantCode(t, err, "PREIMAGE_MISMATCH")
	}
	c, err := w.fx.Claim(w.ctx, "FXG-CLAIM", res.Secret)
	if err != nil || c.Already || c.Status != fx.TransferSettling {
		t.Fatalf("claim: %+v %v", c, err)
	}
	if again, err := w.fx.Claim(w.ctx, "FXG-CLAIM", res.Secret); err != nil || !again.Already {
		t.Fatalf("second claim: %+v %v", again, err)
	}
	w.run()
	if r := w.sweep(); r.Finalised != 1 {
		t.Fatalf("sweep %+v, want the conduit finalised", r)
	}
	tr := w.wantStatus("FXG-CLAIM", fx.TransferSettled, lane.GtSettled)
	for _, l := range tr.LegLocks {
		if l.State != fx.LockClaimed {
			t.Errorf("leg lock %d %s, want CLAIMED", l.Index, l.State)
		}
	}
	w.checkMoves(before, map[string]int64{"h:payer-jpy": -150_000, "h:fxp-jpy": 150_000, "h:fxp-usd": -100_000, "h:payee-usd": 100_000})
	if w.hUsed(fxPayer, "JPY") != 0 || w.hUsed(fxFXP, "USD") != 0 {
		t.Errorf("H still in use after settlement: JPY %d USD %d", w.hUsed(fxPayer, "JPY"), w.hUsed(fxFXP, "USD"))
	}
	w.wantChain("gtid", "FXG-CLAIM", finality.GtidRegistered, finality.GtidPrechecked, finality.GtidDecided, finality.GtidSettled)
	w.wantChain("txid", fx.LegTxID("FXG-CLAIM", 0), settledLeg...)
	w.wantChain("txid", fx.LegTxID("FXG-CLAIM", 1), settledLeg...)
	if _, err := w.fx.Refund(w.ctx, "FXG-CLAIM"); err == nil {
		t.Fatal("a settled transfer was refunded")
	}
}

// Default path (no bind_htlc): decided at once, settles the same way.
func TestFXInitiatedSettlesAtOnce(t *testing.T) {
	w := newFXWorld(t)
	w.quote(time.Hour)
	before := w.balances()
	res, err := w.fx.Create(w.ctx, w.request("FXG-INIT", 30_000, false))
	if err != nil || res.Result != fx.ResultInitiated || res.AmountTo != 20_000 {
		t.Fatalf("create: %+v %v", res, err)
	}
	w.run()
	w.sweep()
	w.wantStatus("FXG-INIT", fx.TransferSettled, lane.GtSettled)
	w.checkMoves(before, map[string]int64{"h:payer-jpy": -30_000, "h:fxp-jpy": 30_000, "h:fxp-usd": -20_000, "h:payee-usd": 20_000})
	w.wantChain("gtid", "FXG-INIT", finality.GtidRegistered, finality.GtidPrechecked, finality.GtidDecided, finality.GtidSettled)
}

// Refund: nobody claims; at the timelock the sweep refunds, every hold
// and H is released, no core balance moves, and a late claim is told so.
func TestFXUnclaimedIsRefundedBySweep(t *testing.T) {
	w := newFXWorld(t)
	w.quote(time.Hour)
	before := w.balances()
	req := w.request("FXG-REFUND", 150_000, true)
	req.ExpiresAt = clock.Stamp(w.clk.Now().Add(5 * time.Minute))
	res, err := w.fx.Create(w.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.fx.Refund(w.ctx, "FXG-REFUND"); err == nil {
		t.Fatal("refund before the timelock was accepted")
	} else {
		wantCode(t, err, "STATE_GUARD")
	}
	if r := w.sweep(); r.Refunded != 0 {
		t.Fatalf("sweep refunded a claimable transfer: %+v", r)
	}
	if sh := w.shadowAvailable(fxPayer, "h:payer-jpy"); sh != 850_000 {
		t.Errorf("payer available while locked %d, want 850000 (held at the bank)", sh)
	}
	w.clk.Advance(5*time.Minute + time.Second)
	if _, err := w.fx.Claim(w.ctx, "FXG-REFUND", res.Secret); err == nil {
		t.Fatal("claim after the window was accepted")
	} else {
		wantCode(t, err, "FX_CLAIM_WINDOW_EXPIRED")
	}
	if r := w.sweep(); r.Refunded != 1 {
		t.Fatalf("sweep %+v, want one refund", r)
	}
	tr := w.wantStatus("FXG-REFUND", fx.TransferRefunded, lane.GtCancelled)
	for _, l := range tr.LegLocks {
		if l.State != fx.LockRefunded {
			t.Errorf("leg lock %d %s, want REFUNDED", l.Index, l.State)
		}
	}
	if _, err := w.fx.Claim(w.ctx, "FXG-REFUND", res.Secret); err == nil {
		t.Fatal("claim after the refund was accepted")
	} else {
		wantCode(t, err, "FX_ALREADY_REFUNDED")
	}
	w.run()
	w.checkMoves(before, nil)
	if sh := w.shadowAvailable(fxPayer, "h:payer-jpy"); sh != 1_000_000 {
		t.Errorf("payer available after refund %d, want 1000000 (hold released)", sh)
	}
	if w.hUsed(fxPayer, "JPY") != 0 || w.hUsed(fxFXP, "USD") != 0 {
		t.Errorf("H still in use after refund")
	}
	w.wantChain("gtid", "FXG-REFUND", finality.GtidRegistered, finality.GtidDecidedCancel, finality.GtidCancelled)
}

func (w *fxWorld) shadowAvailable(bankID, hash string) int64 {
	w.t.Helper()
	s, err := w.bank[bankID].a.Shadow(w.ctx, hash)
	if err != nil {
		w.t.Fatal(err)
	}
	return s.Available
}

// Quote expired before use: the FXP withdraws its quote after the lock;
// the claim is refused FX_QUOTE_EXPIRED and the transfer is refundable at
// once (the sweep refunds it before its timelock).
func TestFXQuoteExpiredBeforeClaim(t *testing.T) {
	w := newFXWorld(t)
	q := w.quote(time.Hour)
	before := w.balances()
	res, err := w.fx.Create(w.ctx, w.request("FXG-QEXP", 150_000, true))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.fx.WithdrawRate(w.ctx, q.QuoteID); err != nil {
		t.Fatal(err)
	}
	if _, err := w.fx.Claim(w.ctx, "FXG-QEXP", res.Secret); err == nil {
		t.Fatal("claim over a withdrawn quote was accepted")
	} else {
		wantCode(t, err, "FX_QUOTE_EXPIRED")
	}
	if r := w.sweep(); r.Refunded != 1 {
		t.Fatalf("sweep %+v, want the dead-quote transfer refunded", r)
	}
	w.wantStatus("FXG-QEXP", fx.TransferRefunded, lane.GtCancelled)
	w.run()
	w.checkMoves(before, nil)
	// And a new transfer finds no route at all.
	if _, err := w.fx.Create(w.ctx, w.request("FXG-QEXP2", 150_000, true)); err == nil {
		t.Fatal("transfer without a live quote was accepted")
	} else {
		wantCode(t, err, "FX_NO_ROUTE")
	}
}

// Leg lock failure: the FXP's dollar account cannot cover the payee's
// leg; its bank refuses the hold after the payer's yen hold was placed,
// and the whole transfer is refunded — the yen hold released at the
// payer's bank, H released, nothing posted.
func TestFXLegLockFailureRefundsEverything(t *testing.T) {
	w := newFXWorld(t)
	w.quote(time.Hour)
	w.open(fxFXP, "h:fxp-usd-poor", "FXP SMALL DOLLAR", "USD", 1_000)
	before := w.balances()
	req := w.request("FXG-LEGFAIL", 150_000, true)
	req.FxpAccounts[fx.FxpAccountKey(fxFXP, "USD")] = "h:fxp-usd-poor" // 10.00 USD cannot pay 1000.00
	_, err := w.fx.Create(w.ctx, req)
	if err == nil {
		t.Fatal("lock beyond the FXP's dollars was accepted")
	}
	wantCode(t, err, "RESERVE_FAILED")
	w.wantStatus("FXG-LEGFAIL", fx.TransferRefunded, lane.GtCancelled)
	w.run()
	w.checkMoves(before, nil)
	if sh := w.shadowAvailable(fxPayer, "h:payer-jpy"); sh != 1_000_000 {
		t.Errorf("payer available %d after the failed lock, want 1000000", sh)
	}
	if w.hUsed(fxPayer, "JPY") != 0 || w.hUsed(fxFXP, "USD") != 0 {
		t.Errorf("H in use after the failed lock: JPY %d USD %d", w.hUsed(fxPayer, "JPY"), w.hUsed(fxFXP, "USD"))
	}
	w.wantChain("gtid", "FXG-LEGFAIL", finality.GtidRegistered, finality.GtidDecidedCancel, finality.GtidCancelled)
}

// ParticipantCurrencyLimits governs the FXP's dollar H: a lock beyond it
// is refused H_LIMIT_EXCEEDED and writes nothing.
func TestFXDollarHLimitRefusesTheLock(t *testing.T) {
	w := newFXWorld(t)
	w.quote(time.Hour)
	if err := hlimit.SetCurrencyLimitDB(w.ctx, w.zc, fxFXP, "USD", 50_000); err != nil {
		t.Fatal(err)
	}
	_, err := w.fx.Create(w.ctx, w.request("FXG-HLIM", 150_000, true))
	wantCode(t, err, "H_LIMIT_EXCEEDED")
	if _, err := w.fx.Get(w.ctx, "FXG-HLIM"); err == nil {
		t.Fatal("a refused lock left its transfer behind")
	}
	if w.hUsed(fxPayer, "JPY") != 0 || w.hUsed(fxFXP, "USD") != 0 {
		t.Errorf("H in use after the refused lock")
	}
}

// Race: N claims race the quote's withdrawal and the sweep. Exactly one
// outcome — settled (every claim that won says so) or refunded (every
// claim refused) — and the balances are exact per currency.
func TestFXQuoteExpiryDuringClaimRace(t *testing.T) {
	outcomes := map[fx.TransferStatus]int{}
	for round := 0; round < 6; round++ {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			w := newFXWorld(t)
			q := w.quote(time.Hour)
			before := w.balances()
			gtid := fmt.Sprintf("FXG-RACE%d", round)
			res, err := w.fx.Create(w.ctx, w.request(gtid, 150_000, true))
			if err != nil {
				t.Fatal(err)
			}
			const n = 8
			var wg sync.WaitGroup
			claimed := make([]bool, n)
			errs := make([]error, n)
			start := make(chan struct{})
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					<-start
					c, err := w.fx.Claim(context.Background(), gtid, res.Secret)
					claimed[i], errs[i] = err == nil && !c.Already, err
				}(i)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				// Later rounds let the claims get further before the
				// quote dies, so both outcomes are exercised.
				time.Sleep(time.Duration(round) * 2 * time.Millisecond)
				if err := w.fx.WithdrawRate(context.Background(), q.QuoteID); err != nil {
					t.Error(err)
				}
				if _, err := w.fx.Sweep(context.Background()); err != nil {
					t.Error(err)
				}
			}()
			close(start)
			wg.Wait()
			winners := 0
			for i := range claimed {
				if claimed[i] {
					winners++
				} else if errs[i] != nil {
					if de, ok := domainerr.As(errs[i]); !ok || (de.Code != "FX_QUOTE_EXPIRED" && de.Code != "FX_ALREADY_REFUNDED") {
						t.Errorf("claim %d: %v", i, errs[i])
					}
				}
			}
			w.run()
			w.sweep()
			tr, err := w.fx.Get(w.ctx, gtid)
			if err != nil {
				t.Fatal(err)
			}
			outcomes[tr.Status]++
			switch winners {
			case 1:
				if tr.Status != fx.TransferSettled {
					t.Fatalf("a claim won but the transfer is %s", tr.Status)
				}
				w.checkMoves(before, map[string]int64{"h:payer-jpy": -150_000, "h:fxp-jpy": 150_000, "h:fxp-usd": -100_000, "h:payee-usd": 100_000})
			case 0:
				if tr.Status != fx.TransferRefunded {
					t.Fatalf("no claim won but the transfer is %s", tr.Status)
				}
				w.checkMoves(before, nil)
			default:
				t.Fatalf("%d claims won", winners)
			}
			if w.hUsed(fxPayer, "JPY") != 0 || w.hUsed(fxFXP, "USD") != 0 {
				t.Errorf("H in use after the race")
			}
		})
	}
	t.Logf("outcomes: %v", outcomes)
}

// A leg failing after the decision: the payee's bank cannot be reached for
// the dollar credit; the leg ends FAILED_EXECUTION with its Case after the
// SUSPENDED limit, and the FX sweep suspends the conduit GTID (the yen
// leg settled; the conduit never reports SETTLED).
func TestFXLegFailingAfterDecisionSuspendsTheGTID(t *testing.T) {
	w := newFXWorld(t)
	w.quote(48 * time.Hour)
	req := w.request("FXG-FAIL", 150_000, true)
	req.ExpiresAt = clock.Stamp(w.clk.Now().Add(47 * time.Hour))
	res, err := w.fx.Create(w.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	w.banks.SetDown(fxPayee, true, bankapi.ExecuteCredit)
	if _, err := w.fx.Claim(w.ctx, "FXG-FAIL", res.Secret); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ { // execute-credit retried with backoff until the bank counts as down
		w.run()
		w.clk.Advance(10 * time.Minute)
		if _, err := w.o.TimeoutSweep(w.ctx); err != nil {
			t.Fatal(err)
		}
	}
	w.clk.Advance(25 * time.Hour)
	if _, err := w.o.TimeoutSweep(w.ctx); err != nil {
		t.Fatal(err)
	}
	w.run()
	if v := w.view(fx.LegTxID("FXG-FAIL", 1)); v.State != "FAILED_EXECUTION" || v.Case.CaseID == "" {
		t.Fatalf("dollar leg %s case %q, want FAILED_EXECUTION with a Case", v.State, v.Case.CaseID)
	}
	if v := w.view(fx.LegTxID("FXG-FAIL", 0)); v.State != "SETTLED" {
		t.Fatalf("yen leg %s, want SETTLED", v.State)
	}
	if r := w.sweep(); r.Finalised != 0 {
		t.Fatalf("sweep finalised a conduit with a failed leg: %+v", r)
	}
	w.wantStatus("FXG-FAIL", fx.TransferSettling, lane.GtSuspended)
	w.wantChain("gtid", "FXG-FAIL", finality.GtidRegistered, finality.GtidPrechecked, finality.GtidDecided, finality.GtidSuspended)
}
