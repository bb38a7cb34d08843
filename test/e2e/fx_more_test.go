package e2e

import (
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/fx"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
	"github.com/zcgw/zcgw/jobs/dns"
)

// Payee-denominated (denomination TO): the payee receives exactly the
// dollars asked for; the payer's yen are priced backward and rounded up,
// so the FXP is paid at least its rate for the dollars it pays out and no
// currency gains or loses a unit. $1,000.01 at 150 yen/USD costs
// ceil(100001 x 1e8 / 66666667) = 150002 yen (150001.49... rounded up).
func TestFXPayeeDenominatedSettlesTheFixedAmount(t *testing.T) {
	w := newFXWorld(t)
	w.quote(time.Hour)
	before := w.balances()
	q, err := w.fx.Quote(w.ctx, fx.QuoteRequest{FromCurrency: "JPY", ToCurrency: "USD", Amount: 100_001, Denomination: fx.DenominationTo})
	if err != nil || q.AmountFrom != 150_002 || q.AmountTo != 100_001 || q.Denomination != fx.DenominationTo {
		t.Fatalf("quote: %+v %v", q, err)
	}
	if got, _ := fx.Convert(q.AmountFrom, rateJU); got < q.AmountTo {
		t.Fatalf("the FXP would pay %d for yen that buy %d", q.AmountTo, got)
	}
	req := w.request("FXG-TO", 100_001, true)
	req.Denomination = fx.DenominationTo
	res, err := w.fx.Create(w.ctx, req)
	if err != nil || res.AmountFrom != 150_002 || res.AmountTo != 100_001 || len(res.Legs) != 2 ||
		res.Legs[0].Amount != 150_002 || res.Legs[0].Currency != "JPY" || res.Legs[1].Amount != 100_001 || res.Legs[1].Currency != "USD" {
		t.Fatalf("create: %+v %v", res, err)
	}
	if w.hUsed(fxPayer, "JPY") != 150_002 || w.hUsed(fxFXP, "USD") != 100_001 {
		t.Errorf("H while locked: payer JPY %d (want 150002), FXP USD %d (want 100001)", w.hUsed(fxPayer, "JPY"), w.hUsed(fxFXP, "USD"))
	}
	// A payer who asks for a better rate than the backward price gives is
	// refused before anything is written.
	worse := w.request("FXG-TO2", 100_001, true)
	worse.Denomination, worse.MinEffectiveRate = fx.DenominationTo, rateJU
	if _, err := w.fx.Create(w.ctx, worse); err == nil {
		t.Fatal("min_effective_rate above the backward price was accepted")
	} else {
		wantCode(t, err, "FX_RATE_MISMATCH")
	}
	if _, err := w.fx.Claim(w.ctx, "FXG-TO", res.Secret); err != nil {
		t.Fatal(err)
	}
	w.run()
	if r := w.sweep(); r.Finalised != 1 {
		t.Fatalf("sweep %+v, want the conduit finalised", r)
	}
	tr := w.wantStatus("FXG-TO", fx.TransferSettled, lane.GtSettled)
	if tr.Route.Denomination != fx.DenominationTo || tr.AmountTo != 100_001 || tr.AmountFrom != 150_002 {
		t.Errorf("stored transfer: %+v", tr)
	}
	w.checkMoves(before, map[string]int64{"h:payer-jpy": -150_002, "h:fxp-jpy": 150_002, "h:fxp-usd": -100_001, "h:payee-usd": 100_001})
	if w.hUsed(fxPayer, "JPY") != 0 || w.hUsed(fxFXP, "USD") != 0 {
		t.Errorf("H still in use after settlement")
	}
	w.wantChain("gtid", "FXG-TO", finality.GtidRegistered, finality.GtidPrechecked, finality.GtidDecided, finality.GtidSettled)
	w.wantChain("txid", fx.LegTxID("FXG-TO", 0), settledLeg...)
	w.wantChain("txid", fx.LegTxID("FXG-TO", 1), settledLeg...)
}

// releaseItem reads the RELEASE work item of txid.
func (w *fxWorld) releaseItem(txid string) (status string, attempts int, code string) {
	w.t.Helper()
	if err := w.zc.Read(w.ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(w.ctx, `SELECT status, attempts, COALESCE(last_error_code, '') FROM OrchestratorQueue WHERE item_id = ?`,
			orchestrator.KindRelease+":"+txid).Scan(&status, &attempts, &code)
	}); err != nil {
		w.t.Fatalf("RELEASE item of %s: %v", txid, err)
	}
	return
}

