package gateway

import (
	"context"
	"net/http"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/ident"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/signing"
)

// HTLCs is the HTLC lane (coordinator/orchestrator, docs/htlc.md). The
// gateway serves /api/htlc/* when its Coordinator implements it (the
// orchestrator does).
type HTLCs interface {
	CreateHTLC(ctx context.Context, req orchestrator.HtlcCreate, idempotencyKey, issuer string) (orchestrator.HtlcView, error)
	GetHTLC(ctx context.Context, htlcID, reader string) (orchestrator.HtlcView, error)
	ClaimHTLC(ctx context.Context, htlcID string, req orchestrator.HtlcClaim, issuer string) (orchestrator.HtlcView, error)
	CrossChainLockHTLC(ctx context.Context, htlcID string, req orchestrator.HtlcCrossChainLock, issuer string) (orchestrator.HtlcView, error)
	OnchainFulfillHTLC(ctx context.Context, htlcID string, req orchestrator.HtlcOnchainFulfillment, issuer string) (orchestrator.HtlcView, error)
	ClaimHTLCByConditions(ctx context.Context, htlcID string, req orchestrator.HtlcConditionsClaim, issuer string) (orchestrator.HtlcView, error)
	ClaimHTLCByAttestation(ctx context.Context, htlcID string, req orchestrator.HtlcAttestationClaim, issuer string) (orchestrator.HtlcView, error)
}

var _ HTLCs = (*orchestrator.Orchestrator)(nil)

// HTLCCreateRequest is the body of POST /api/htlc/create.
type HTLCCreateRequest struct {
	orchestrator.HtlcCreate
	IdempotencyKey string `json:"idempotency_key"`
}

// htlcRoutes are spec 001 ch. 15's endpoints for participant banks: the
// payer creates (POST /api/htlc/create, the endpoint USE_HTLC_ENDPOINT
// points at), the payee claims with the preimage, either party relays the
// cross-chain lock and the watcher's release, and both read it.
func (s *Server) htlcRoutes() []route {
	h, ok := s.cfg.Coordinator.(HTLCs)
	if !ok {
		return nil
	}
	errs := []int{400, 401, 403, 404, 409, 415, 502, 503}
	view := []response{{status: 200, body: orchestrator.HtlcView{}}}
	return []route{
		{pattern: "POST /api/htlc/create", handler: s.perimeter(s.jsonBody(s.postHTLCCreate(h))), ops: []op{{
			summary: "Create an HTLC (spec 001 §15.3): hashlock (SHA-256) and timelock; the payer bank is the authenticated participant",
			auth:    authParticipant, request: HTLCCreateRequest{},
			params: []param{{name: "Idempotency-Key", in: "header", description: "used when the body has no idempotency_key"}},
			responses: []response{{status: 201, description: "accepted (RECEIVED; the lock follows)", body: orchestrator.HtlcView{}},
				{status: 200, description: "replay of the same key and body (Idempotent-Replayed: true)", body: orchestrator.HtlcView{}, replay: true}},
			errors: []int{400, 401, 403, 409, 415, 422, 503}}}},
		{pattern: "GET /api/htlc/{htlc_id}", handler: s.perimeter(partyQuery(s, htlcResource(h), writeView)), ops: []op{{
			summary: "An HTLC as its parties see it, or the operator (404 for anyone else)", auth: authAPI, params: []param{purposeParam},
			responses: view, errors: apiErrors}}},
		{pattern: "POST /api/htlc/{htlc_id}/claim", handler: s.perimeter(s.jsonBody(s.postHTLC(func(ctx context.Context, r *http.Request, body []byte, issuer string) (orchestrator.HtlcView, error) {
			var req orchestrator.HtlcClaim
			if err := decodeStrict(body, &req); err != nil {
				return orchestrator.HtlcView{}, err
			}
			return h.ClaimHTLC(ctx, r.PathValue("htlc_id"), req, issuer)
		}))), ops: []op{{
			summary: "Claim an HTLC with its preimage (spec 001 §13.5, §15.4) as the payee bank; the preimage is checked and never stored. " +
				"A repeated claim answers the same (Idempotent-Replayed: true)",
			auth: authParticipant, request: orchestrator.HtlcClaim{},
			responses: []response{{status: 200, body: orchestrator.HtlcView{}}, {status: 200, description: "already claimed", body: orchestrator.HtlcView{}, replay: true}},
			errors:    errs}}},
		{pattern: "POST /api/htlc/{htlc_id}/claim-by-conditions", handler: s.perimeter(s.jsonBody(s.postHTLC(func(ctx context.Context, r *http.Request, body []byte, issuer string) (orchestrator.HtlcView, error) {
			var req orchestrator.HtlcConditionsClaim
			if err := decodeStrict(body, &req); err != nil {
				return orchestrator.HtlcView{}, err
			}
			return h.ClaimHTLCByConditions(ctx, r.PathValue("htlc_id"), req, issuer)
		}))), ops: []op{{
			summary: "Claim an HTLC by its condition expression (spec 001 §15.5, claimHtlcByConditions) as the payee bank: the presented attestations are recorded, " +
				"the expression decided; an equivocating template opens an ATTESTATION_EQUIVOCATION Case",
			auth: authParticipant, request: orchestrator.HtlcConditionsClaim{},
			responses: []response{{status: 200, body: orchestrator.HtlcView{}}, {status: 200, description: "already claimed", body: orchestrator.HtlcView{}, replay: true}},
			errors:    errs}}},
		{pattern: "POST /api/htlc/{htlc_id}/claim-by-attestation", handler: s.perimeter(s.jsonBody(s.postHTLC(func(ctx context.Context, r *http.Request, body []byte, issuer string) (orchestrator.HtlcView, error) {
			var req orchestrator.HtlcAttestationClaim
			if err := decodeStrict(body, &req); err != nil {
				return orchestrator.HtlcView{}, err
			}
			return h.ClaimHTLCByAttestation(ctx, r.PathValue("htlc_id"), req, issuer)
		}))), ops: []op{{
			summary: "Claim an HTLC by one signed PASS attestation under its condition_template_id (spec 003 HtlcContracts, claimHtlcByAttestation) as the payee bank",
			auth:    authParticipant, request: orchestrator.HtlcAttestationClaim{},
			responses: []response{{status: 200, body: orchestrator.HtlcView{}}, {status: 200, description: "already claimed", body: orchestrator.HtlcView{}, replay: true}},
			errors:    errs}}},
		{pattern: "POST /api/htlc/{htlc_id}/cross-chain-lock", handler: s.perimeter(s.jsonBody(s.postHTLC(func(ctx context.Context, r *http.Request, body []byte, issuer string) (orchestrator.HtlcView, error) {
			var req orchestrator.HtlcCrossChainLock
			if err := decodeStrict(body, &req); err != nil {
				return orchestrator.HtlcView{}, err
			}
			return h.CrossChainLockHTLC(ctx, r.PathValue("htlc_id"), req, issuer)
		}))), ops: []op{{
			summary: "Record the on-chain lock of a cross-chain HTLC: HTLC_ONCHAIN_PENDING, custody handed to CHAIN:default (spec 000 §5.2 handoff #4)",
			auth:    authParticipant, request: orchestrator.HtlcCrossChainLock{}, responses: view, errors: errs}}},
		{pattern: "POST /api/htlc/{htlc_id}/onchain-fulfillment", handler: s.perimeter(s.jsonBody(s.postHTLC(func(ctx context.Context, r *http.Request, body []byte, issuer string) (orchestrator.HtlcView, error) {
			var req orchestrator.HtlcOnchainFulfillment
			if err := decodeStrict(body, &req); err != nil {
				return orchestrator.HtlcView{}, err
			}
			return h.OnchainFulfillHTLC(ctx, r.PathValue("htlc_id"), req, issuer)
		}))), ops: []op{{
			summary: "Relay the watcher's observation that the on-chain escrow was released with the preimage: the chain hands the HTLC back to ZC, which settles it",
			auth:    authParticipant, request: orchestrator.HtlcOnchainFulfillment{}, responses: view, errors: errs}}},
	}
}

