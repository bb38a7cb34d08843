package node

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/fx"
)

// The FX routes are validated against the OpenAPI document on a node
// whose bank 002 is an FX provider (TestFXRoutesOfARealNode), not on the
// default node TestOpenAPIResponsesOfARealNode starts.
func init() {
	for _, op := range []string{"PUT /api/fx/rates", "DELETE /api/fx/rates/{quote_id}", "GET /api/fx/rates", "POST /api/fx/quote",
		"POST /api/fx/transfers", "POST /api/fx/transfers/{gtid}/claim", "POST /api/fx/transfers/{gtid}/refund", "GET /api/fx/transfers/{gtid}"} {
		notExercised[op] = "validated by TestFXRoutesOfARealNode on a node with an FX provider"
	}
}

// fxConfig: bank 002 is an FX provider keeping dollars; bank 001 keeps a
// dollar account for the payee.
func fxConfig() Config {
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	for i := range cfg.Banks {
		b := &cfg.Banks[i]
		b.Currencies = []string{"USD"}
		b.Accounts = append(b.Accounts, Account{Hash: "h:" + b.BankID + "-usd", CoreAccount: "900-1-0000001", Name: "DOLLAR " + b.BankID,
			Balance: 10_000_000, Currency: "USD"})
		if b.BankID == "002" {
			b.FxProvider, b.CurrencyLimits = true, map[string]int64{"USD": 100_000_000}
		}
	}
	return cfg
}

// Every FX route on a real node, each answer validated against the
// OpenAPI document: a rate, the market, a route, a locked transfer, its
// claim, its legs settling through the banks and the sweep step of the
// timeout-sweep job, then a second transfer refunded over a withdrawn
// quote.
func TestFXRoutesOfARealNode(t *testing.T) {
	cfg := fxConfig()
	n, err := Start(context.Background(), Options{DataDir: scratch(t), Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	c := newOACheck(t, n)
	k1, k2, ops := n.Config.KeyFor("001"), n.Config.KeyFor("002"), n.Config.OperatorKey()
	rate := fmt.Sprintf(`{"fxp_bank_id":"002","from_currency":"JPY","to_currency":"USD","rate":66666667,"valid_to":%q}`,
		clock.Stamp(n.FX.Now().Add(time.Hour)))
	c.want(403, n, "PUT", "/api/fx/rates", k1, nil, rate)
	qid := c.want(200, n, "PUT", "/api/fx/rates", k2, nil, rate).body
	var acc struct {
		Quote fx.Quote `json:"quote"`
	}
	if err := json.Unmarshal(qid, &acc); err != nil {
		t.Fatal(err)
	}
	c.want(200, n, "GET", "/api/fx/rates?from=JPY&to=USD", k1, nil, "")
	c.want(200, n, "POST", "/api/fx/quote", k1, nil, `{"from_currency":"JPY","to_currency":"USD","amount":150000}`)
	transfer := func(gtid string) string {
		return fmt.Sprintf(`{"gtid":%q,"idempotency_key":"k-%s","from_currency":"JPY","to_currency":"USD","amount":150000,"bind_htlc":true,
			"payer":{"bank_id":"001","account_hash":"h:001-0001"},"payee":{"bank_id":"001","account_hash":"h:001-usd"},
			"fxp_accounts":{"002:JPY":"h:002-0001","002:USD":"h:002-usd"}}`, gtid, gtid)
	}
	locked := c.want(201, n, "POST", "/api/fx/transfers", k1, nil, transfer("FX-OA-1"))
	c.want(400, n, "POST", "/api/fx/transfers/FX-OA-1/claim", k1, nil, `{"secret":"wrong"}`)
	c.want(200, n, "POST", "/api/fx/transfers/FX-OA-1/claim", k1, nil, fmt.Sprintf(`{"secret":%q}`, locked.field("secret")))
	n.waitState(t, fx.LegTxID("FX-OA-1", 0), "SETTLED", 20*time.Second)
	n.waitState(t, fx.LegTxID("FX-OA-1", 1), "SETTLED", 20*time.Second)
	cron := map[string]string{"X-Cron-Secret": n.Config.CronSecret}
	c.want(200, n, "POST", "/internal/cron/timeout-sweep", "", cron, "")
	if got := c.want(200, n, "GET", "/api/fx/transfers/FX-OA-1", ops, map[string]string{"X-Purpose-Code": "P01"}, "").field("status"); got != "SETTLED" {
		t.Errorf("FX-OA-1 is %s after the legs settled and the sweep ran, want SETTLED", got)
	}
	c.want(404, n, "GET", "/api/fx/transfers/FX-NOPE", ops, map[string]string{"X-Purpose-Code": "P01"}, "")
	second := c.want(201, n, "POST", "/api/fx/transfers", k1, nil, transfer("FX-OA-2"))
	c.want(409, n, "POST", "/api/fx/transfers/FX-OA-2/refund", k1, nil, "")
	c.want(200, n, "DELETE", "/api/fx/rates/"+acc.Quote.QuoteID, k2, nil, "")
	c.want(409, n, "POST", "/api/fx/transfers/FX-OA-2/claim", k1, nil, fmt.Sprintf(`{"secret":%q}`, second.field("secret")))
	if got := c.want(200, n, "POST", "/api/fx/transfers/FX-OA-2/refund", k1, nil, "").field("status"); got != "REFUNDED" {
		t.Errorf("FX-OA-2 refund answered status %s", got)
	}
}