// A refund whose hold release cannot reach the paying banks: both legs'
// holds (the payer's yen, the FXP's dollars) stay at the banks while
// their adapters are unreachable, the RELEASE work items are retried by
// the orchestrator's queue with backoff (never dropped), and once the
// banks answer the holds are released, nothing posted, H free in both
// currencies.
func TestFXRefundReleaseIsRetriedUntilTheBankAnswers(t *testing.T) {
	w := newFXWorld(t)
	w.quote(time.Hour)
	before := w.balances()
	req := w.request("FXG-RELRETRY", 150_000, true)
	req.ExpiresAt = clock.Stamp(w.clk.Now().Add(5 * time.Minute))
	if _, err := w.fx.Create(w.ctx, req); err != nil {
		t.Fatal(err)
	}
	if w.shadowAvailable(fxPayer, "h:payer-jpy") != 850_000 || w.shadowAvailable(fxFXP, "h:fxp-usd") != 9_900_000 {
		t.Fatalf("holds not placed: payer %d FXP %d", w.shadowAvailable(fxPayer, "h:payer-jpy"), w.shadowAvailable(fxFXP, "h:fxp-usd"))
	}
	w.banks.SetDown(fxPayer, true, bankapi.ReleaseReserve)
	w.banks.SetDown(fxFXP, true, bankapi.ReleaseReserve)
	w.clk.Advance(5*time.Minute + time.Second)
	if r := w.sweep(); r.Refunded != 1 {
		t.Fatalf("sweep %+v, want one refund", r)
	}
	w.wantStatus("FXG-RELRETRY", fx.TransferRefunded, lane.GtCancelled)
	for round := 0; round < 3; round++ {
		w.run()
		w.clk.Advance(time.Minute)
	}
	for i := 0; i < 2; i++ {
		st, attempts, code := w.releaseItem(fx.LegTxID("FXG-RELRETRY", i))
		if st != orchestrator.StatusReady || attempts < 2 || code != "BANK_ERROR" {
			t.Errorf("leg %d RELEASE item %s attempts %d code %q, want READY, retried, BANK_ERROR", i, st, attempts, code)
		}
	}
	if w.shadowAvailable(fxPayer, "h:payer-jpy") != 850_000 || w.shadowAvailable(fxFXP, "h:fxp-usd") != 9_900_000 {
		t.Fatalf("a hold was released while its bank was unreachable")
	}
	if w.hUsed(fxPayer, "JPY") != 0 || w.hUsed(fxFXP, "USD") != 0 {
		t.Errorf("H still in use after the refund: JPY %d USD %d", w.hUsed(fxPayer, "JPY"), w.hUsed(fxFXP, "USD"))
	}
	w.banks.SetDown(fxPayer, false)
	w.banks.SetDown(fxFXP, false)
	for round := 0; round < 12; round++ { // past the longest backoff
		w.clk.Advance(5 * time.Minute)
		w.run()
	}
	for i := 0; i < 2; i++ {
		if st, _, _ := w.releaseItem(fx.LegTxID("FXG-RELRETRY", i)); st != orchestrator.StatusDone {
			t.Errorf("leg %d RELEASE item %s, want DONE", i, st)
		}
	}
	if got := w.shadowAvailable(fxPayer, "h:payer-jpy"); got != 1_000_000 {
		t.Errorf("payer available %d after the retried release, want 1000000", got)
	}
	if got := w.shadowAvailable(fxFXP, "h:fxp-usd"); got != 10_000_000 {
		t.Errorf("FXP dollars available %d after the retried release, want 10000000", got)
	}
	w.checkMoves(before, nil)
	w.wantChain("gtid", "FXG-RELRETRY", finality.GtidRegistered, finality.GtidDecidedCancel, finality.GtidCancelled)
}

// position reads a bank's SettlementPositions balance at venue in currency.
func (w *fxWorld) position(bankID, venue, currency string) (bal int64, found bool) {
	w.t.Helper()
	if err := w.zc.Read(w.ctx, func(tx *store.Tx) error {
		err := tx.QueryRowContext(w.ctx, `SELECT balance FROM SettlementPositions WHERE bank_id = ? AND venue = ? AND currency = ?`,
			bankID, venue, currency).Scan(&bal)
		if err == sql.ErrNoRows {
			return nil
		}
		found = err == nil
		return err
	}); err != nil {
		w.t.Fatal(err)
	}
	return bal, found
}

