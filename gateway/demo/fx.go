package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/fx"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/gateway"
	"github.com/zcgw/zcgw/gateway/node"
)

// The FX scene (spec 001 ch. 17, coordinator/fx): Kaede (002) is an FX
// provider quoting yen to dollars; Sato (001, yen) pays Suzuki's dollar
// account (001) through Kaede's conduit. One transfer is locked and
// claimed: both currency legs settle through the adapters and cores. A
// second is locked, its quote is withdrawn, the claim is refused and the
// transfer refunded: nothing moves.

// ViaFX marks a Transfer that is a currency leg of an FX conduit.
const ViaFX = "FX"

const (
	fxProvider = "002"
	fxRate     = 66_666_667 // JPY -> USD x1e8, yen to cents (1 USD = 150 JPY)
)

// fxWorld makes 001 and 002 keep dollar accounts and 002 an FX provider.
func fxWorld(bc *node.BankConfig) {
	switch bc.BankID {
	case "001":
		bc.Currencies = []string{"USD"}
	case fxProvider:
		bc.Currencies = []string{"USD"}
		bc.FxProvider = true
		bc.CurrencyLimits = map[string]int64{"USD": 100_000_00} // $100,000.00 of dollar H
	}
}

// money prints an amount in its currency ("" is yen; dollars in cents).
func money(currency string, v int64) string {
	if currency == "" || currency == "JPY" {
		return yen(v)
	}
	neg := v < 0
	if neg {
		v = -v
	}
	s := fmt.Sprintf("%s %s.%02d", currency, yen(v / 100)[len("¥"):], v%100)
	if neg {
		s = "-" + s
	}
	return s
}

// fxCall sends one /api/fx request as bank (operator when bank is "").
func (c *apiClient) fxCall(ctx context.Context, method, path, bank string, body, out any) (int, error) {
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	key := c.cfg.OperatorKey()
	if bank != "" {
		key = c.cfg.KeyFor(bank)
	}
	req.Header.Set("X-Api-Key", key)
	if method == http.MethodGet {
		req.Header.Set(gateway.HeaderPurposeCode, "P01") // a query (spec 004 照会の認可)
	}
	resp, err := c.do(req, out)
	if resp == nil {
		return 0, err
	}
	return resp.StatusCode, err
}

