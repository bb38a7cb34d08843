package gateway

import (
	"context"
	"net/http"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/signing"
)

// The bank-side APIs (spec 004 Bank 顧客API / 行員API / 着金フィルタAPI;
// docs/bank-api.md): each bank's adapter serves its customers' and
// tellers' routes (adapter.BankRoutes, the one list of them); the gateway
// mounts them behind the bank's own credentials — the perimeter's API key
// (X-Api-Key or Authorization: Bearer) must name the participant bank of
// the path (401 UNAUTHORIZED without valid credentials, 403
// CROSS_PARTICIPANT_SCOPE for another bank or the operator) — and hands
// the request to that bank's adapter. It also serves ZC's side of a held
// credit, POST /internal/transfers/{txid}/resume-credit.

// CreditResumer applies a payee bank's decision on a credit its filter
// held (orchestrator ResumeCredit). The gateway serves resume-credit when
// its Coordinator implements it (the orchestrator does).
type CreditResumer interface {
	ResumeCredit(ctx context.Context, txid string, req bankapi.ResumeCreditRequest) (bankapi.ResumeCreditResponse, error)
}

// AccountVerifier asks a payee bank to verify an account (orchestrator
// VerifyAccount; spec 004 account-verify).
type AccountVerifier interface {
	VerifyAccount(ctx context.Context, requester string, req orchestrator.AccountVerifyRequest) (orchestrator.AccountVerification, error)
	AccountVerificationByID(ctx context.Context, requester, id string) (orchestrator.AccountVerification, error)
}

// BankCleaner sends cleanup-bank to a participant that left (orchestrator
// CleanupBank).
type BankCleaner interface {
	CleanupBank(ctx context.Context, bankID, requestedBy string) (bankapi.BankResponse, error)
}

// CleanupBody is the body of POST /api/participants/{bank_id}/cleanup.
type CleanupBody struct {
	RequestedBy string `json:"requested_by"`
}

// bankRoutes are the bank-side routes (with Adapters configured) and
// resume-credit (with a CreditResumer coordinator).
func (s *Server) bankRoutes() []route {
	var t []route
	if s.cfg.Adapters != nil {
		for _, br := range adapter.BankRoutes() {
			params := []param{
				{name: adapter.HeaderBankID, in: "header", description: "the bank (optional; must equal the path's bank_id)"}}
			switch br.Role {
			case adapter.RoleCustomer:
				params = append(params, param{name: adapter.HeaderCustomerID, in: "header", required: true,
					description: "the customer the bank's channel authenticated"})
			case adapter.RoleTeller:
				params = append(params, param{name: adapter.HeaderTellerID, in: "header", required: true,
					description: "the teller the bank authenticated"})
			case adapter.RoleFilter:
				params = append(params,
					param{name: adapter.HeaderTellerID, in: "header", description: "a teller (any account); or"},
					param{name: adapter.HeaderCustomerID, in: "header", description: "a customer (its own accounts)"})
			}
			for _, q := range br.Query {
				params = append(params, param{name: q, in: "query"})
			}
			body := br.Response
			if br.ZCQuery {
				body = QueryResponse{}
			}
			o := op{summary: "Bank " + br.Role + " API: " + br.Summary, auth: authBank, params: params, request: br.Request,
				responses: []response{{status: br.Status, body: body}}, errors: []int{400, 401, 403, 404, 409, 415, 422, 502}}
			t = append(t, route{pattern: br.Pattern(), handler: s.perimeter(s.bankSide), ops: []op{o}})
		}
	}
	if v, ok := s.cfg.Coordinator.(AccountVerifier); ok {
		t = append(t,
			route{pattern: "POST /api/account-verify", handler: s.perimeter(s.jsonBody(s.accountVerify(v))), ops: []op{{
				summary: "Verify a payee account at its bank (spec 004 account-verify): exists, and how well a name matches; the stored name is never returned",
				auth:    authAPI, request: orchestrator.AccountVerifyRequest{},
				responses: []response{{status: 201, body: orchestrator.AccountVerification{}}},
				errors:    []int{400, 401, 404, 415, 502, 503}}}},
			route{pattern: "GET /api/account-verify/{verification_id}", handler: s.perimeter(partyQuery(s, verificationResource(v), writeView)), ops: []op{{
				summary: "One account verification (the requester's own; any for the operator)", auth: authAPI, params: []param{purposeParam},
				responses: []response{{status: 200, body: orchestrator.AccountVerification{}}}, errors: apiErrors}}})
	}
	if c, ok := s.cfg.Coordinator.(BankCleaner); ok {
		t = append(t, route{pattern: "POST /api/participants/{bank_id}/cleanup", handler: s.perimeter(s.operatorOnly(s.jsonBody(s.cleanupBank(c)))), ops: []op{{
			summary: "Clean up a participant that left (spec 004 cleanup-bank): inactive, no transfer in motion; the bank deletes its bank-side data",
			auth:    authOperator, request: CleanupBody{},
			responses: []response{{status: 200, body: bankapi.BankResponse{}}},
			errors:    []int{400, 401, 403, 404, 409, 415, 502, 503}}}})
	}
	if c, ok := s.cfg.Coordinator.(CreditResumer); ok {
		t = append(t, route{pattern: "POST /internal/transfers/{txid}/resume-credit", handler: s.cron(s.jsonBody(s.resumeCredit(c))), ops: []op{{
			summary: "Resume a credit the payee bank's filter held (spec 004): approved settles it, rejected ends it in FAILED_EXECUTION and refunds the payer",
			auth:    authCron, request: bankapi.ResumeCreditRequest{},
			responses: []response{{status: 200, body: bankapi.ResumeCreditResponse{}}},
			errors:    []int{400, 403, 404, 409, 415}}}})
	}
	return t
}

