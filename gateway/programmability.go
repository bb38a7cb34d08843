package gateway

import (
	"net/http"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/conditions"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/mandate"
	"github.com/zcgw/zcgw/coordinator/signing"
)

// Programmability routes (spec 000 ch. 11, 001 §15.5.4; docs/programmability.md):
// the read-only dry runs POST /api/conditions/validate, /simulate and
// /api/mandates/check, and the writes that feed them (templates,
// attestations, mandates).

// ConditionExprRequest is the body of POST /api/conditions/validate:
// condition_expr_json is the expression as a JSON string (as
// HtlcContracts.condition_expr_json holds it), so a refusal's offset is a
// byte offset into that string.
type ConditionExprRequest struct {
	ConditionExprJSON string `json:"condition_expr_json"`
}

// SimulateRequest is the body of POST /api/conditions/simulate. With
// satisfied (even empty) the evaluation is pure: a leaf is true exactly
// when its template is listed. Without it (operator only) the leaves are
// resolved live — recorded attestations about subject, ledger predicates
// at the clock's now — still without writing anything.
type SimulateRequest struct {
	ConditionExprJSON string    `json:"condition_expr_json"`
	Satisfied         *[]string `json:"satisfied,omitempty"`
	Subject           string    `json:"subject,omitempty"`
}

// MandateRevokeResponse is POST /api/mandates/{mandate_id}/revoke's answer:
// Revoked is false when the mandate was already revoked (nothing changed).
type MandateRevokeResponse struct {
	MandateID string `json:"mandate_id"`
	Revoked   bool   `json:"revoked"`
	Status    string `json:"status"`
	RevokedAt string `json:"revoked_at"`
}

// AttestationRecorded is POST /api/attestations' answer.
type AttestationRecorded struct {
	AttestationID  string `json:"attestation_id"`
	TemplateID     string `json:"template_id"`
	Subject        string `json:"subject"`
	VerifiedResult string `json:"verified_result"`
}

func (s *Server) programmabilityRoutes() []route {
	exprErrors := []int{400, 401, 403, 415}
	return []route{
		{pattern: "POST /api/conditions/validate", handler: s.perimeter(s.jsonBody(s.validateConditions)), ops: []op{{
			summary: "Dry run: check a condition expression's structure and list the templates it references (spec 000 §11.5); writes nothing",
			auth:    authAPI, request: ConditionExprRequest{},
			responses: []response{{status: 200, body: conditions.Validation{}}}, errors: exprErrors}}},
		{pattern: "POST /api/conditions/simulate", handler: s.perimeter(s.jsonBody(s.simulateConditions)), ops: []op{{
			summary: "Dry run: what a condition expression would decide and why, each clause's value (spec 000 §11.5); writes nothing",
			auth:    authAPI, request: SimulateRequest{},
			responses: []response{{status: 200, body: conditions.Decision{}}}, errors: exprErrors}}},
		{pattern: "POST /api/conditions/templates", handler: s.perimeter(s.operatorOnly(s.jsonBody(s.registerTemplate))), ops: []op{{
			summary: "Whitelist a condition template (attester scope and quorum, or a ledger predicate)", auth: authOperator,
			request: conditions.Template{}, responses: []response{{status: 201, body: conditions.Template{}}}, errors: exprErrors}}},
		{pattern: "POST /api/attestations", handler: s.perimeter(s.jsonBody(s.recordAttestation)), ops: []op{{
			summary: "Record an attester's signed attestation (KeyRegistry ATTESTER key in the template's scope, fresh, once per key and nonce)",
			auth:    authAPI, request: conditions.Attestation{},
			responses: []response{{status: 201, body: AttestationRecorded{}}}, errors: []int{400, 401, 403, 404, 409, 415}}}},
		{pattern: "POST /api/mandates", handler: s.perimeter(s.jsonBody(s.createMandate)), ops: []op{{
			summary: "Create a mandate (a participant creates its own: payer_bank_id is the caller)", auth: authAPI,
			request: mandate.Mandate{}, responses: []response{{status: 201, body: mandate.Mandate{}}}, errors: []int{400, 401, 403, 404, 415}}}},
		{pattern: "POST /api/mandates/check", handler: s.perimeter(s.jsonBody(s.checkMandate)), ops: []op{{
			summary: "Dry run: would a transfer be allowed under a mandate, and each link's verdict (spec 000 §11.5); writes nothing",
			auth:    authAPI, request: mandate.Request{},
			responses: []response{{status: 200, body: mandate.Verdict{}}}, errors: []int{400, 401, 403, 415}}}},
		{pattern: "POST /api/mandates/{mandate_id}/revoke", handler: s.perimeter(s.revokeMandate), ops: []op{{
			summary: "Revoke a mandate (not retroactive; its sub-mandates stop working too)", auth: authAPI,
			responses: []response{{status: 200, body: MandateRevokeResponse{}}}, errors: []int{400, 401, 403, 404}}}},
	}
}

func (s *Server) evaluator() *conditions.Evaluator {
	return conditions.NewEvaluator(s.cfg.DB, s.clk, nil)
}

