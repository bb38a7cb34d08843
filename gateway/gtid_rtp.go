package gateway

import (
	"context"
	"net/http"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/ident"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/signing"
)

// GtidRTP is the GTID multi-leg lane and request to pay of the
// coordinator (docs/gtid-rtp.md). The gateway serves their routes when
// its Coordinator implements it (the orchestrator does).
type GtidRTP interface {
	RegisterGtid(ctx context.Context, req orchestrator.GtidRegister, idempotencyKey, issuerBankID string) (orchestrator.GtidRegisterResult, error)
	Gtid(ctx context.Context, gtid string) (orchestrator.GtidView, error)
	RequestRtp(ctx context.Context, req orchestrator.RtpRequest, idempotencyKey, issuerBankID string) (orchestrator.RtpView, error)
	AcceptRtp(ctx context.Context, rtpID string, req orchestrator.RtpAccept, issuerBankID string) (orchestrator.RtpView, error)
	DeclineRtp(ctx context.Context, rtpID, issuerBankID string) (orchestrator.RtpView, error)
	Rtp(ctx context.Context, rtpID string) (orchestrator.RtpView, error)
}

// GtidOperator is the operator's way out of a suspended GTID
// (docs/gtid-rtp.md "Suspension"): drive its suspended legs again, or
// close it once a leg failed for good.
type GtidOperator interface {
	RetryGtid(ctx context.Context, gtid string, req orchestrator.GtidOperatorRequest) (orchestrator.GtidOperatorResult, error)
	ResolveGtid(ctx context.Context, gtid string, req orchestrator.GtidOperatorRequest) (orchestrator.GtidOperatorResult, error)
}

var (
	_ GtidRTP      = (*orchestrator.Orchestrator)(nil)
	_ GtidOperator = (*orchestrator.Orchestrator)(nil)
)

// GtidRegisterRequest is the body of POST /api/gtid/register.
type GtidRegisterRequest struct {
	orchestrator.GtidRegister
	IdempotencyKey string `json:"idempotency_key"`
}

// RtpRequestBody is the body of POST /api/rtp/request.
type RtpRequestBody struct {
	orchestrator.RtpRequest
	IdempotencyKey string `json:"idempotency_key"`
}

// gtidRtpRoutes are spec 004's POST /api/gtid/register and POST
// /api/rtp/request, with the reads and the payer's answers zcgw adds
// (docs/gtid-rtp.md "API").
func (s *Server) gtidRtpRoutes() []route {
	c, ok := s.cfg.Coordinator.(GtidRTP)
	if !ok {
		return nil
	}
	keyParam := []param{{name: "Idempotency-Key", in: "header", description: "used when the body has no idempotency_key"}}
	created := func(body any) []response {
		return []response{{status: 201, description: "accepted", body: body},
			{status: 200, description: "replay of the same key and body (Idempotent-Replayed: true)", body: body, replay: true}}
	}
	answer := func(action, summary string) route {
		return route{pattern: "POST /api/rtp/{rtp_id}/" + action, handler: s.perimeter(s.participantOnly(s.jsonBodyOptional(action, s.answerRtp(c, action)))),
			ops: []op{{summary: summary, auth: authParticipant, request: rtpAnswerBody(action), bodyOptional: action == "decline",
				responses: []response{{status: 200, body: orchestrator.RtpView{}}}, errors: []int{400, 401, 403, 404, 409, 415, 422}}}}
	}
	return []route{
		{pattern: "POST /api/gtid/register", handler: s.perimeter(s.participantOnly(s.jsonBody(s.registerGtid(c)))), ops: []op{{
			summary: "Register a multi-leg GTID (all or nothing; leg-ready-check to every leg's bank); the issuer must hold a leg",
			auth:    authParticipant, request: GtidRegisterRequest{}, params: keyParam, responses: created(orchestrator.GtidRegisterResult{}),
			errors: []int{400, 401, 403, 404, 409, 415, 422, 503}}}},
		{pattern: "GET /api/gtid/{gtid}", handler: s.perimeter(partyQuery(s, gtidResource(c), writeView)), ops: []op{{
			summary: "A GTID with its legs and chain (every leg's bank, or the operator)", auth: authAPI, params: []param{purposeParam},
			responses: []response{{status: 200, body: orchestrator.GtidView{}}}, errors: apiErrors}}},
		{pattern: "POST /api/rtp/request", handler: s.perimeter(s.participantOnly(s.jsonBody(s.requestRtp(c)))), ops: []op{{
			summary: "Request to pay: the payee's bank asks the payer's bank (rtp-notify)", auth: authParticipant,
			request: RtpRequestBody{}, params: keyParam, responses: created(orchestrator.RtpView{}),
			errors: []int{400, 401, 403, 404, 409, 415, 422, 503}}}},
		{pattern: "GET /api/rtp/{rtp_id}", handler: s.perimeter(partyQuery(s, rtpResource(c), writeView)), ops: []op{{
			summary: "A request to pay with its chain (the payer's or payee's bank, or the operator)", auth: authAPI, params: []param{purposeParam},
			responses: []response{{status: 200, body: orchestrator.RtpView{}}}, errors: apiErrors}}},
		answer("accept", "The payer's bank accepts: the linked transfer is created and runs its lane"),
		answer("decline", "The payer's bank declines"),
	}
}

