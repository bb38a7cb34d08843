package gateway

import (
	"context"
	"net/http"

	"github.com/zcgw/zcgw/coordinator/orchestrator"
)

// Refunder reverses a FAILED_EXECUTION transfer whose payer was debited
// (coordinator/orchestrator RequestRefund, docs/orchestrator.md "Reversal
// and refund"). The gateway serves the operator routes when its
// Coordinator implements it (the orchestrator does).
type Refunder interface {
	RequestRefund(ctx context.Context, req orchestrator.RefundRequest) (orchestrator.Reversal, error)
	Reversal(ctx context.Context, txid string) (orchestrator.Reversal, error)
}

// Corrector corrects a misrecorded field of a transfer whose credit the
// payee bank refused (orchestrator CorrectMisrecord).
type Corrector interface {
	CorrectMisrecord(ctx context.Context, req orchestrator.MisrecordRequest) (orchestrator.Correction, error)
}

// MisrecordBody is the body of POST /internal/transfers/{txid}/misrecord-correct.
type MisrecordBody struct {
	Field       string `json:"field"`
	Value       string `json:"value"`
	RequestedBy string `json:"requested_by"`
	ApprovedBy  string `json:"approved_by"`
	EvidenceRef string `json:"evidence_ref"`
	Note        string `json:"note,omitempty"`
}

// RefundBody is the body of POST /internal/transfers/{txid}/refund.
type RefundBody struct {
	RequestedBy string `json:"requested_by"`
	EvidenceRef string `json:"evidence_ref,omitempty"`
	Note        string `json:"note,omitempty"`
}

// refundRoutes are POST (decide and send) and GET (show) of
// /internal/transfers/{txid}/refund behind the internal credential, and
// spec 004's POST /api/transfers/{txid}/misrecord-correct for the
// operator, for a coordinator that offers them.
func (s *Server) refundRoutes() []route {
	var t []route
	if c, ok := s.cfg.Coordinator.(Corrector); ok {
		// spec 004 names this route under /api, operator scope.
		t = append(t, route{pattern: "POST /api/transfers/{txid}/misrecord-correct", handler: s.perimeter(s.operatorOnly(s.jsonBody(s.misrecordCorrect(c)))), ops: []op{{
			summary: "Correct a misrecorded field of a transfer before it settles (spec 004 misrecord-correct; four eyes, evidence)", auth: authOperator,
			request: MisrecordBody{}, responses: []response{{status: 200, body: orchestrator.Correction{}}},
			errors: []int{400, 401, 403, 404, 409, 415, 422}}}})
	}
	rf, ok := s.cfg.Coordinator.(Refunder)
	if !ok {
		return t
	}
	return append(t,
		route{pattern: "POST /internal/transfers/{txid}/refund", handler: s.cron(s.jsonBody(s.postRefund(rf))), ops: []op{{
			summary: "Refund the payer of a transfer whose credit failed, exactly once through the payer bank's outbox", auth: authCron,
			request: RefundBody{}, responses: []response{{status: 200, description: "the refund's record (already finished)", body: orchestrator.Reversal{}},
				{status: 202, description: "decided; the REFUND work item finishes it", body: orchestrator.Reversal{}}},
			errors: []int{400, 403, 404, 409, 415, 422}}}},
		route{pattern: "GET /internal/transfers/{txid}/refund", handler: s.cron(s.getRefund(rf)), ops: []op{{
			summary: "A transfer's refund record", auth: authCron,
			responses: []response{{status: 200, body: orchestrator.Reversal{}}}, errors: []int{403, 404}}}})
}

func (s *Server) postRefund(rf Refunder) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		var b RefundBody
		if err := decodeStrict(body, &b); err != nil {
			writeError(w, r, err)
			return
		}
		rev, err := rf.RequestRefund(context.WithoutCancel(r.Context()), orchestrator.RefundRequest{TxID: r.PathValue("txid"),
			RequestedBy: b.RequestedBy, EvidenceRef: b.EvidenceRef, Note: b.Note})
		if err != nil {
			writeError(w, r, err)
			return
		}
		status := http.StatusOK
		if rev.Status == orchestrator.ReversalRequested {
			status = http.StatusAccepted // decided; the REFUND work item finishes it
		}
		writeJSON(w, status, rev)
	}
}

func (s *Server) getRefund(rf Refunder) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rev, err := rf.Reversal(r.Context(), r.PathValue("txid"))
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, rev)
	}
}

func (s *Server) misrecordCorrect(c Corrector) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		var b MisrecordBody
		if err := decodeStrict(body, &b); err != nil {
			writeError(w, r, err)
			return
		}
		out, err := c.CorrectMisrecord(context.WithoutCancel(r.Context()), orchestrator.MisrecordRequest{TxID: r.PathValue("txid"),
			Field: b.Field, Value: b.Value, RequestedBy: b.RequestedBy, ApprovedBy: b.ApprovedBy, EvidenceRef: b.EvidenceRef, Note: b.Note})
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

var (
	_ Refunder  = (*orchestrator.Orchestrator)(nil)
	_ Corrector = (*orchestrator.Orchestrator)(nil)
)
