package dns

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// maxBody bounds an /internal/dns request body.
const maxBody = 64 << 10

// Request is the body of the /internal/dns/* endpoints (spec 004): kick and
// intraday-cutoff take business_date and currency (both optional: today in
// JST, JPY), settle and resume take cycle_id; fund takes cycle_id and
// optionally bank_id with amount; cancel takes cycle_id, reason and actor.
type Request struct {
	BusinessDate string `json:"business_date,omitempty"`
	Currency     string `json:"currency,omitempty"`
	CycleID      string `json:"cycle_id,omitempty"`
	BankID       string `json:"bank_id,omitempty"`
	Amount       int64  `json:"amount,omitempty"`
	Reason       string `json:"reason,omitempty"`
	Actor        string `json:"actor,omitempty"`
}

// DecodeRequest parses an /internal/dns/* body strictly: empty means {},
// unknown fields, trailing data, a malformed date, currency or cycle id are
// INVALID_REQUEST / INVALID_CURRENCY errors naming the field (and the byte
// offset for bad JSON). It never panics.
func DecodeRequest(body []byte) (Request, error) {
	var r Request
	if len(bytes.TrimSpace(body)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			details := map[string]any{}
			var syn *json.SyntaxError
			if errors.As(err, &syn) {
				details["offset"] = syn.Offset
			}
			return Request{}, domainerr.Wrap("INVALID_REQUEST", err, "request body is not a valid DNS request", details)
		}
		if dec.More() {
			return Request{}, domainerr.New("INVALID_REQUEST", "trailing data after the JSON object", map[string]any{"offset": dec.InputOffset()})
		}
	}
	if r.BusinessDate != "" {
		if _, err := clock.ParseBusinessDate(r.BusinessDate); err != nil {
			return Request{}, domainerr.New("INVALID_REQUEST", "business_date must be YYYY-MM-DD", map[string]any{"field": "business_date"})
		}
	}
	if r.Currency != "" {
		if err := checkCurrency(r.Currency); err != nil {
			return Request{}, err
		}
	}
	if r.CycleID != "" {
		if _, _, _, err := ParseCycleID(r.CycleID); err != nil {
			return Request{}, err
		}
	}
	if r.Amount < 0 {
		return Request{}, domainerr.New("INVALID_AMOUNT", "amount must be positive", map[string]any{"field": "amount"})
	}
	return r, nil
}

// FundResponse is the answer of fund: the resume's answer and the
// fundings made.
type FundResponse struct {
	SettleResponse
	Fundings []Funding `json:"fundings"`
}

// CancelResponse is the answer of cancel.
type CancelResponse struct {
	CycleID     string   `json:"cycle_id"`
	State       string   `json:"state"`
	Applied     bool     `json:"applied"`
	Released    []string `json:"released"`
	NextCycleID string   `json:"next_cycle_id,omitempty"`
}

// KickResponse is the answer of kick.
type KickResponse struct {
	CycleID      string     `json:"cycle_id"`
	State        string     `json:"state"`
	Applied      bool       `json:"applied"`
	TxCount      int        `json:"tx_count"`
	NetPositions []Position `json:"net_positions"`
}

// SettleResponse is the answer of settle, resume and (for the closed
// cycle) intraday-cutoff.
type SettleResponse struct {
	CycleID         string      `json:"cycle_id"`
	State           string      `json:"state"`
	IgsMode         string      `json:"igs_mode"`
	Applied         bool        `json:"applied"`
	PublicMessageID string      `json:"public_message_id,omitempty"`
	Shortfalls      []Shortfall `json:"shortfalls,omitempty"`
	Postings        []Posting   `json:"postings,omitempty"`
	NextCycleID     string      `json:"next_cycle_id,omitempty"`
}

func settleResponse(r SettleResult) SettleResponse {
	return SettleResponse{CycleID: r.Cycle.CycleID, State: r.Cycle.State, IgsMode: r.Cycle.IgsMode, Applied: r.Applied,
		PublicMessageID: r.Cycle.PublicMessageID, Shortfalls: r.Shortfalls, Postings: r.Postings}
}

// PositionsResponse is the answer of GET /internal/boj-positions.
type PositionsResponse struct {
	Positions []Account `json:"positions"`
}

