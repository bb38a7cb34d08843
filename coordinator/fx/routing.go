package fx

import (
	"context"
	"sort"
	"time"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Hop is one conversion of a route: the FXP buys AmountFrom of
// FromCurrency and pays AmountTo of ToCurrency at Rate (quote QuoteID).
type Hop struct {
	QuoteID      string `json:"quote_id"`
	FxpBankID    string `json:"fxp_bank_id"`
	FromCurrency string `json:"from_currency"`
	ToCurrency   string `json:"to_currency"`
	Rate         int64  `json:"rate"`
	AmountFrom   int64  `json:"amount_from"`
	AmountTo     int64  `json:"amount_to"`
	ValidTo      string `json:"valid_to"`
}

// Route is a priced path from the payer's currency to the payee's: one hop
// (direct) or two (through one bridge currency).
type Route struct {
	FromCurrency string `json:"from_currency"`
	ToCurrency   string `json:"to_currency"`
	// Denomination says which amount was fixed: FROM (the payer's; the
	// payee's is priced forward, rounding down) or TO (the payee's; the
	// payer's is priced backward, rounding up).
	Denomination  string `json:"denomination"`
	AmountFrom    int64  `json:"amount_from"`
	AmountTo      int64  `json:"amount_to"`
	EffectiveRate int64  `json:"effective_rate"`
	Hops          []Hop  `json:"hops"`
	// ValidTo is the earliest valid_to of the route's quotes: the route
	// can be used until then, not after (FX_QUOTE_EXPIRED).
	ValidTo string `json:"valid_to"`
}

// QuoteIDs lists the route's quotes in hop order.
func (r Route) QuoteIDs() []string {
	out := make([]string, len(r.Hops))
	for i, h := range r.Hops {
		out[i] = h.QuoteID
	}
	return out
}

// QuoteRequest is POST /api/fx/quote. The amount is in the payer's
// currency (denomination "FROM", the default) or the payee's ("TO").
type QuoteRequest struct {
	FromCurrency  string `json:"from_currency"`
	ToCurrency    string `json:"to_currency"`
	Amount        int64  `json:"amount"`
	Denomination  string `json:"denomination,omitempty"`
	MaxBridgeHops *int   `json:"max_bridge_hops,omitempty"`
}

// Denominations accepted by QuoteRequest / TransferRequest.
const (
	DenominationFrom = "FROM" // amount is what the payer pays
	DenominationTo   = "TO"   // amount is what the payee receives
)

// payeeFixed reports whether the request fixes the payee's amount.
func (q QuoteRequest) payeeFixed() bool { return q.Denomination == DenominationTo }

func (q QuoteRequest) check() error {
	switch {
	case !ValidCurrency(q.FromCurrency):
		return domainerr.New("INVALID_CURRENCY", "from_currency must be an ISO 4217 code", map[string]any{"field": "from_currency", "value": q.FromCurrency})
	case !ValidCurrency(q.ToCurrency):
		return domainerr.New("INVALID_CURRENCY", "to_currency must be an ISO 4217 code", map[string]any{"field": "to_currency", "value": q.ToCurrency})
	case q.FromCurrency == q.ToCurrency:
		return domainerr.New("INVALID_CURRENCY", "from_currency and to_currency must differ", map[string]any{"field": "to_currency", "value": q.ToCurrency})
	case q.Amount <= 0:
		return domainerr.New("INVALID_AMOUNT", "amount must be a positive integer of minor units", map[string]any{"field": "amount", "value": q.Amount})
	case q.Denomination != "" && q.Denomination != DenominationFrom && q.Denomination != DenominationTo:
		return domainerr.New("INVALID_REQUEST", "denomination must be FROM (the payer's amount) or TO (the payee's)", map[string]any{"field": "denomination", "value": q.Denomination})
	case q.MaxBridgeHops != nil && (*q.MaxBridgeHops < 0 || *q.MaxBridgeHops > 1):
		return domainerr.New("INVALID_REQUEST", "max_bridge_hops must be 0 or 1", map[string]any{"field": "max_bridge_hops", "value": *q.MaxBridgeHops})
	}
	return nil
}

// Quote prices the best route now without committing anything (POST
// /api/fx/quote). No route is FX_NO_ROUTE.
func (f *FX) Quote(ctx context.Context, req QuoteRequest) (Route, error) {
	if err := req.check(); err != nil {
		return Route{}, err
	}
	var r Route
	err := f.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		r, err = findBestRoute(ctx, tx, f.now(), req)
		return err
	})
	return r, err
}

// hop prices q forward: the FXP buys amount and pays it converted,
// rounded down. The quote's bounds apply to the amount it buys.
func hop(q Quote, amount int64) (Hop, bool) {
	if amount < q.MinAmount || (q.MaxAmount != nil && amount > *q.MaxAmount) {
		return Hop{}, false
	}
	to, err := Convert(amount, q.Rate)
	if err != nil || to <= 0 {
		return Hop{}, false
	}
	return Hop{QuoteID: q.QuoteID, FxpBankID: q.FxpBankID, FromCurrency: q.FromCurrency, ToCurrency: q.ToCurrency,
		Rate: q.Rate, AmountFrom: amount, AmountTo: to, ValidTo: q.ValidTo}, true
}