// gtidOperatorRoutes are POST /internal/gtid/{gtid}/retry and /resolve
// behind the internal credential.
func (s *Server) gtidOperatorRoutes() []route {
	c, ok := s.cfg.Coordinator.(GtidOperator)
	if !ok {
		return nil
	}
	do := func(action, summary string, fn func(context.Context, string, orchestrator.GtidOperatorRequest) (orchestrator.GtidOperatorResult, error)) route {
		return route{pattern: "POST /internal/gtid/{gtid}/" + action, handler: s.cron(s.jsonBody(s.gtidOperatorAction(fn))), ops: []op{{
			summary: summary, auth: authCron, request: orchestrator.GtidOperatorRequest{},
			responses: []response{{status: 200, body: orchestrator.GtidOperatorResult{}}}, errors: []int{400, 403, 404, 409, 415}}}}
	}
	return []route{
		do("retry", "Drive a GT_SUSPENDED GTID's suspended legs again (their cause fixed)", c.RetryGtid),
		do("resolve", "Close a GT_SUSPENDED GTID whose leg failed for good: GT_FAILED_EXECUTION, failed legs' holds released, its Case resolved", c.ResolveGtid),
	}
}

func (s *Server) gtidOperatorAction(fn func(context.Context, string, orchestrator.GtidOperatorRequest) (orchestrator.GtidOperatorResult, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		var b orchestrator.GtidOperatorRequest
		if err := decodeStrict(body, &b); err != nil {
			writeError(w, r, err)
			return
		}
		out, err := fn(context.WithoutCancel(r.Context()), r.PathValue("gtid"), b)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

func rtpAnswerBody(action string) any {
	if action == "accept" {
		return orchestrator.RtpAccept{}
	}
	return struct{}{}
}

// participantOnly refuses a caller that is not a participant bank (403).
func (s *Server) participantOnly(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if p := principalFrom(r); p.Scope != signing.ScopeParticipant {
			writeErrorStatus(w, r, http.StatusForbidden, domainerr.New("UNAUTHORIZED", "only a participant bank may do this", map[string]any{"scope": p.Scope}))
			return
		}
		next(w, r)
	}
}

// jsonBodyOptional is jsonBody, except that decline takes no body.
func (s *Server) jsonBodyOptional(action string, next http.HandlerFunc) http.HandlerFunc {
	if action == "decline" {
		return next
	}
	return s.jsonBody(next)
}

func writeAccepted(w http.ResponseWriter, replayed bool, v any) {
	status := http.StatusCreated
	if replayed {
		status = http.StatusOK
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, status, v)
}

func (s *Server) registerGtid(c GtidRTP) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req GtidRegisterRequest
		key, err := decodeKeyed(r, &req, &req.IdempotencyKey)
		if err != nil {
			writeError(w, r, err)
			return
		}
		issuer := principalFrom(r).BankID
		res, err := c.RegisterGtid(context.WithoutCancel(r.Context()), req.GtidRegister, key, issuer)
		if err != nil {
			writeError(w, r, err)
			return
		}
		loggerFrom(r).InfoContext(r.Context(), "gtid.registered", "gtid", res.GTID, "issuer", issuer, "replayed", res.Replayed)
		writeAccepted(w, res.Replayed, res)
	}
}