// Handler serves POST /internal/dns/kick, /settle, /intraday-cutoff,
// /resume, /fund, /cancel and GET /internal/boj-positions. It checks no credentials: the
// gateway mounts it behind its internal-API check.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	post := func(path string, fn func(ctx context.Context, r Request) (any, error)) {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, req *http.Request) {
			body, err := io.ReadAll(io.LimitReader(req.Body, maxBody+1))
			if err == nil && len(body) > maxBody {
				err = domainerr.New("INVALID_REQUEST", "request body too large", map[string]any{"limit": maxBody})
			}
			var r Request
			if err == nil {
				r, err = DecodeRequest(body)
			}
			var out any
			if err == nil {
				out, err = fn(context.WithoutCancel(req.Context()), r)
			}
			if err != nil {
				b := domainerr.JSON(err, req.Header.Get("X-Request-Id"))
				writeJSON(w, b.Status, b)
				return
			}
			writeJSON(w, http.StatusOK, out)
		})
	}
	day := func(r Request) (string, string) {
		d, c := r.BusinessDate, r.Currency
		if d == "" {
			d = clock.BusinessDate(s.clk.Now())
		}
		if c == "" {
			c = "JPY"
		}
		return d, c
	}
	needCycle := func(r Request) error {
		if r.CycleID == "" {
			return domainerr.New("MISSING_FIELD", "cycle_id is required", map[string]any{"field": "cycle_id"})
		}
		return nil
	}
	post("/internal/dns/kick", func(ctx context.Context, r Request) (any, error) {
		d, c := day(r)
		var k KickResult
		err := s.db.Write(ctx, func(tx *store.Tx) (err error) {
			k, err = s.KickDayInTx(ctx, tx, d, c)
			return err
		})
		if err != nil {
			return nil, err
		}
		return KickResponse{CycleID: k.Cycle.CycleID, State: k.Cycle.State, Applied: k.Applied, TxCount: k.TxCount, NetPositions: k.Positions}, nil
	})
	post("/internal/dns/settle", func(ctx context.Context, r Request) (any, error) {
		if err := needCycle(r); err != nil {
			return nil, err
		}
		res, err := s.Settle(ctx, r.CycleID)
		return settleResponse(res), err
	})
	post("/internal/dns/resume", func(ctx context.Context, r Request) (any, error) {
		if err := needCycle(r); err != nil {
			return nil, err
		}
		res, err := s.Resume(ctx, r.CycleID)
		return settleResponse(res), err
	})
	post("/internal/dns/fund", func(ctx context.Context, r Request) (any, error) {
		if err := needCycle(r); err != nil {
			return nil, err
		}
		res, err := s.FundAndResume(ctx, r.CycleID, r.BankID, r.Amount)
		if res.Fundings == nil {
			res.Fundings = []Funding{}
		}
		return FundResponse{SettleResponse: settleResponse(res.Settle), Fundings: res.Fundings}, err
	})
	post("/internal/dns/cancel", func(ctx context.Context, r Request) (any, error) {
		if err := needCycle(r); err != nil {
			return nil, err
		}
		res, err := s.Cancel(ctx, r.CycleID, r.Reason, r.Actor)
		if res.Released == nil {
			res.Released = []string{}
		}
		return CancelResponse{CycleID: res.Cycle.CycleID, State: res.Cycle.State, Applied: res.Applied,
			Released: res.Released, NextCycleID: res.Next.CycleID}, err
	})
	post("/internal/dns/intraday-cutoff", func(ctx context.Context, r Request) (any, error) {
		d, c := day(r)
		res, err := s.IntradayCutoff(ctx, d, c)
		out := settleResponse(res.Settle)
		out.NextCycleID = res.Next.CycleID
		return out, err
	})
	mux.HandleFunc("GET /internal/boj-positions", func(w http.ResponseWriter, req *http.Request) {
		acc, err := s.Accounts(req.Context())
		if err != nil {
			b := domainerr.JSON(err, req.Header.Get("X-Request-Id"))
			writeJSON(w, b.Status, b)
			return
		}
		if acc == nil {
			acc = []Account{}
		}
		writeJSON(w, http.StatusOK, PositionsResponse{Positions: acc})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
