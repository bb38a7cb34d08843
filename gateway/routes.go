package gateway

import (
	"net/http"
	"strings"

	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/params"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/sysmode"
	"github.com/zcgw/zcgw/jobs/dns"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

// route is one registration on the gateway's mux and its description in
// the OpenAPI document (GET /api/openapi.json). routeTable is the only
// place a route is registered: the mux and the document are both built
// from it, and TestOpenAPIMatchesTheMux checks the two agree (docs/gateway.md
// "How to add a route").
type route struct {
	// pattern is the http.ServeMux pattern ("METHOD /path/{param}", or a
	// bare "/prefix/" for a fallback).
	pattern string
	handler http.HandlerFunc
	// fallback marks a catch-all answering 404 NOT_FOUND in the catalog
	// shape: registered, not documented.
	fallback bool
	// ops describe the route. A route served by the gateway itself has one
	// op with path "" (the pattern's own path). A pattern that hands over
	// to another handler (bank ingress, DNS) lists that handler's concrete
	// paths instead, each with its own bodies.
	ops []op
}

// auth is how an operation authenticates its caller.
type auth int

const (
	authNone        auth = iota // probes and the document: no business data
	authAPI                     // X-Api-Key / Authorization: Bearer (participant or operator), or X-Cron-Secret as the operator
	authParticipant             // as authAPI, and the caller must be a participant bank
	authOperator                // as authAPI, and the caller must be the operator
	authCron                    // X-Cron-Secret (refused 403 without it)
	authIngress                 // the ZC egress signature (X-ZC-Key-Id, X-ZC-Sig-Time, X-ZC-Sig-Nonce, X-ZC-Signature)
	authBank                    // the path bank's own participant API key (X-Api-Key / Authorization: Bearer); bank-side APIs
)

// op is one documented operation.
type op struct {
	path    string // "" = the route pattern's path
	summary string
	auth    auth
	// params are query and header parameters; path parameters come from
	// the path's {names}.
	params []param
	// request is a value of the JSON request body's type (nil: no body);
	// bodyOptional when an empty body means {}.
	request      any
	bodyOptional bool
	// openBody: the handler ignores unknown members of the request body
	// (the bank ingress); elsewhere they are refused.
	openBody  bool
	responses []response
	// errors are the statuses documented with the catalog error body
	// (domainerr.Body); any other status is the document's default
	// response, the same body.
	errors []int
}

type param struct {
	name, in, description string
	required              bool
}

// response is one documented success answer: body is a value of the JSON
// body's type; text a text/plain alternative; open lets the JSON object
// carry members beyond body's (a job's result merged into its run).
type response struct {
	status      int
	description string
	body        any
	open        bool
	text        bool
	replay      bool // carries Idempotent-Replayed: true
}

var (
	purposeParam = param{name: HeaderPurposeCode, in: "header", description: "purpose of a participant's query (spec 004: P01..)"}
	apiErrors    = []int{400, 401, 403, 404}
)

// Named bodies of routes answering an object that wraps a list.
type (
	// EventsResponse is GET /api/transactions/{txid}/events.
	EventsResponse struct {
		TxID   string  `json:"txid"`
		Events []Event `json:"events"`
	}
	// TransactionsResponse is GET /api/transactions.
	TransactionsResponse struct {
		Transactions []TxSummary `json:"transactions"`
	}
	// BanksResponse is GET /api/banks.
	BanksResponse struct {
		Banks []Bank `json:"banks"`
	}
	// ParticipantsResponse is GET /api/participants.
	ParticipantsResponse struct {
		Participants []participants.Participant `json:"participants"`
	}
	// Health is GET /healthz.
	Health struct {
		Status string `json:"status"`
	}
)

// caseDecisionOp documents POST /api/cases/{case_id}/{action}.
func caseDecisionOp(action, summary string) op {
	return op{path: "/api/cases/{case_id}/" + action, summary: summary, auth: authOperator, params: []param{purposeParam},
		request: CaseDecisionRequest{}, responses: []response{{status: 200, body: CaseDecisionResponse{}}},
		errors: []int{400, 401, 403, 404, 409, 415}}
}

// routeTable is every route of s, in registration order.
func (s *Server) routeTable() []route {
	t := []route{
		{pattern: "POST /api/transfers", handler: s.perimeter(s.jsonBody(s.postTransfer)), ops: []op{{
			summary: "Submit a transfer (spec 001 §13.1 PaymentInitiated); the issuer is the authenticated participant",
			auth:    authParticipant, request: TransferRequest{},
			params: []param{{name: "Idempotency-Key", in: "header", description: "used when the body has no idempotency_key"}},
			responses: []response{{status: 201, description: "accepted", body: orchestrator.SubmitResult{}},
				{status: 200, description: "replay of the same key and body (Idempotent-Replayed: true)", body: orchestrator.SubmitResult{}, replay: true}},
			errors: []int{400, 401, 403, 409, 415, 422, 502, 503}}}},
		{pattern: "GET /api/transactions", handler: s.perimeter(s.query(listRoute, s.listTransactions)), ops: []op{{
			summary: "The operator's transaction feed, newest first", auth: authOperator,
			params: []param{{name: "state", in: "query", description: "only transfers in this state"},
				{name: "limit", in: "query", description: "1..1000 (default 100)"}},
			responses: []response{{status: 200, body: TransactionsResponse{}}}, errors: apiErrors}}},
		{pattern: "GET /api/transactions/{txid}", handler: s.perimeter(s.query(txRoute, s.getTransaction)), ops: []op{{
			summary: "A transfer's QueryResponse (spec 001 §13.6), filtered for the reader (Visibility)", auth: authAPI,
			params: []param{purposeParam}, responses: []response{{status: 200, body: QueryResponse{}}}, errors: apiErrors}}},
		{pattern: "GET /api/transactions/{txid}/events", handler: s.perimeter(s.query(txRoute, s.getEvents)), ops: []op{{
			summary: "A transfer's FinalityLog chain, filtered for the reader", auth: authAPI,
			params: []param{purposeParam}, responses: []response{{status: 200, body: EventsResponse{}}}, errors: apiErrors}}},
		{pattern: "GET /api/transactions/{txid}/verify", handler: s.perimeter(s.query(txRoute, s.verifyChain)), ops: []op{{
			summary: "Verify a transfer's hash chain", auth: authAPI,
			params: []param{purposeParam}, responses: []response{{status: 200, body: VerifyResponse{}}}, errors: apiErrors}}},
		{pattern: "GET /api/banks", handler: s.perimeter(s.listBanks), ops: []op{{
			summary: "The participant directory", auth: authAPI,
			responses: []response{{status: 200, body: BanksResponse{}}}, errors: apiErrors}}},
		{pattern: "GET /api/participants", handler: s.perimeter(s.query(listRoute, s.listParticipants)), ops: []op{{
			summary: "Participants rows", auth: authOperator,
			responses: []response{{status: 200, body: ParticipantsResponse{}}}, errors: apiErrors}}},
		{pattern: "GET /api/participants/{bank_id}", handler: s.perimeter(s.query(operatorRoute, s.getParticipant)), ops: []op{{
			summary: "One Participants row", auth: authOperator,
			responses: []response{{status: 200, body: participants.Participant{}}}, errors: apiErrors}}},
		{pattern: "POST /api/participants", handler: s.perimeter(s.operatorOnly(s.jsonBody(s.createParticipant))), ops: []op{{
			summary: "Register a participant", auth: authOperator, request: participants.Participant{},
			responses: []response{{status: 201, body: participants.Participant{}}}, errors: []int{400, 401, 403, 409, 415}}}},
		{pattern: "PUT /api/participants/{bank_id}", handler: s.perimeter(s.operatorOnly(s.jsonBody(s.updateParticipant))), ops: []op{{
			summary: "Update a participant", auth: authOperator, request: participants.Participant{},
			responses: []response{{status: 200, body: participants.Participant{}}}, errors: []int{400, 401, 403, 404, 409, 415}}}},
		{pattern: "GET /api/cases", handler: s.perimeter(s.query(listRoute, s.listCases)), ops: []op{{
			summary: "Cases, most urgent first, keyset-paged", auth: authOperator,
			params: []param{purposeParam, {name: "status", in: "query", description: "OPEN, IN_PROGRESS, ESCALATED or RESOLVED"},
				{name: "bank", in: "query", description: "only Cases of this bank"}, {name: "cause", in: "query", description: "only Cases of this cause (reason code)"},
				{name: "sla_before", in: "query", description: "only Cases whose SLA ends before this RFC3339 instant"},
				{name: "overdue", in: "query", description: "true: only Cases past their SLA now"},
				{name: "after", in: "query", description: "the last case_id of the previous page"},
				{name: "limit", in: "query", description: "1..1000 (default 100)"}},
			responses: []response{{status: 200, body: CaseList{}}}, errors: apiErrors}}},
		{pattern: "GET /api/cases/{case_id}", handler: s.perimeter(s.query(operatorRoute, s.getCase)), ops: []op{{
			summary: "One Case with its history (EntityStateLog)", auth: authOperator,
			params: []param{purposeParam}, responses: []response{{status: 200, body: CaseDetail{}}}, errors: apiErrors}}},
		{pattern: "POST /api/cases/{case_id}/{action}", handler: s.perimeter(s.jsonBody(s.query(operatorRoute, s.decideCase))), ops: []op{
			caseDecisionOp("resolve", "Resolve a Case with a note (a RECON_DRIFT Case: with drift adjust or accept)"),
			caseDecisionOp("close", "Close a Case with a note"),
		}},
		{pattern: "GET " + OpenAPIPath, handler: s.serveOpenAPI, ops: []op{{
			summary: "This document (OpenAPI 3.1); no credentials: it carries no business data", auth: authNone,
			responses: []response{{status: 200, description: "the OpenAPI document", body: map[string]any{}}}}}},
		{pattern: "/api/", handler: s.perimeter(s.notFound), fallback: true},

		{pattern: "POST /bank/{bank_id}/zc-ingress/{command}", handler: s.ingress, ops: ingressOps()},

		{pattern: "GET /healthz", handler: s.healthz, ops: []op{{summary: "Liveness", auth: authNone,
			responses: []response{{status: 200, body: Health{}}}}}},
		{pattern: "GET /readyz", handler: s.readyz, ops: []op{{summary: "Readiness: databases writable, MQ, Kafka, the mode", auth: authNone,
			responses: []response{{status: 200, description: "ready", body: Readiness{}},
				{status: 503, description: "a check failed", body: Readiness{}}}}}},

		{pattern: "GET /internal/metrics", handler: s.cron(s.serveMetrics), ops: []op{{
			summary: "Metrics: Prometheus text (default) or JSON (?format=json)", auth: authCron,
			params:    []param{{name: "format", in: "query", description: "json for the JSON form"}},
			responses: []response{{status: 200, body: MetricsJSON{}, text: true}}, errors: []int{403}}}},
		{pattern: "GET /internal/system-mode", handler: s.cron(s.getSystemMode), ops: []op{{
			summary: "The system modes and the last change of each flag", auth: authCron,
			responses: []response{{status: 200, body: sysmode.View{}}}, errors: []int{403}}}},
		{pattern: "POST /internal/system-mode/bcp-activate", handler: s.cron(s.setBCP), ops: []op{{
			summary: "Turn BCP_READONLY on (GLOBAL-chain event)", auth: authCron, request: BCPRequest{},
			responses: []response{{status: 200, body: ModeChange{}}}, errors: []int{400, 403}}}},
		{pattern: "POST /internal/system-mode/bcp-deactivate", handler: s.cron(s.setBCP), ops: []op{{
			summary: "Turn BCP_READONLY off (GLOBAL-chain event)", auth: authCron, request: BCPRequest{},
			responses: []response{{status: 200, body: ModeChange{}}}, errors: []int{400, 403}}}},
		{pattern: "GET /internal/params", handler: s.cron(s.listParams), ops: []op{{
			summary: "The PR-* parameter ledger: every parameter's value, default, bounds and last change", auth: authCron,
			params:    []param{{name: "bank_id", in: "query", description: "a bank's per-bank values (limits)"}},
			responses: []response{{status: 200, body: ParamList{}}}, errors: []int{400, 403}}}},
		{pattern: "GET /internal/params/{name}", handler: s.cron(s.getParam), ops: []op{{
			summary: "One PR-* parameter", auth: authCron,
			params:    []param{{name: "bank_id", in: "query", description: "a bank's per-bank value"}},
			responses: []response{{status: 200, body: params.Value{}}}, errors: []int{400, 403, 404}}}},
		{pattern: "POST /internal/params/{name}", handler: s.cron(s.jsonBody(s.setParam)), ops: []op{{
			summary: "Change a PR-* parameter from the value read (CAS), with its evidence_ref, on the GLOBAL chain", auth: authCron,
			request: ParamChangeRequest{}, responses: []response{{status: 200, body: params.Result{}}},
			errors: []int{400, 403, 404, 409, 415, 422}}}},
		{pattern: "POST /internal/system-mode/quorum-report", handler: s.cron(s.quorumReport), ops: []op{{
			summary: "A replica quorum report (ReconcileQuorum)", auth: authCron, request: QuorumReport{},
			responses: []response{{status: 200, body: ModeChange{}}}, errors: []int{400, 403}}}},
	}
	t = append(t, s.programmabilityRoutes()...) // gateway/programmability.go
	if s.cfg.Jobs == nil {
		// With a job runner, timeout-sweep is one of its jobs (recorded in
		// the job ledger like every /internal/cron/{job} run).
		t = append(t, route{pattern: "POST /internal/cron/timeout-sweep", handler: s.cron(s.timeoutSweep), ops: []op{{
			summary: "Run the timeout sweep", auth: authCron,
			responses: []response{{status: 200, body: orchestrator.SweepResult{}}}, errors: []int{403}}}})
	}
	t = append(t, route{pattern: "POST /internal/cron/{job}", handler: s.cron(s.jobs), ops: []op{{
		summary: "Run a batch job (jobs/scheduler): the run, with the job's result members merged in", auth: authCron,
		request: scheduler.TriggerRequest{}, bodyOptional: true,
		responses: []response{{status: 200, description: "the run COMPLETED", body: scheduler.RunView{}, open: true},
			{status: 500, description: "the run was recorded and FAILED", body: scheduler.RunView{}, open: true}},
		errors: []int{400, 403, 404, 409}}}})
	if s.cfg.DNS != nil {
		dnsOp := func(action, summary string, body any) op {
			return op{path: "/internal/dns/" + action, summary: summary, auth: authCron, request: dns.Request{}, bodyOptional: true,
				responses: []response{{status: 200, body: body}}, errors: []int{400, 403, 404, 409}}
		}
		t = append(t,
			route{pattern: "POST /internal/dns/{action}", handler: s.cron(s.cfg.DNS.ServeHTTP), ops: []op{
				dnsOp("kick", "Open the day's DNS cycle (business_date, currency)", dns.KickResponse{}),
				dnsOp("settle", "Settle a DNS cycle (cycle_id)", dns.SettleResponse{}),
				dnsOp("resume", "Resume a DNS cycle on HOLD (cycle_id)", dns.SettleResponse{}),
				dnsOp("intraday-cutoff", "Close the current cycle and open the next (business_date, currency)", dns.SettleResponse{}),
				dnsOp("fund", "Fund a bank's shortfall on a DNS cycle on HOLD and resume it (cycle_id, bank_id, amount)", dns.FundResponse{}),
				dnsOp("cancel", "Cancel a DNS cycle on HOLD: its transactions return to ZC's ownership (cycle_id, reason, actor)", dns.CancelResponse{}),
			}},
			route{pattern: "GET /internal/boj-positions", handler: s.cron(s.cfg.DNS.ServeHTTP), ops: []op{{
				summary: "BOJ current-account positions", auth: authCron,
				responses: []response{{status: 200, body: dns.PositionsResponse{}}}, errors: []int{403}}}})
	}
	t = append(t, s.refundRoutes()...)
	t = append(t, s.fxRoutes()...)
	t = append(t, s.gtidRtpRoutes()...)
	t = append(t, s.gtidOperatorRoutes()...)
	t = append(t, s.bankRoutes()...)
	t = append(t, s.htlcRoutes()...)
	return append(t,
		route{pattern: "/internal/", handler: s.cron(s.notFound), fallback: true},
		route{pattern: "/", handler: s.notFound, fallback: true})
}

// routes builds the mux from routeTable.
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	for _, r := range s.routeTable() {
		mux.HandleFunc(r.pattern, r.handler)
	}
	return mux
}

// method and path of a route pattern ("" method for a bare pattern).
func (r route) methodPath() (string, string) {
	if m, p, ok := strings.Cut(r.pattern, " "); ok {
		return m, p
	}
	return "", r.pattern
}