// bankSide checks that the authenticated caller is the path's bank and
// hands the request to that bank's adapter.
func (s *Server) bankSide(w http.ResponseWriter, r *http.Request) {
	bank := r.PathValue("bank_id")
	if p := principalFrom(r); p.Scope != signing.ScopeParticipant || p.BankID != bank {
		loggerFrom(r).WarnContext(r.Context(), "http.bank_api_refused", "bank_id", bank, "scope", p.Scope, "principal_bank_id", p.BankID)
		writeError(w, r, domainerr.New("CROSS_PARTICIPANT_SCOPE", "the bank-side APIs need the credentials of the bank "+bank,
			map[string]any{"bank_id": bank, "scope": p.Scope}))
		return
	}
	a, ok := s.cfg.Adapters[bank]
	if !ok {
		writeError(w, r, domainerr.New("PARTICIPANT_NOT_FOUND", "no adapter serves bank "+bank, map[string]any{"bank_id": bank}))
		return
	}
	a.BankAPI().ServeHTTP(w, r)
}

func (s *Server) resumeCredit(c CreditResumer) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		var b bankapi.ResumeCreditRequest
		if err := decodeStrict(body, &b); err != nil {
			writeError(w, r, err)
			return
		}
		out, err := c.ResumeCredit(context.WithoutCancel(r.Context()), r.PathValue("txid"), b)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// requesterOf names the caller of a participant-or-operator route: its
// bank id, or "" for the operator.
func requesterOf(r *http.Request) string {
	if p := principalFrom(r); p.Scope == signing.ScopeParticipant {
		return p.BankID
	}
	return ""
}

func (s *Server) accountVerify(v AccountVerifier) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		var b orchestrator.AccountVerifyRequest
		if err := decodeStrict(body, &b); err != nil {
			writeError(w, r, err)
			return
		}
		requester := requesterOf(r)
		if requester == "" {
			requester = "OPS"
		}
		out, err := v.VerifyAccount(r.Context(), requester, b)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusCreated, out)
	}
}

// verificationResource is one account verification: the bank that asked
// for it is its only party.
func verificationResource(v AccountVerifier) partyResource[orchestrator.AccountVerification] {
	return partyResource[orchestrator.AccountVerification]{param: "verification_id",
		notFound: orchestrator.AccountVerificationNotFound,
		load: func(ctx context.Context, id string) (orchestrator.AccountVerification, error) {
			return v.AccountVerificationByID(ctx, "", id)
		},
		parties: func(a orchestrator.AccountVerification) []string { return []string{a.RequesterBankID} }}
}

func (s *Server) cleanupBank(c BankCleaner) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		var b CleanupBody
		if err := decodeStrict(body, &b); err != nil {
			writeError(w, r, err)
			return
		}
		out, err := c.CleanupBank(context.WithoutCancel(r.Context()), r.PathValue("bank_id"), b.RequestedBy)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}