// participantOnly answers 403 for an authenticated caller that is not a
// participant bank and returns its bank_id otherwise.
func participantOnly(w http.ResponseWriter, r *http.Request) (string, bool) {
	p := principalFrom(r)
	if p.Scope != signing.ScopeParticipant {
		writeErrorStatus(w, r, http.StatusForbidden, domainerr.New("UNAUTHORIZED", "only a participant bank may act on an HTLC", map[string]any{"scope": p.Scope}))
		return "", false
	}
	return p.BankID, true
}

func (s *Server) postHTLCCreate(h HTLCs) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		issuer, ok := participantOnly(w, r)
		if !ok {
			return
		}
		body, err := readBody(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		var req HTLCCreateRequest
		if err := decodeStrict(body, &req); err != nil {
			writeError(w, r, err)
			return
		}
		key, err := idempotencyKey(r, req.IdempotencyKey)
		if err != nil {
			writeError(w, r, err)
			return
		}
		v, err := h.CreateHTLC(context.WithoutCancel(r.Context()), req.HtlcCreate, key, issuer)
		if err != nil {
			writeError(w, r, err)
			return
		}
		status := http.StatusCreated
		if v.Replayed {
			status = http.StatusOK
			w.Header().Set("Idempotent-Replayed", "true")
		}
		loggerFrom(r).InfoContext(r.Context(), "htlc.accepted", "htlc_id", v.HtlcID, "txid", v.TxID, "issuer", issuer, "replayed", v.Replayed)
		writeJSON(w, status, v)
	}
}

// htlcResource is one HTLC: its payer and payee banks are its parties.
func htlcResource(h HTLCs) partyResource[orchestrator.HtlcView] {
	return partyResource[orchestrator.HtlcView]{param: "htlc_id",
		check:    func(id string) error { return ident.Check(ident.TxID, "htlc_id", id) },
		notFound: orchestrator.HtlcNotFound,
		load:     func(ctx context.Context, id string) (orchestrator.HtlcView, error) { return h.GetHTLC(ctx, id, "") },
		parties:  func(v orchestrator.HtlcView) []string { return []string{v.PayerBankID, v.PayeeBankID} }}
}

// postHTLC serves an HTLC action for a participant: fn gets the body (its
// secrets are never logged) and the issuer.
func (s *Server) postHTLC(fn func(ctx context.Context, r *http.Request, body []byte, issuer string) (orchestrator.HtlcView, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		issuer, ok := participantOnly(w, r)
		if !ok {
			return
		}
		body, err := readBody(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		v, err := fn(context.WithoutCancel(r.Context()), r, body, issuer)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if v.Replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		writeJSON(w, http.StatusOK, v)
	}
}