func (d *day) fxScene() error {
	d.section("FX: yen to dollars through Kaede's conduit (spec 001 ch. 17)")
	var acc gateway.FXRateAccepted
	if _, err := d.api.fxCall(d.ctx, "PUT", "/api/fx/rates", fxProvider, fx.RateRequest{FxpBankID: fxProvider, FromCurrency: "JPY",
		ToCurrency: "USD", Rate: fxRate, ValidTo: clock.Stamp(d.n.FX.Now().Add(2 * time.Hour))}, &acc); err != nil {
		return err
	}
	d.printf("  PUT /api/fx/rates as %s: %s JPY->USD rate %d (x1e8) until %s\n", fxProvider, acc.Quote.QuoteID, acc.Quote.Rate, acc.Quote.ValidTo)
	var found gateway.FXRouteFound
	if _, err := d.api.fxCall(d.ctx, "POST", "/api/fx/quote", "001", fx.QuoteRequest{FromCurrency: "JPY", ToCurrency: "USD", Amount: 300_000}, &found); err != nil {
		return err
	}
	d.printf("  POST /api/fx/quote: %s -> %s via %s (effective rate %d)\n", yen(found.Route.AmountFrom),
		money("USD", found.Route.AmountTo), found.Route.Hops[0].FxpBankID, found.Route.EffectiveRate)

	sato, desk, deskUSD, suzuki := accountByKey("001/SATO"), accountByKey("002/FXDESK-JPY"), accountByKey("002/FXDESK-USD"), accountByKey("001/SUZUKI-USD")
	req := func(gtid string) fx.TransferRequest {
		return fx.TransferRequest{GTID: gtid, IdempotencyKey: "demo-" + gtid, FromCurrency: "JPY", ToCurrency: "USD", Amount: 300_000,
			Payer: fx.Party{BankID: "001", AccountHash: sato.Hash()}, Payee: fx.Party{BankID: "001", AccountHash: suzuki.Hash()},
			FxpAccounts: map[string]string{fx.FxpAccountKey(fxProvider, "JPY"): desk.Hash(), fx.FxpAccountKey(fxProvider, "USD"): deskUSD.Hash()},
			BindHTLC:    true}
	}

	// 1. Locked, then claimed with the secret: both legs settle.
	var locked fx.CreateResult
	if _, err := d.api.fxCall(d.ctx, "POST", "/api/fx/transfers", "001", req("FX-DEMO-1"), &locked); err != nil {
		return err
	}
	d.printf("  POST /api/fx/transfers FX-DEMO-1 (bind_htlc): %s, %s -> %s, hashlock %s\n", locked.Result,
		yen(locked.AmountFrom), money("USD", locked.AmountTo), short(locked.Hashlock))
	for _, l := range locked.Legs {
		d.printf("      leg %d %-3s %12s  %s -> %s  timelock %s\n", l.Index, l.Currency, money(l.Currency, l.Amount), l.FromBankID, l.ToBankID, l.Timelock)
	}
	if err := d.printFXH("while locked"); err != nil {
		return err
	}
	var claimed fx.ClaimResult
	if _, err := d.api.fxCall(d.ctx, "POST", "/api/fx/transfers/FX-DEMO-1/claim", "001", gateway.FXClaimBody{Secret: locked.Secret}, &claimed); err != nil {
		return err
	}
	d.printf("  POST /api/fx/transfers/FX-DEMO-1/claim: %s, status %s, GTID %s\n", claimed.Result, claimed.Status, claimed.GtidState)
	var legs []*Transfer
	for i, l := range locked.Legs {
		from, to := "001/SATO", "002/FXDESK-JPY"
		if i == 1 {
			from, to = "002/FXDESK-USD", "001/SUZUKI-USD"
		}
		t := &Transfer{Label: fmt.Sprintf("FX-DEMO-1 leg %d (%s)", i, l.Currency), Via: ViaFX, TxID: l.TxID, Lane: "GTID",
			From: from, To: to, Amount: l.Amount, Expect: "SETTLED"}
		legs = append(legs, t)
		d.transfers = append(d.transfers, t)
	}
	if err := d.wait(60*time.Second, legs...); err != nil {
		return err
	}
	if err := d.fxSettle("FX-DEMO-1"); err != nil {
		return err
	}

	// 2. Locked, the quote withdrawn before the claim: refused, refunded.
	var second fx.CreateResult
	if _, err := d.api.fxCall(d.ctx, "POST", "/api/fx/transfers", "001", req("FX-DEMO-2"), &second); err != nil {
		return err
	}
	d.printf("  POST /api/fx/transfers FX-DEMO-2 (bind_htlc): %s\n", second.Result)
	var gone gateway.FXRateWithdrawn
	if _, err := d.api.fxCall(d.ctx, "DELETE", "/api/fx/rates/"+acc.Quote.QuoteID, fxProvider, nil, &gone); err != nil {
		return err
	}
	d.printf("  DELETE /api/fx/rates/%s as %s: %s\n", acc.Quote.QuoteID, fxProvider, gone.Result)
	var ignored fx.ClaimResult
	status, err := d.api.fxCall(d.ctx, "POST", "/api/fx/transfers/FX-DEMO-2/claim", "001", gateway.FXClaimBody{Secret: second.Secret}, &ignored)
	d.printf("  POST /api/fx/transfers/FX-DEMO-2/claim: %v\n", err)
	if status != http.StatusConflict {
		return violated(InvFX, "a claim over a withdrawn quote answered %d, want 409 FX_QUOTE_EXPIRED", status)
	}
	var refunded fx.RefundResult
	if _, err := d.api.fxCall(d.ctx, "POST", "/api/fx/transfers/FX-DEMO-2/refund", "001", nil, &refunded); err != nil {
		return err
	}
	d.printf("  POST /api/fx/transfers/FX-DEMO-2/refund: %s, legs %v\n", refunded.Result, refunded.RefundedLegs)
	if err := d.fxCheck("FX-DEMO-2", fx.TransferRefunded, lane.GtCancelled, fx.LockRefunded); err != nil {
		return err
	}
	if err := d.fxPositions(); err != nil {
		return err
	}
	return d.printFXH("after the scene")
}