func (s *Server) mandates() *mandate.Mandates { return mandate.New(s.cfg.DB, s.clk) }

// readJSON reads and strictly decodes the request body into v.
func readJSON(r *http.Request, v any) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	return decodeStrict(body, v)
}

func (s *Server) validateConditions(w http.ResponseWriter, r *http.Request) {
	var req ConditionExprRequest
	if err := readJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	v, err := s.evaluator().Validate(r.Context(), req.ConditionExprJSON)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) simulateConditions(w http.ResponseWriter, r *http.Request) {
	var req SimulateRequest
	if err := readJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	in := conditions.Inputs{Subject: req.Subject}
	if req.Satisfied != nil {
		in.Assume = append([]string{}, *req.Satisfied...)
	} else if p := principalFrom(r); p.Scope != signing.ScopeOperator {
		writeError(w, r, domainerr.New("CROSS_PARTICIPANT_SCOPE", "a live evaluation (no satisfied set) reads other parties' attestations: operator scope only",
			map[string]any{"scope": p.Scope, "required_scope": signing.ScopeOperator, "field": "satisfied"}))
		return
	}
	d, err := s.evaluator().Evaluate(r.Context(), req.ConditionExprJSON, in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) registerTemplate(w http.ResponseWriter, r *http.Request) {
	var t conditions.Template
	if err := readJSON(r, &t); err != nil {
		writeError(w, r, err)
		return
	}
	t.CreatedAt = ""
	out, err := conditions.NewTemplates(s.cfg.DB, s.clk).Register(r.Context(), t)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) recordAttestation(w http.ResponseWriter, r *http.Request) {
	var a conditions.Attestation
	if err := readJSON(r, &a); err != nil {
		writeError(w, r, err)
		return
	}
	if err := conditions.NewAttestations(s.cfg.DB, s.clk).Record(r.Context(), a); err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, AttestationRecorded{AttestationID: a.AttestationID, TemplateID: a.TemplateID, Subject: a.Subject,
		VerifiedResult: a.VerifiedResult})
}

// actor is the EntityStateLog actor of the caller.
func actor(p signing.Principal) string {
	if p.Scope == signing.ScopeParticipant {
		return "BANK_" + p.BankID
	}
	return "OPS"
}

func (s *Server) createMandate(w http.ResponseWriter, r *http.Request) {
	var m mandate.Mandate
	if err := readJSON(r, &m); err != nil {
		writeError(w, r, err)
		return
	}
	p := principalFrom(r)
	if p.Scope == signing.ScopeParticipant {
		if m.PayerBankID != "" && m.PayerBankID != p.BankID {
			writeErrorStatus(w, r, http.StatusForbidden, domainerr.New("UNAUTHORIZED", "a participant creates mandates for its own transfers only",
				map[string]any{"field": "payer_bank_id", "issuer": p.BankID}))
			return
		}
		m.PayerBankID = p.BankID
	}
	m.Status, m.RevokedAt, m.CreatedAt = "", "", ""
	out, err := s.mandates().Create(r.Context(), m, actor(p))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, out)
}

// ownMandate reads id for p: a participant sees only its own mandates,
// and another bank's answers exactly as a missing one.
func (s *Server) ownMandate(r *http.Request, p signing.Principal, id string) (mandate.Mandate, error) {
	if err := mandate.CheckID(id); err != nil {
		return mandate.Mandate{}, err
	}
	m, err := s.mandates().Get(r.Context(), id)
	if err == nil && p.Scope == signing.ScopeParticipant && m.PayerBankID != p.BankID {
		return mandate.Mandate{}, domainerr.New("MANDATE_NOT_FOUND", "mandate "+id+" does not exist", map[string]any{"mandate_id": id})
	}
	return m, err
}

func (s *Server) checkMandate(w http.ResponseWriter, r *http.Request) {
	var req mandate.Request
	if err := readJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	p := principalFrom(r)
	if p.Scope == signing.ScopeParticipant {
		if req.PayerBankID == "" {
			req.PayerBankID = p.BankID
		}
		_, err := s.ownMandate(r, p, req.MandateID)
		if domainerr.Has(err, "MANDATE_NOT_FOUND") {
			writeJSON(w, http.StatusOK, mandate.Verdict{ReasonCode: "MANDATE_NOT_FOUND", Why: req.MandateID + ": no such mandate",
				Links:     []mandate.Link{{MandateID: req.MandateID, ReasonCode: "MANDATE_NOT_FOUND", Why: "no such mandate"}},
				CheckedAt: clock.Stamp(s.clk.Now())})
			return
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
	}
	v, err := s.mandates().Check(r.Context(), req)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) revokeMandate(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r)
	id := r.PathValue("mandate_id")
	if _, err := s.ownMandate(r, p, id); err != nil {
		writeError(w, r, err)
		return
	}
	applied, err := s.mandates().Revoke(r.Context(), id, actor(p))
	if err != nil {
		writeError(w, r, err)
		return
	}
	m, err := s.mandates().Get(r.Context(), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, MandateRevokeResponse{MandateID: id, Revoked: applied, Status: m.Status, RevokedAt: m.RevokedAt})
}