func (s *Server) requestRtp(c GtidRTP) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req RtpRequestBody
		key, err := decodeKeyed(r, &req, &req.IdempotencyKey)
		if err != nil {
			writeError(w, r, err)
			return
		}
		issuer := principalFrom(r).BankID
		res, err := c.RequestRtp(context.WithoutCancel(r.Context()), req.RtpRequest, key, issuer)
		if err != nil {
			writeError(w, r, err)
			return
		}
		loggerFrom(r).InfoContext(r.Context(), "rtp.requested", "rtp_id", res.RtpID, "issuer", issuer, "replayed", res.Replayed)
		writeAccepted(w, res.Replayed, res)
	}
}

// decodeKeyed reads a strict JSON body into v and returns its
// idempotency key (*key, or the Idempotency-Key header).
func decodeKeyed(r *http.Request, v any, key *string) (string, error) {
	body, err := readBody(r)
	if err != nil {
		return "", err
	}
	if err := decodeStrict(body, v); err != nil {
		return "", err
	}
	return idempotencyKey(r, *key)
}

func (s *Server) answerRtp(c GtidRTP, action string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		issuer, id := principalFrom(r).BankID, r.PathValue("rtp_id")
		var v orchestrator.RtpView
		var err error
		if action == "accept" {
			var body []byte
			if body, err = readBody(r); err == nil {
				var req orchestrator.RtpAccept
				if err = decodeStrict(body, &req); err == nil {
					v, err = c.AcceptRtp(context.WithoutCancel(r.Context()), id, req, issuer)
				}
			}
		} else {
			v, err = c.DeclineRtp(context.WithoutCancel(r.Context()), id, issuer)
		}
		if err != nil {
			if domainerr.Code(err) == "INVALID_STATE" {
				writeErrorStatus(w, r, http.StatusConflict, err) // answered already, or not waiting for an answer
				return
			}
			writeError(w, r, err)
			return
		}
		loggerFrom(r).InfoContext(r.Context(), "rtp."+action, "rtp_id", id, "issuer", issuer, "state", v.State, "linked_txid", v.LinkedTxID)
		writeJSON(w, http.StatusOK, v)
	}
}

// gtidResource is one GTID: every leg's bank and the initiator are its
// parties (spec 004 当事者の定義).
func gtidResource(c GtidRTP) partyResource[orchestrator.GtidView] {
	return partyResource[orchestrator.GtidView]{param: "gtid",
		check:    func(id string) error { return ident.Check(ident.TxID, "gtid", id) },
		notFound: orchestrator.GtidNotFound,
		load:     c.Gtid,
		parties: func(v orchestrator.GtidView) []string {
			banks := []string{v.InitiatorBankID}
			for _, l := range v.Legs {
				banks = append(banks, l.BankID)
			}
			return banks
		}}
}

// rtpResource is one request to pay: the payer's and the payee's banks
// are its parties.
func rtpResource(c GtidRTP) partyResource[orchestrator.RtpView] {
	return partyResource[orchestrator.RtpView]{param: "rtp_id",
		check:    func(id string) error { return ident.Check(ident.BankRef, "rtp_id", id) },
		notFound: orchestrator.RtpNotFound,
		load:     c.Rtp,
		parties:  func(v orchestrator.RtpView) []string { return []string{v.PayerBankID, v.PayeeBankID} }}
}

// writeView answers a party query with the resource it read.
func writeView[T any](w http.ResponseWriter, _ *http.Request, _ subject, v T) {
	writeJSON(w, http.StatusOK, v)
}