// hopBack prices q backward: the FXP pays exactly amount and buys what
// that costs at its rate, rounded up (ConvertBack). The quote's bounds
// apply to the amount it buys, as forward.
func hopBack(q Quote, amount int64) (Hop, bool) {
	from, err := ConvertBack(amount, q.Rate)
	if err != nil || from < q.MinAmount || (q.MaxAmount != nil && from > *q.MaxAmount) {
		return Hop{}, false
	}
	return Hop{QuoteID: q.QuoteID, FxpBankID: q.FxpBankID, FromCurrency: q.FromCurrency, ToCurrency: q.ToCurrency,
		Rate: q.Rate, AmountFrom: from, AmountTo: amount, ValidTo: q.ValidTo}, true
}

func route(req QuoteRequest, hops ...Hop) Route {
	den := DenominationFrom
	if req.payeeFixed() {
		den = DenominationTo
	}
	r := Route{FromCurrency: req.FromCurrency, ToCurrency: req.ToCurrency, Denomination: den, AmountFrom: hops[0].AmountFrom,
		AmountTo: hops[len(hops)-1].AmountTo, Hops: hops, ValidTo: hops[0].ValidTo}
	for _, h := range hops[1:] {
		if h.ValidTo < r.ValidTo {
			r.ValidTo = h.ValidTo
		}
	}
	r.EffectiveRate = EffectiveRate(r.AmountFrom, r.AmountTo)
	return r
}

// better orders candidate routes: more for the payee first (or, with the
// payee's amount fixed, less for the payer), then fewer hops, then the
// quote that stays valid longer, then quote ids (so the choice is
// deterministic).
func better(a, b Route) bool {
	if a.AmountTo != b.AmountTo {
		return a.AmountTo > b.AmountTo
	}
	if a.AmountFrom != b.AmountFrom {
		return a.AmountFrom < b.AmountFrom
	}
	if len(a.Hops) != len(b.Hops) {
		return len(a.Hops) < len(b.Hops)
	}
	if a.ValidTo != b.ValidTo {
		return a.ValidTo > b.ValidTo
	}
	for i := range a.Hops {
		if a.Hops[i].QuoteID != b.Hops[i].QuoteID {
			return a.Hops[i].QuoteID < b.Hops[i].QuoteID
		}
	}
	return false
}

// findBestRoute is findBestRoute of 001 §17.4: every live direct quote,
// and (max_bridge_hops >= 1, the default) every pair of live quotes
// from -> X -> to through one bridge currency X, priced hop by hop with
// forward (floor) rounding from the payer's amount, or (denomination TO)
// backward (ceil) from the payee's; the best for the payer and payee wins.
func findBestRoute(ctx context.Context, tx *store.Tx, now time.Time, req QuoteRequest) (Route, error) {
	quotes, err := liveQuotes(ctx, tx, now, "", "")
	if err != nil {
		return Route{}, err
	}
	maxHops := 1
	if req.MaxBridgeHops != nil {
		maxHops = *req.MaxBridgeHops
	}
	var cands []Route
	if req.payeeFixed() {
		cands = backwardRoutes(req, quotes, maxHops)
	} else {
		cands = forwardRoutes(req, quotes, maxHops)
	}
	if len(cands) == 0 {
		return Route{}, domainerr.New("FX_NO_ROUTE", "no live quote converts "+req.FromCurrency+" to "+req.ToCurrency+" for this amount",
			map[string]any{"from_currency": req.FromCurrency, "to_currency": req.ToCurrency, "amount": req.Amount})
	}
	sort.SliceStable(cands, func(i, j int) bool { return better(cands[i], cands[j]) })
	return cands[0], nil
}

// forwardRoutes prices every candidate route from the payer's amount,
// hop by hop in payment order.
func forwardRoutes(req QuoteRequest, quotes []Quote, maxHops int) []Route {
	var cands []Route
	for _, q := range quotes {
		if q.FromCurrency != req.FromCurrency {
			continue
		}
		h1, ok := hop(q, req.Amount)
		if !ok {
			continue
		}
		if q.ToCurrency == req.ToCurrency {
			cands = append(cands, route(req, h1))
			continue
		}
		if maxHops < 1 {
			continue
		}
		for _, q2 := range quotes {
			if q2.FromCurrency != q.ToCurrency || q2.ToCurrency != req.ToCurrency {
				continue
			}
			if h2, ok := hop(q2, h1.AmountTo); ok {
				cands = append(cands, route(req, h1, h2))
			}
		}
	}
	return cands
}

// backwardRoutes prices every candidate route from the payee's amount:
// the last hop first (the FXP pays req.Amount exactly), each hop upstream
// buying what the next one pays.
func backwardRoutes(req QuoteRequest, quotes []Quote, maxHops int) []Route {
	var cands []Route
	for _, q := range quotes {
		if q.ToCurrency != req.ToCurrency {
			continue
		}
		last, ok := hopBack(q, req.Amount)
		if !ok {
			continue
		}
		if q.FromCurrency == req.FromCurrency {
			cands = append(cands, route(req, last))
			continue
		}
		if maxHops < 1 {
			continue
		}
		for _, q1 := range quotes {
			if q1.FromCurrency != req.FromCurrency || q1.ToCurrency != q.FromCurrency {
				continue
			}
			if first, ok := hopBack(q1, last.AmountFrom); ok {
				cands = append(cands, route(req, first, last))
			}
		}
	}
	return cands
}
