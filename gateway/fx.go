package gateway

import (
	"context"
	"net/http"
	"slices"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/fx"
	"github.com/zcgw/zcgw/coordinator/ident"
	"github.com/zcgw/zcgw/coordinator/signing"
)

// The FX routes of spec 001 §17.2 (coordinator/fx, docs/fx.md), mounted
// when Config.FX is set.

// FXRatesResponse is GET /api/fx/rates.
type FXRatesResponse struct {
	FromCurrency string     `json:"from_currency"`
	ToCurrency   string     `json:"to_currency"`
	Quotes       []fx.Quote `json:"quotes"`
}

// FXRateAccepted is PUT /api/fx/rates.
type FXRateAccepted struct {
	Result string   `json:"result"`
	Quote  fx.Quote `json:"quote"`
}

// FXRateWithdrawn is DELETE /api/fx/rates/{quote_id}.
type FXRateWithdrawn struct {
	Result  string `json:"result"`
	QuoteID string `json:"quote_id"`
}

// FXRouteFound is POST /api/fx/quote.
type FXRouteFound struct {
	Result    string   `json:"result"`
	RateScale int64    `json:"rate_scale"`
	Route     fx.Route `json:"route"`
}

// FXClaimBody is POST /api/fx/transfers/{gtid}/claim.
type FXClaimBody struct {
	Secret string `json:"secret"`
}

var fxErrors = []int{400, 401, 403, 404, 409, 415}

func (s *Server) fxRoutes() []route {
	f := s.cfg.FX
	if f == nil {
		return nil
	}
	return []route{
		{pattern: "PUT /api/fx/rates", handler: s.perimeter(s.jsonBody(s.putFXRate(f))), ops: []op{{
			summary: "An FX provider upserts its directional rate with its validity (x 1e8, minor units to minor units)", auth: authAPI,
			request: fx.RateRequest{}, responses: []response{{status: 200, body: FXRateAccepted{}}}, errors: fxErrors}}},
		{pattern: "DELETE /api/fx/rates/{quote_id}", handler: s.perimeter(s.deleteFXRate(f)), ops: []op{{
			summary: "Withdraw an ACTIVE quote", auth: authAPI,
			responses: []response{{status: 200, body: FXRateWithdrawn{}}}, errors: apiErrors}}},
		{pattern: "GET /api/fx/rates", handler: s.perimeter(s.getFXRates(f)), ops: []op{{
			summary: "The live quotes of a currency pair", auth: authAPI,
			params: []param{{name: "from", in: "query", description: "from currency (ISO 4217)", required: true},
				{name: "to", in: "query", description: "to currency (ISO 4217)", required: true}},
			responses: []response{{status: 200, body: FXRatesResponse{}}}, errors: apiErrors}}},
		{pattern: "POST /api/fx/quote", handler: s.perimeter(s.jsonBody(s.postFXQuote(f))), ops: []op{{
			summary: "Price the best route now (direct or one bridge currency) without committing", auth: authAPI,
			request: fx.QuoteRequest{}, responses: []response{{status: 200, body: FXRouteFound{}}}, errors: fxErrors}}},
		{pattern: "POST /api/fx/transfers", handler: s.perimeter(s.jsonBody(s.postFXTransfer(f))), ops: []op{{
			summary: "Lock (bind_htlc) or initiate an FX conduit transfer; the payer bank only; idempotent per gtid", auth: authParticipant,
			request: fx.TransferRequest{}, responses: []response{{status: 201, body: fx.CreateResult{}}},
			errors: []int{400, 401, 403, 404, 409, 415, 502}}}},
		{pattern: "POST /api/fx/transfers/{gtid}/claim", handler: s.perimeter(s.jsonBody(s.postFXClaim(f))), ops: []op{{
			summary: "Claim a locked FX transfer with its secret: every leg settles through the banks", auth: authAPI,
			request: FXClaimBody{}, responses: []response{{status: 200, body: fx.ClaimResult{}}}, errors: fxErrors}}},
		{pattern: "POST /api/fx/transfers/{gtid}/refund", handler: s.perimeter(s.postFXRefund(f)), ops: []op{{
			summary: "Refund a locked FX transfer that can no longer be claimed (timelock passed or a quote died)", auth: authAPI,
			responses: []response{{status: 200, body: fx.RefundResult{}}}, errors: []int{401, 403, 404, 409}}}},
		{pattern: "GET /api/fx/transfers/{gtid}", handler: s.perimeter(partyQuery(s, fxResource(f), writeView)), ops: []op{{
			summary: "An FX transfer: status, route, conduit GTID state, legs and leg locks (a leg's bank or the operator)", auth: authAPI,
			params: []param{purposeParam}, responses: []response{{status: 200, body: fx.Transfer{}}}, errors: apiErrors}}},
	}
}