// The dollar leg settles at a non-JPY venue: a USD DNS cycle fixes its
// settlement chain and nets the dollar positions the FX legs left at ZC
// onto the banks' tokenised central-bank dollar accounts
// ({bank}-CBT-USD-ETH, venue CB_TOKEN), never on the yen BOJ accounts. The
// FXP's empty token account holds the cycle (HOLD_ACTIVE) until it is
// funded; then the cycle settles, every dollar ZC position is zero, the
// dollars are conserved across the token accounts, and the cycle's chain
// and its settlement GTID record the venue.
func TestFXDollarLegSettlesOnTheTokenisedCentralBankVenue(t *testing.T) {
	w := newFXWorld(t)
	w.quote(time.Hour)
	res, err := w.fx.Create(w.ctx, w.request("FXG-CBT", 150_000, true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.fx.Claim(w.ctx, "FXG-CBT", res.Secret); err != nil {
		t.Fatal(err)
	}
	w.run()
	if r := w.sweep(); r.Finalised != 1 {
		t.Fatalf("sweep %+v", r)
	}
	if p, _ := w.position(fxFXP, dns.VenueZC, "USD"); p != -100_000 {
		t.Fatalf("FXP dollar ZC position %d, want -100000", p)
	}
	if p, _ := w.position(fxPayee, dns.VenueZC, "USD"); p != 100_000 {
		t.Fatalf("payee bank dollar ZC position %d, want 100000", p)
	}
	if err := dns.EnsureSchema(w.ctx, w.zc); err != nil {
		t.Fatal(err)
	}
	svc := dns.New(w.zc, finality.New(w.clk), sysmode.Gate{}, w.clk, nil)
	day := clock.BusinessDate(w.clk.Now())
	c, err := svc.OpenCycle(w.ctx, day, "USD")
	if err != nil || c.SettlementChain != dns.DefaultSettlementChain || c.Venue() != "CBT-ETH" {
		t.Fatalf("USD cycle %+v %v, want settlement chain ETH", c, err)
	}
	k, err := svc.Kick(w.ctx, c.CycleID)
	if err != nil || !k.Applied || k.TxCount != 1 {
		t.Fatalf("kick %+v %v, want the dollar leg", k, err)
	}
	s, err := svc.Settle(w.ctx, c.CycleID)
	if err != nil || !s.Held || len(s.Shortfalls) != 1 || s.Shortfalls[0].BankID != fxFXP || s.Shortfalls[0].Required != 100_000 {
		t.Fatalf("settle with an empty FXP token account: %+v %v", s, err)
	}
	if _, found := w.position(fxFXP, dns.VenueBOJ, "USD"); found {
		t.Fatal("a dollar account was opened at BOJ")
	}
	if _, err := svc.FundAndResume(w.ctx, c.CycleID, fxFXP, 100_000); err != nil {
		t.Fatal(err)
	}
	got, err := svc.Get(w.ctx, c.CycleID)
	if err != nil || got.State != dns.StateSettled {
		t.Fatalf("cycle after funding: %+v %v", got, err)
	}
	for _, b := range []struct {
		bank      string
		cbt, zcUS int64
	}{{fxFXP, 0, 0}, {fxPayee, 100_000, 0}} {
		if p, _ := w.position(b.bank, "CBT-ETH", "USD"); p != b.cbt {
			t.Errorf("%s CBT-ETH dollars %d, want %d", b.bank, p, b.cbt)
		}
		if p, _ := w.position(b.bank, dns.VenueZC, "USD"); p != b.zcUS {
			t.Errorf("%s dollar ZC position %d after the cycle, want 0", b.bank, p)
		}
		if _, found := w.position(b.bank, dns.VenueBOJ, "USD"); found {
			t.Errorf("%s has a dollar BOJ account", b.bank)
		}
	}
	// The yen leg is the yen cycle's: its ZC positions are untouched.
	if p, _ := w.position(fxPayer, dns.VenueZC, "JPY"); p != -150_000 {
		t.Errorf("payer yen ZC position %d, want -150000 (the USD cycle must not touch yen)", p)
	}
	var payload string
	if err := w.zc.Read(w.ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(w.ctx, `SELECT payload_json FROM FinalityLog WHERE gtid = ? AND event_type = ?`,
			c.CycleID, string(finality.DnsSettled)).Scan(&payload)
	}); err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Venue           string `json:"venue"`
		ProofVenue      string `json:"proof_venue"`
		SettlementChain string `json:"settlement_chain"`
		Currency        string `json:"currency"`
	}
	if err := json.Unmarshal([]byte(payload), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Venue != "CBT-ETH" || ev.ProofVenue != dns.ProofVenueCBToken || ev.SettlementChain != "ETH" || ev.Currency != "USD" {
		t.Errorf("DnsSettled payload %s", payload)
	}
	w.wantChain("gtid", c.CycleID, finality.DnsKicked, finality.DnsHoldActivated, finality.DnsResumed, finality.DnsSettled)
	legs := map[string]string{}
	if err := w.zc.Read(w.ctx, func(tx *store.Tx) error {
		ls, err := lane.LegsInTx(w.ctx, tx, dns.SettlementGTID(c.CycleID))
		for _, l := range ls {
			legs[l.BankID] = l.AccountHash + " " + l.Currency + " " + string(l.State)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if legs[fxFXP] != "0009-CBT-USD-ETH USD LEG_SETTLED" || legs[fxPayee] != "0002-CBT-USD-ETH USD LEG_SETTLED" {
		t.Errorf("settlement GTID legs %v", legs)
	}
}
