package gateway

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/fx"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/lane"
)

func newFXService(c *Config) *fx.FX {
	f, err := fx.New(fx.Config{DB: c.DB, Lanes: lane.New(c.DB, finality.New(c.Clock), openGate{}, c.Clock, nil), Clock: c.Clock})
	if err != nil {
		panic(err)
	}
	return f
}

// The rate market over HTTP: the FX provider (003) quotes its own rate
// only, a quote prices a route, the pair lists it, the provider withdraws
// it, and then there is no route.
func TestFXRateRoutes(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.FX = newFXService(c) })
	if err := f.cfg.Participants.SetFxProvider(f.ctx, "003", true); err != nil {
		t.Fatal(err)
	}
	if err := hlimit.SetCurrencyLimitDB(f.ctx, f.db, "003", "USD", 1_000_000); err != nil {
		t.Fatal(err)
	}
	as := func(key string) map[string]string { return map[string]string{"X-Api-Key": key} }
	rate := fmt.Sprintf(`{"fxp_bank_id":"003","from_currency":"JPY","to_currency":"USD","rate":66666667,"valid_to":%q}`,
		clock.Stamp(f.clk.Now().Add(time.Hour)))
	if r := f.do("PUT", "/api/fx/rates", as(key001), rate); r.status != 403 || r.code(t) != "CROSS_PARTICIPANT_SCOPE" {
		t.Fatalf("another bank quoting for 003: %d %s", r.status, r.body)
	}
	if r := f.do("PUT", "/api/fx/rates", as(key002), `{"fxp_bank_id":"002","from_currency":"JPY","to_currency":"USD","rate":1,"valid_to":"2030-01-01T00:00:00Z"}`); r.status != 401 || r.code(t) != "UNAUTHORIZED" {
		t.Fatalf("a bank that is no FX provider: %d %s", r.status, r.body)
	}
	r := f.do("PUT", "/api/fx/rates", as(key003), rate)
	if r.status != 200 {
		t.Fatalf("put rate: %d %s", r.status, r.body)
	}
	var acc FXRateAccepted
	if err := json.Unmarshal(r.body, &acc); err != nil || acc.Result != "QUOTE_ACCEPTED" || acc.Quote.Rate != 66666667 {
		t.Fatalf("put rate body %s: %v", r.body, err)
	}
	r = f.do("POST", "/api/fx/quote", as(key001), `{"from_currency":"JPY","to_currency":"USD","amount":150000}`)
	var found FXRouteFound
	if r.status != 200 || json.Unmarshal(r.body, &found) != nil || found.Route.AmountTo != 100_000 || found.RateScale != fx.RateScale {
		t.Fatalf("quote: %d %s", r.status, r.body)
	}
	r = f.do("GET", "/api/fx/rates?from=JPY&to=USD", as(key001), "")
	var list FXRatesResponse
	if r.status != 200 || json.Unmarshal(r.body, &list) != nil || len(list.Quotes) != 1 {
		t.Fatalf("rates: %d %s", r.status, r.body)
	}
	if r := f.do("DELETE", "/api/fx/rates/"+acc.Quote.QuoteID, as(key001), ""); r.status != 403 {
		t.Fatalf("another bank withdrawing 003's quote: %d %s", r.status, r.body)
	}
	if r := f.do("DELETE", "/api/fx/rates/"+acc.Quote.QuoteID, as(key003), ""); r.status != 200 {
		t.Fatalf("withdraw: %d %s", r.status, r.body)
	}
	if r := f.do("DELETE", "/api/fx/rates/"+acc.Quote.QuoteID, as(key003), ""); r.status != 404 {
		t.Fatalf("withdraw twice: %d %s", r.status, r.body)
	}
	if r := f.do("POST", "/api/fx/quote", as(key001), `{"from_currency":"JPY","to_currency":"USD","amount":150000}`); r.status != 409 || r.code(t) != "FX_NO_ROUTE" {
		t.Fatalf("quote after withdrawal: %d %s", r.status, r.body)
	}
	if r := f.do("GET", "/api/fx/transfers/NOPE", map[string]string{"X-Api-Key": key001, HeaderPurposeCode: "P01"}, ""); r.status != 404 || r.code(t) != "GTID_NOT_FOUND" {
		t.Fatalf("unknown transfer: %d %s", r.status, r.body)
	}
	if r := f.do("POST", "/api/fx/transfers", as(key002), `{"gtid":"G1","idempotency_key":"k","from_currency":"JPY","to_currency":"USD","amount":1,
		"payer":{"bank_id":"001","account_hash":"h:a"},"payee":{"bank_id":"002","account_hash":"h:b"},"fxp_accounts":{}}`); r.status != 403 {
		t.Fatalf("a transfer for another payer: %d %s", r.status, r.body)
	}
}
