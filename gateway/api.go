package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/ident"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/strictjson"
)

// Schema versions of POST /api/transfers (spec 004 スキーマ進化: the
// current generation n and the previous n-1 are accepted, nothing else).
const (
	SchemaCurrent  = "1.1"
	SchemaPrevious = "1.0"
)

// MaxAPIBodyBytes bounds an /api request body.
const MaxAPIBodyBytes = 1 << 16

// TransferRequest is the body of POST /api/transfers: the PaymentInitiated
// of spec 001 §13.1 plus idempotency_key and schema_version.
type TransferRequest struct {
	orchestrator.PaymentInitiated
	IdempotencyKey string `json:"idempotency_key"`
}

func errNotFoundRoute(r *http.Request) error {
	return domainerr.New("NOT_FOUND", "no such route", map[string]any{"method": r.Method, "path": r.URL.Path})
}

func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxAPIBodyBytes+1))
	if err != nil {
		return nil, domainerr.Wrap("INVALID_REQUEST", err, "cannot read the request body", nil)
	}
	if len(b) > MaxAPIBodyBytes {
		return nil, domainerr.New("INVALID_REQUEST", fmt.Sprintf("request body exceeds %d bytes", MaxAPIBodyBytes), nil)
	}
	return b, nil
}

// decodeStrict decodes one JSON object with coordinator/strictjson's rules,
// refusing unknown fields too (problem, field and byte offset in details).
func decodeStrict(body []byte, v any) error {
	return strictjson.Decode(body, v, strictjson.Options{DisallowUnknownFields: true})
}

// CheckSchemaVersion accepts n and n-1 and refuses anything else,
// explicitly (never a silent fallback to an old interpretation).
func CheckSchemaVersion(v string) error {
	switch v {
	case SchemaCurrent, SchemaPrevious:
		return nil
	case "":
		return domainerr.New("MISSING_FIELD", "schema_version is required", map[string]any{"field": "schema_version",
			"supported": []string{SchemaCurrent, SchemaPrevious}})
	}
	return domainerr.New("INVALID_REQUEST", "schema_version "+strconv.Quote(v)+" is not accepted",
		map[string]any{"field": "schema_version", "supported": []string{SchemaCurrent, SchemaPrevious}})
}

// postTransfer is POST /api/transfers. The issuer is the authenticated
// participant (an operator cannot originate a transfer); the first answer
// is 201, a replay of the same key and body 200 with the same body and
// Idempotent-Replayed: true.
func (s *Server) postTransfer(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r)
	body, err := readBody(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req TransferRequest
	if err := decodeStrict(body, &req); err != nil {
		writeError(w, r, err)
		return
	}
	if err := CheckSchemaVersion(req.SchemaVersion); err != nil {
		writeError(w, r, err)
		return
	}
	key, err := idempotencyKey(r, req.IdempotencyKey)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := orchestrator.CheckIdentifiers(req.PaymentInitiated); err != nil {
		writeError(w, r, err)
		return
	}
	issuer := p.BankID
	if p.Scope != signing.ScopeParticipant { // authenticated, not allowed: 403
		writeErrorStatus(w, r, http.StatusForbidden, domainerr.New("UNAUTHORIZED", "only a participant bank may originate a transfer", map[string]any{"scope": p.Scope}))
		return
	}
	// A client-chosen txid lives in its payer's namespace, so it can
	// never collide with another pair's transfer: the answer outside it
	// is decided before any lookup and says nothing about existence.
	if req.TxID != "" && !ident.InNamespace(req.TxID, issuer) {
		writeError(w, r, orchestrator.ErrTxIDNotUsable(issuer))
		return
	}
	res, err := s.cfg.Coordinator.Submit(r.Context(), req.PaymentInitiated, key, issuer)
	if err != nil {
		writeError(w, r, err)
		return
	}
	status := http.StatusCreated
	if res.Replayed {
		status = http.StatusOK
		w.Header().Set("Idempotent-Replayed", "true")
	}
	loggerFrom(r).InfoContext(r.Context(), "transfer.accepted", "txid", res.TxID, "lane", res.Lane, "issuer", issuer, "replayed", res.Replayed)
	writeJSON(w, status, res)
}