// fxPositions: the dollar settlement positions the FX legs moved at ZC
// sum to zero across the banks (dollars are conserved; no yen DNS cycle
// nets them, docs/fx.md).
func (d *day) fxPositions() error {
	ps, err := d.n.Orchestrator.Positions(d.ctx)
	if err != nil {
		return err
	}
	var sum int64
	for _, p := range ps {
		if p.Currency == "USD" {
			d.printf("  dollar position of bank %s at %s: %s\n", p.BankID, p.Venue, money("USD", p.Balance))
			sum += p.Balance
		}
	}
	if sum != 0 {
		return violated(InvFX, "dollar settlement positions sum to %d, want 0", sum)
	}
	return nil
}

// fxSettle finalises a claimed conduit once its legs settled (what the
// timeout-sweep job's fx step does every minute) and checks it.
func (d *day) fxSettle(gtid string) error {
	r, err := d.n.FX.Sweep(d.ctx)
	if err != nil {
		return err
	}
	d.printf("  FX sweep: %d conduit(s) finalised, %d refunded\n", r.Finalised, r.Refunded)
	return d.fxCheck(gtid, fx.TransferSettled, lane.GtSettled, fx.LockClaimed)
}

// fxCheck reads the transfer over HTTP, prints its GTID chain and checks
// its status, GTID state and leg locks.
func (d *day) fxCheck(gtid string, st fx.TransferStatus, gs lane.GtidState, ls fx.LockState) error {
	var t fx.Transfer
	if _, err := d.api.fxCall(d.ctx, "GET", "/api/fx/transfers/"+gtid, "", nil, &t); err != nil {
		return err
	}
	d.printf("  GET /api/fx/transfers/%s: %s, GTID %s, %s -> %s\n", gtid, t.Status, t.GtidState, yen(t.AmountFrom), money(t.ToCurrency, t.AmountTo))
	if err := d.n.DB.Read(d.ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(d.ctx, `SELECT event_seq, event_type, COALESCE(state_from, '-'), state_to, entry_hash
			FROM FinalityLog WHERE gtid = ? AND txid IS NULL ORDER BY event_seq`, gtid)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var seq int64
			var ev, from, to, h string
			if err := rows.Scan(&seq, &ev, &from, &to, &h); err != nil {
				return err
			}
			d.printf("      #%-4d %-20s %-20s -> %-20s hash %s\n", seq, ev, from, to, short(h))
		}
		return rows.Err()
	}); err != nil {
		return err
	}
	if d.sum.FX == nil {
		d.sum.FX = map[string]string{}
	}
	d.sum.FX[gtid] = string(t.Status)
	if t.Status != st || t.GtidState != gs {
		return violated(InvFX, "%s is %s with GTID %s, want %s %s", gtid, t.Status, t.GtidState, st, gs)
	}
	for _, l := range t.LegLocks {
		if l.State != ls {
			return violated(InvFX, "%s leg lock %d is %s, want %s", gtid, l.Index, l.State, ls)
		}
	}
	return nil
}

// printFXH prints the FX provider's dollar H and the payer bank's yen H
// in use; after the scene the dollar H must be back to zero.
func (d *day) printFXH(when string) error {
	var usd, jpy hlimit.Usage
	if err := d.n.DB.Read(d.ctx, func(tx *store.Tx) (err error) {
		if usd, err = hlimit.UsageOf(d.ctx, tx, fxProvider, "USD"); err != nil {
			return err
		}
		jpy, err = hlimit.UsageOf(d.ctx, tx, "001", "JPY")
		return err
	}); err != nil {
		return err
	}
	d.printf("  H %s: bank %s USD in use %s of %s; bank 001 JPY in use %s\n", when, fxProvider, money("USD", usd.Used), money("USD", usd.Limit), yen(jpy.Used))
	// Yen H of bank 001 is checked with every bank's at the end of the
	// day (h-released); the dollar H is the FX scene's alone.
	if when == "after the scene" && usd.Used != 0 {
		return violated(InvFX, "bank %s still has %s of dollar H in use after the FX scene", fxProvider, money("USD", usd.Used))
	}
	return nil
}
