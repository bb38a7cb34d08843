package fx

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

var t0 = time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)

type env struct {
	ctx context.Context
	db  *store.DB
	clk *clock.Manual
	fx  *FX
}

// newEnv: FX providers 901 (JPY, USD, EUR) and 902 (EUR, USD), bank 001.
func newEnv(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	db, err := store.OpenCoordinator(ctx, filepath.Join(t.TempDir(), "zc.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clk := clock.NewManual(t0)
	reg := participants.New(db, clk)
	for _, id := range []string{"001", "901", "902"} {
		if _, err := reg.Create(ctx, participants.Participant{BankID: id, BankName: "Bank " + id, HLimit: 1_000_000_000, IsActive: true}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []struct {
		bank string
		ccys []string
	}{{"901", []string{"USD", "EUR"}}, {"902", []string{"USD", "EUR"}}} {
		if err := reg.SetFxProvider(ctx, p.bank, true); err != nil {
			t.Fatal(err)
		}
		for _, c := range p.ccys {
			if err := hlimit.SetCurrencyLimitDB(ctx, db, p.bank, c, 1_000_000_000); err != nil {
				t.Fatal(err)
			}
		}
	}
	f, err := New(Config{DB: db, Lanes: lane.New(db, finality.New(clk), sysmode.Gate{}, clk, nil), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return &env{ctx: ctx, db: db, clk: clk, fx: f}
}

func (e *env) put(t testing.TB, fxp, from, to string, rate int64, validFor time.Duration) Quote {
	t.Helper()
	q, err := e.fx.PutRate(e.ctx, RateRequest{FxpBankID: fxp, FromCurrency: from, ToCurrency: to, Rate: rate,
		ValidTo: clock.Stamp(e.clk.Now().Add(validFor))})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func code(err error) string {
	if de, ok := domainerr.As(err); ok {
		return de.Code
	}
	return fmt.Sprint(err)
}

func TestConvertRoundsDownExactly(t *testing.T) {
	for _, c := range []struct {
		amount, rate, want int64
		code               string
	}{
		{150_000, 66_666_667, 100_000, ""},                           // 100000.0005 cents -> 100000
		{150_000, 66_666_666, 99_999, ""},                            // 99999.999 -> 99999: the payee never gets a fraction
		{1, 150_000_000, 1, ""},                                      // 1 cent -> 1.5 yen -> 1
		{1_000_000_000_000, 15_000_000_000, 150_000_000_000_000, ""}, // big values, exact
		{9_000_000_000_000_000_000, 1_000_000_000, 0, "INVALID_AMOUNT"},
		{0, 1, 0, "INVALID_AMOUNT"},
		{1, 0, 0, "INVALID_AMOUNT"},
	} {
		got, err := Convert(c.amount, c.rate)
		if c.code != "" {
			if code(err) != c.code {
				t.Errorf("Convert(%d, %d) error %v, want %s", c.amount, c.rate, err, c.code)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Convert(%d, %d) = %d, %v, want %d", c.amount, c.rate, got, err, c.want)
		}
	}
	if r := EffectiveRate(150_000, 99_999); r != 66_666_000 {
		t.Errorf("EffectiveRate = %d, want 66666000", r)
	}
}

func ExampleConvert() {
	cents, _ := Convert(150_000, 66_666_667) // ¥150,000 at 1 USD = 150 JPY
	fmt.Println(cents)
	// Output: 100000
}

// The best route gives the payee most; a bridge through EUR wins when it
// beats every direct quote, and max_bridge_hops 0 forbids it; amount
// bounds exclude a quote.
func TestFindBestRoute(t *testing.T) {
	e := newEnv(t)
	e.put(t, "901", "JPY", "USD", 66_000_000, time.Hour)
	e.put(t, "902", "JPY", "USD", 66_500_000, time.Hour)
	r, err := e.fx.Quote(e.ctx, QuoteRequest{FromCurrency: "JPY", ToCurrency: "USD", Amount: 150_000})
	if err != nil || len(r.Hops) != 1 || r.Hops[0].FxpBankID != "902" || r.AmountTo != 99_750 {
		t.Fatalf("direct: %+v %v", r, err)
	}
	// JPY -> EUR at 0.0062 (cents per yen), EUR -> USD at 1.08: 150000 -> 93000 -> 100440.
	e.put(t, "901", "JPY", "EUR", 62_000_000, time.Hour)
	e.put(t, "902", "EUR", "USD", 108_000_000, time.Hour)
	r, err = e.fx.Quote(e.ctx, QuoteRequest{FromCurrency: "JPY", ToCurrency: "USD", Amount: 150_000})
	if err != nil || len(r.Hops) != 2 || r.Hops[0].ToCurrency != "EUR" || r.Hops[1].AmountFrom != 93_000 || r.AmountTo != 100_440 {
		t.Fatalf("bridge: %+v %v", r, err)
	}
	zero := 0
	if r, err = e.fx.Quote(e.ctx, QuoteRequest{FromCurrency: "JPY", ToCurrency: "USD", Amount: 150_000, MaxBridgeHops: &zero}); err != nil || len(r.Hops) != 1 {
		t.Fatalf("max_bridge_hops 0: %+v %v", r, err)
	}
	maxAmt := int64(100_000)
	if _, err := e.fx.PutRate(e.ctx, RateRequest{FxpBankID: "902", FromCurrency: "JPY", ToCurrency: "USD", Rate: 66_500_000,
		MaxAmount: &maxAmt, ValidTo: clock.Stamp(t0.Add(time.Hour))}); err != nil {
		t.Fatal(err)
	}
	if r, err = e.fx.Quote(e.ctx, QuoteRequest{FromCurrency: "JPY", ToCurrency: "USD", Amount: 150_000, MaxBridgeHops: &zero}); err != nil || r.Hops[0].FxpBankID != "901" {
		t.Fatalf("902 capped at 100000: %+v %v", r, err)
	}
	if _, err := e.fx.Quote(e.ctx, QuoteRequest{FromCurrency: "USD", ToCurrency: "GBP", Amount: 1}); code(err) != "FX_NO_ROUTE" {
		t.Fatalf("no route: %v", err)
	}
}

// A quote is usable until its valid_to (read-time expiry on the injected
// clock) and not after it is withdrawn.
func TestQuoteExpiryAndWithdrawal(t *testing.T) {
	e := newEnv(t)
	q := e.put(t, "901", "JPY", "USD", 66_000_000, 10*time.Minute)
	req := QuoteRequest{FromCurrency: "JPY", ToCurrency: "USD", Amount: 1000}
	if _, err := e.fx.Quote(e.ctx, req); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(10 * time.Minute)
	if _, err := e.fx.Quote(e.ctx, req); code(err) != "FX_NO_ROUTE" {
		t.Fatalf("at valid_to: %v, want FX_NO_ROUTE", err)
	}
	if l, _ := e.fx.Rates(e.ctx, "JPY", "USD"); len(l) != 0 {
		t.Fatalf("expired quote listed: %+v", l)
	}
	q2 := e.put(t, "901", "JPY", "USD", 66_000_000, 10*time.Minute) // renews the same quote
	if q2.QuoteID != q.QuoteID || q2.Version != 1 {
		t.Fatalf("renewal %+v, want %s version 1", q2, q.QuoteID)
	}
	if err := e.fx.WithdrawRate(e.ctx, q.QuoteID); err != nil {
		t.Fatal(err)
	}
	if err := e.fx.WithdrawRate(e.ctx, q.QuoteID); code(err) != "NOT_FOUND" {
		t.Fatalf("second withdrawal: %v", err)
	}
	if _, err := e.fx.Quote(e.ctx, req); code(err) != "FX_NO_ROUTE" {
		t.Fatalf("after withdrawal: %v", err)
	}
}

func TestPutRateRefusals(t *testing.T) {
	e := newEnv(t)
	later := clock.Stamp(t0.Add(time.Hour))
	for _, c := range []struct {
		name string
		req  RateRequest
		code string
	}{
		{"lower case", RateRequest{FxpBankID: "901", FromCurrency: "jpy", ToCurrency: "USD", Rate: 1, ValidTo: later}, "INVALID_FX_RATE"},
		{"same currency", RateRequest{FxpBankID: "901", FromCurrency: "USD", ToCurrency: "USD", Rate: 1, ValidTo: later}, "INVALID_FX_RATE"},
		{"zero rate", RateRequest{FxpBankID: "901", FromCurrency: "JPY", ToCurrency: "USD", Rate: 0, ValidTo: later}, "INVALID_FX_RATE"},
		{"past", RateRequest{FxpBankID: "901", FromCurrency: "JPY", ToCurrency: "USD", Rate: 1, ValidTo: clock.Stamp(t0)}, "INVALID_FX_RATE"},
		{"bad time", RateRequest{FxpBankID: "901", FromCurrency: "JPY", ToCurrency: "USD", Rate: 1, ValidTo: "tomorrow"}, "INVALID_FX_RATE"},
		{"not a provider", RateRequest{FxpBankID: "001", FromCurrency: "JPY", ToCurrency: "USD", Rate: 1, ValidTo: later}, "UNAUTHORIZED"},
		{"unknown bank", RateRequest{FxpBankID: "777", FromCurrency: "JPY", ToCurrency: "USD", Rate: 1, ValidTo: later}, "PARTICIPANT_NOT_FOUND"},
		{"no GBP limit", RateRequest{FxpBankID: "901", FromCurrency: "JPY", ToCurrency: "GBP", Rate: 1, ValidTo: later}, "INVALID_FX_RATE"},
	} {
		if _, err := e.fx.PutRate(e.ctx, c.req); code(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
}

// N providers' desks racing to publish the same pair leave exactly one
// ACTIVE quote, updated N-1 times (guarded upsert).
func TestPutRateRace(t *testing.T) {
	e := newEnv(t)
	const n = 12
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := e.fx.PutRate(e.ctx, RateRequest{FxpBankID: "901", FromCurrency: "JPY", ToCurrency: "USD", Rate: int64(66_000_000 + i),
				ValidTo: clock.Stamp(t0.Add(time.Hour))})
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var count int
	var version int64
	if err := e.db.Read(e.ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(e.ctx, `SELECT COUNT(*), MAX(version) FROM FxQuotes WHERE fxp_bank_id = '901' AND status = 'ACTIVE'`).Scan(&count, &version)
	}); err != nil {
		t.Fatal(err)
	}
	if count != 1 || version != n-1 {
		t.Fatalf("%d ACTIVE quotes, version %d; want 1 and %d", count, version, n-1)
	}
}

func TestTransitionTables(t *testing.T) {
	if !CanLock(LockLocked, LockClaimed) || !CanLock(LockLocked, LockRefunded) || CanLock(LockClaimed, LockRefunded) || CanLock(LockRefunded, LockClaimed) {
		t.Error("leg locks: LOCKED -> CLAIMED | REFUNDED only")
	}
	if !CanTransfer(TransferLocked, TransferSettling) || CanTransfer(TransferRefunded, TransferSettled) || CanTransfer(TransferSettling, TransferRefunded) {
		t.Error("transfers: a claimed transfer is never refunded, a refunded one never settles")
	}
}

// Staggered timelocks: the payee's leg ends at the expiry, each leg
// upstream one HopMargin later; the claim deadline is one margin before
// the upstream-most.
func TestTimelocksAreStaggered(t *testing.T) {
	legs := make([]Leg, 3)
	setTimelocks(legs, t0)
	for i, want := range []time.Duration{2 * HopMargin, HopMargin, 0} {
		if legs[i].Timelock != clock.Stamp(t0.Add(want)) {
			t.Errorf("leg %d timelock %s, want %s", i, legs[i].Timelock, clock.Stamp(t0.Add(want)))
		}
	}
	if d, _ := claimDeadline(legs); !d.Equal(t0.Add(HopMargin)) {
		t.Errorf("claim deadline %s", d)
	}
}

// Backward conversion rounds up, and never lets the FXP pay out more than
// its rate gives for what it receives: Convert(ConvertBack(a, r), r) >= a
// for every amount, and one unit less would not buy a.
func TestConvertBackRoundsUpAndNeverCreatesMoney(t *testing.T) {
	for _, c := range []struct {
		amount, rate, want int64
		code               string
	}{
		{100_000, 66_666_667, 150_000, ""}, // $1,000.00 at 150 yen/USD: 149999.99925 -> 150000
		{100_000, 66_666_666, 150_001, ""}, // 150000.0015 -> 150001: the payer covers the fraction
		{1, 150_000_000, 1, ""},            // 1 yen costs 0.67 cent -> 1 cent
		{3, 150_000_000, 2, ""},            // 3 yen cost 2 cents exactly
		{9_000_000_000_000_000_000, 1, 0, "INVALID_AMOUNT"},
		{0, 1, 0, "INVALID_AMOUNT"},
		{1, 0, 0, "INVALID_AMOUNT"},
	} {
		got, err := ConvertBack(c.amount, c.rate)
		if c.code != "" {
			if code(err) != c.code {
				t.Errorf("ConvertBack(%d, %d) error %v, want %s", c.amount, c.rate, err, c.code)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ConvertBack(%d, %d) = %d, %v, want %d", c.amount, c.rate, got, err, c.want)
		}
	}
	for _, rate := range []int64{66_666_667, 66_666_666, 150_000_000, 1_234_567, 99_999_999_999} {
		for a := int64(1); a < 3000; a += 7 {
			from, err := ConvertBack(a, rate)
			if err != nil {
				t.Fatal(err)
			}
			if to, _ := Convert(from, rate); to < a {
				t.Fatalf("rate %d: %d buys %d < %d: the FXP would pay money it was not paid for", rate, from, to, a)
			}
			if from > 1 {
				if to, _ := Convert(from-1, rate); to >= a {
					t.Fatalf("rate %d: %d is not the least that buys %d (%d does)", rate, from, a, from-1)
				}
			}
		}
	}
}

// Denomination TO fixes what the payee receives: the payer's amount is
// priced backward hop by hop (rounding up), the cheapest route for the
// payer wins, a bridge is priced last hop first, and the quote's bounds
// apply to what each FXP buys.
func TestFindBestRoutePayeeDenominated(t *testing.T) {
	e := newEnv(t)
	e.put(t, "901", "JPY", "USD", 66_000_000, time.Hour) // $1 costs 151.52 yen
	e.put(t, "902", "JPY", "USD", 66_500_000, time.Hour) // $1 costs 150.38 yen: cheaper
	r, err := e.fx.Quote(e.ctx, QuoteRequest{FromCurrency: "JPY", ToCurrency: "USD", Amount: 100_000, Denomination: DenominationTo})
	// 100000 x 1e8 / 66500000 = 150375.9... -> 150376
	if err != nil || len(r.Hops) != 1 || r.Hops[0].FxpBankID != "902" || r.AmountTo != 100_000 || r.AmountFrom != 150_376 ||
		r.Denomination != DenominationTo || r.Hops[0].AmountFrom != 150_376 || r.Hops[0].AmountTo != 100_000 {
		t.Fatalf("direct: %+v %v", r, err)
	}
	if got, _ := Convert(r.AmountFrom, r.Hops[0].Rate); got < r.AmountTo {
		t.Fatalf("the FXP pays %d for what buys %d", r.AmountTo, got)
	}
	// JPY -> EUR 0.62 euro cent per yen, EUR -> USD 1.10: $1,000.00 costs
	// ceil(100000/1.10) = 90910 euro cents, which cost ceil(90910/0.62) =
	// 146630 yen: cheaper than the direct 150376, so the bridge wins.
	e.put(t, "901", "JPY", "EUR", 62_000_000, time.Hour)
	e.put(t, "902", "EUR", "USD", 110_000_000, time.Hour)
	r, err = e.fx.Quote(e.ctx, QuoteRequest{FromCurrency: "JPY", ToCurrency: "USD", Amount: 100_000, Denomination: DenominationTo})
	wantEUR, _ := ConvertBack(100_000, 110_000_000)
	wantJPY, _ := ConvertBack(wantEUR, 62_000_000)
	if err != nil || len(r.Hops) != 2 || wantEUR != 90_910 || wantJPY != 146_630 || r.Hops[1].AmountFrom != wantEUR ||
		r.Hops[0].AmountTo != wantEUR || r.AmountFrom != wantJPY || r.AmountTo != 100_000 {
		t.Fatalf("bridge (want %d EUR, %d JPY): %+v %v", wantEUR, wantJPY, r, err)
	}
	zero := 0
	if r, err = e.fx.Quote(e.ctx, QuoteRequest{FromCurrency: "JPY", ToCurrency: "USD", Amount: 100_000, Denomination: DenominationTo,
		MaxBridgeHops: &zero}); err != nil || len(r.Hops) != 1 || r.AmountFrom != 150_376 {
		t.Fatalf("max_bridge_hops 0: %+v %v", r, err)
	}
	maxAmt := int64(150_000) // 902 buys at most 150000 yen: $1,000.00 needs 150376
	if _, err := e.fx.PutRate(e.ctx, RateRequest{FxpBankID: "902", FromCurrency: "JPY", ToCurrency: "USD", Rate: 66_500_000,
		MaxAmount: &maxAmt, ValidTo: clock.Stamp(t0.Add(time.Hour))}); err != nil {
		t.Fatal(err)
	}
	if r, err = e.fx.Quote(e.ctx, QuoteRequest{FromCurrency: "JPY", ToCurrency: "USD", Amount: 100_000, Denomination: DenominationTo,
		MaxBridgeHops: &zero}); err != nil || r.Hops[0].FxpBankID != "901" || r.AmountFrom != 151_516 {
		t.Fatalf("902 capped at 150000 yen: %+v %v", r, err)
	}
	if _, err := e.fx.Quote(e.ctx, QuoteRequest{FromCurrency: "JPY", ToCurrency: "USD", Amount: 1, Denomination: "BOTH"}); code(err) != "INVALID_REQUEST" {
		t.Fatalf("unknown denomination: %v", err)
	}
}