func (s *Server) getTransaction(w http.ResponseWriter, r *http.Request, sub subject, v *orchestrator.View) {
	q := NewQueryResponse(*v, s.cfg.FreshnessRed)
	if s.cfg.CorePostings != nil {
		cp, err := corePosting(r.Context(), s.cfg.CorePostings, *v)
		if err != nil {
			writeError(w, r, fmt.Errorf("gateway: core posting of %s: %w", v.TxID, err))
			return
		}
		q.CorePosting = cp
	}
	b, err := json.Marshal(q)
	if err != nil {
		writeError(w, r, fmt.Errorf("gateway: encode query response: %w", err))
		return
	}
	b, _ = viewerOf(sub, v).Filter(b)
	writeRaw(w, http.StatusOK, b)
}

// Event is one FinalityLog entry of a transfer's chain.
type Event struct {
	EventSeq   int64           `json:"event_seq"`
	EventType  string          `json:"event_type"`
	StateFrom  string          `json:"state_from,omitempty"`
	StateTo    string          `json:"state_to"`
	Payload    json.RawMessage `json:"payload"`
	OccurredAt string          `json:"occurred_at"`
	LogID      string          `json:"log_id"`
	EntryHash  string          `json:"entry_hash"`
	PrevHash   string          `json:"prev_hash"`
	// Redacted is true when members the reader may not see were removed
	// from Payload (Visibility): entry_hash no longer verifies over it
	// (GET .../verify checks the stored chain).
	Redacted bool `json:"redacted,omitempty"`
}

func (s *Server) getEvents(w http.ResponseWriter, r *http.Request, sub subject, v *orchestrator.View) {
	var out []Event
	viewer := viewerOf(sub, v)
	err := s.cfg.DB.Read(r.Context(), func(tx *store.Tx) error {
		rows, err := tx.QueryContext(r.Context(), `SELECT event_seq, event_type, COALESCE(state_from,''), state_to, payload_json, occurred_at,
			log_id, COALESCE(entry_hash,''), COALESCE(prev_hash,'') FROM FinalityLog WHERE txid = ? ORDER BY event_seq`, v.TxID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e Event
			var payload string
			if err := rows.Scan(&e.EventSeq, &e.EventType, &e.StateFrom, &e.StateTo, &payload, &e.OccurredAt, &e.LogID, &e.EntryHash, &e.PrevHash); err != nil {
				return err
			}
			e.Payload = json.RawMessage(payload)
			if !json.Valid(e.Payload) {
				e.Payload, _ = json.Marshal(payload)
			}
			e.Payload, e.Redacted = viewer.Filter(e.Payload)
			out = append(out, e)
		}
		return rows.Err()
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	if out == nil {
		out = []Event{}
	}
	writeJSON(w, http.StatusOK, EventsResponse{TxID: v.TxID, Events: out})
}

// VerifyResponse is GET /api/transactions/{txid}/verify.
type VerifyResponse struct {
	TxID    string          `json:"txid"`
	ChainID string          `json:"chain_id"`
	Entries int             `json:"entries"`
	Intact  bool            `json:"intact"`
	Break   *finality.Break `json:"break,omitempty"`
}

func (s *Server) verifyChain(w http.ResponseWriter, r *http.Request, _ subject, v *orchestrator.View) {
	rep, err := finality.VerifyChain(r.Context(), s.cfg.DB, v.TxID)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, VerifyResponse{TxID: v.TxID, ChainID: rep.ChainID, Entries: rep.Entries, Intact: rep.OK(), Break: rep.Break})
}

// TxSummary is one row of the operator's transaction list.
type TxSummary struct {
	TxID        string `json:"txid"`
	Lane        string `json:"lane"`
	State       string `json:"state"`
	ReasonCode  string `json:"reason_code,omitempty"`
	AmountValue int64  `json:"amount_value"`
	PayerBankID string `json:"payer_bank_id"`
	PayeeBankID string `json:"payee_bank_id"`
	UpdatedAt   string `json:"updated_at"`
}

// listTransactions is the operator's feed: GET /api/transactions
// [?state=S][&limit=N] (newest first, limit default 100, at most 1000).
func (s *Server) listTransactions(w http.ResponseWriter, r *http.Request, _ subject, _ *orchestrator.View) {
	limit := 100
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, r, domainerr.New("INVALID_REQUEST", "limit must be 1..1000", map[string]any{"field": "limit"}))
			return
		}
		limit = n
	}
	state := r.URL.Query().Get("state")
	out := []TxSummary{}
	err := s.cfg.DB.Read(r.Context(), func(tx *store.Tx) error {
		rows, err := tx.QueryContext(r.Context(), `SELECT txid, lane, state, COALESCE(reason_code,''), amount_value, payer_bank_id, payee_bank_id, updated_at
			FROM Transactions WHERE (? = '' OR state = ?) ORDER BY updated_at DESC, txid LIMIT ?`, state, state, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var t TxSummary
			if err := rows.Scan(&t.TxID, &t.Lane, &t.State, &t.ReasonCode, &t.AmountValue, &t.PayerBankID, &t.PayeeBankID, &t.UpdatedAt); err != nil {
				return err
			}
			out = append(out, t)
		}
		return rows.Err()
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, TransactionsResponse{Transactions: out})
}