// fxCaller refuses a participant acting for another bank: an FX
// provider's quotes are its own, a transfer's payer is the caller.
func fxCaller(r *http.Request, bankID string) error {
	p := principalFrom(r)
	if p.Scope == signing.ScopeOperator || (p.Scope == signing.ScopeParticipant && p.BankID == bankID) {
		return nil
	}
	return domainerr.New("CROSS_PARTICIPANT_SCOPE", "a participant acts only for itself", map[string]any{"bank_id": bankID, "scope": p.Scope})
}

func decodeFX(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := readBody(r)
	if err == nil {
		err = decodeStrict(body, v)
	}
	if err != nil {
		writeError(w, r, err)
		return false
	}
	return true
}

func (s *Server) putFXRate(f *fx.FX) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req fx.RateRequest
		if !decodeFX(w, r, &req) {
			return
		}
		if err := fxCaller(r, req.FxpBankID); err != nil {
			writeError(w, r, err)
			return
		}
		q, err := f.PutRate(context.WithoutCancel(r.Context()), req)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, FXRateAccepted{Result: "QUOTE_ACCEPTED", Quote: q})
	}
}

func (s *Server) deleteFXRate(f *fx.FX) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("quote_id")
		q, err := f.QuoteByID(r.Context(), id)
		if err == nil {
			err = fxCaller(r, q.FxpBankID)
		}
		if err == nil {
			err = f.WithdrawRate(context.WithoutCancel(r.Context()), id)
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, FXRateWithdrawn{Result: "QUOTE_WITHDRAWN", QuoteID: id})
	}
}

func (s *Server) getFXRates(f *fx.FX) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		from, to := r.URL.Query().Get("from"), r.URL.Query().Get("to")
		if !fx.ValidCurrency(from) || !fx.ValidCurrency(to) {
			writeError(w, r, domainerr.New("INVALID_CURRENCY", "from and to must be ISO 4217 codes", map[string]any{"field": "from|to"}))
			return
		}
		qs, err := f.Rates(r.Context(), from, to)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, FXRatesResponse{FromCurrency: from, ToCurrency: to, Quotes: qs})
	}
}

func (s *Server) postFXQuote(f *fx.FX) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req fx.QuoteRequest
		if !decodeFX(w, r, &req) {
			return
		}
		rt, err := f.Quote(r.Context(), req)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, FXRouteFound{Result: "ROUTE_FOUND", RateScale: fx.RateScale, Route: rt})
	}
}

func (s *Server) postFXTransfer(f *fx.FX) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req fx.TransferRequest
		if !decodeFX(w, r, &req) {
			return
		}
		if p := principalFrom(r); p.Scope != signing.ScopeParticipant || p.BankID != req.Payer.BankID {
			writeErrorStatus(w, r, http.StatusForbidden, domainerr.New("UNAUTHORIZED", "only the payer bank may originate an FX transfer",
				map[string]any{"scope": p.Scope}))
			return
		}
		res, err := f.Create(context.WithoutCancel(r.Context()), req)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusCreated, res)
	}
}

func (s *Server) postFXClaim(f *fx.FX) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var b FXClaimBody
		if !decodeFX(w, r, &b) {
			return
		}
		// The secret is the claimant's authority (an HTLC): whoever holds
		// it may claim; the caller must still be authenticated.
		res, err := f.Claim(context.WithoutCancel(r.Context()), r.PathValue("gtid"), b.Secret)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	}
}

func (s *Server) postFXRefund(f *fx.FX) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		gtid := r.PathValue("gtid")
		if err := s.fxParty(r, f, gtid); err != nil {
			writeError(w, r, err)
			return
		}
		res, err := f.Refund(context.WithoutCancel(r.Context()), gtid)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	}
}

// fxResource is one FX transfer: every leg's bank is its party.
func fxResource(f *fx.FX) partyResource[fx.Transfer] {
	return partyResource[fx.Transfer]{param: "gtid", check: func(id string) error { return ident.Check(ident.TxID, "gtid", id) },
		notFound: fx.NotFound, load: f.Get, parties: fxParties}
}

func fxParties(t fx.Transfer) []string {
	banks := make([]string, 0, len(t.Legs))
	for _, g := range t.Legs {
		banks = append(banks, g.BankID)
	}
	return banks
}

// fxParty lets the operator and the banks of an FX transfer's legs
// refund it; anyone else gets GTID_NOT_FOUND, as for a gtid that does not
// exist (spec 004: 404 for non-parties).
func (s *Server) fxParty(r *http.Request, f *fx.FX, gtid string) error {
	p := principalFrom(r)
	if p.Scope == signing.ScopeOperator {
		return nil
	}
	t, err := f.Get(r.Context(), gtid)
	if err != nil {
		return err
	}
	if p.Scope == signing.ScopeParticipant && slices.Contains(fxParties(t), p.BankID) {
		return nil
	}
	return fx.NotFound(gtid)
}