// Bank is one entry of the public GET /api/banks.
type Bank struct {
	BankID            string `json:"bank_id"`
	BankName          string `json:"bank_name"`
	IsActive          bool   `json:"is_active"`
	ParticipationMode string `json:"participation_mode"`
}

// listBanks is public among authenticated callers (spec 004 lists
// /api/banks among the queries left open): directory data only.
func (s *Server) listBanks(w http.ResponseWriter, r *http.Request) {
	ps, err := s.participants().List(r.Context())
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := make([]Bank, 0, len(ps))
	for _, p := range ps {
		out = append(out, Bank{BankID: p.BankID, BankName: p.BankName, IsActive: p.IsActive, ParticipationMode: p.ParticipationMode})
	}
	writeJSON(w, http.StatusOK, BanksResponse{Banks: out})
}

func (s *Server) participants() *participants.Registry {
	if s.cfg.Participants != nil {
		return s.cfg.Participants
	}
	return participants.New(s.cfg.DB, s.clk)
}

func (s *Server) listParticipants(w http.ResponseWriter, r *http.Request, _ subject, _ *orchestrator.View) {
	ps, err := s.participants().List(r.Context())
	if err != nil {
		writeError(w, r, err)
		return
	}
	if ps == nil {
		ps = []participants.Participant{}
	}
	writeJSON(w, http.StatusOK, ParticipantsResponse{Participants: ps})
}

func (s *Server) getParticipant(w http.ResponseWriter, r *http.Request, _ subject, _ *orchestrator.View) {
	p, err := s.participants().Get(r.Context(), r.PathValue("bank_id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) createParticipant(w http.ResponseWriter, r *http.Request) {
	s.writeParticipant(w, r, func(ctx context.Context, p participants.Participant) (participants.Participant, error) {
		return s.participants().Create(ctx, p)
	}, http.StatusCreated)
}

func (s *Server) updateParticipant(w http.ResponseWriter, r *http.Request) {
	s.writeParticipant(w, r, func(ctx context.Context, p participants.Participant) (participants.Participant, error) {
		if p.BankID == "" {
			p.BankID = r.PathValue("bank_id")
		}
		if p.BankID != r.PathValue("bank_id") {
			return p, domainerr.New("INVALID_REQUEST", "bank_id in the body differs from the path", map[string]any{"field": "bank_id"})
		}
		return s.participants().UpdateProfile(ctx, p)
	}, http.StatusOK)
}

func (s *Server) writeParticipant(w http.ResponseWriter, r *http.Request, op func(context.Context, participants.Participant) (participants.Participant, error), status int) {
	body, err := readBody(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var p participants.Participant
	if err := decodeStrict(body, &p); err != nil {
		writeError(w, r, err)
		return
	}
	out, err := op(r.Context(), p)
	if err != nil {
		writeError(w, r, err)
		return
	}
	loggerFrom(r).InfoContext(r.Context(), "participant.saved", "bank_id", out.BankID, "operator", principalFrom(r).Name)
	writeJSON(w, status, out)
}

// idempotencyKey is the body's key, or the Idempotency-Key header.
func idempotencyKey(r *http.Request, body string) (string, error) {
	key, field := body, "idempotency_key"
	if key == "" {
		key, field = r.Header.Get("Idempotency-Key"), "Idempotency-Key"
	}
	if key == "" {
		return "", domainerr.New("MISSING_FIELD", "idempotency_key is required", map[string]any{"field": "idempotency_key"})
	}
	return key, ident.Check(ident.IdempotencyKey, field, key)
}
