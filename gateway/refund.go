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

// refundRoutes mounts POST (decide and send) and GET (show) of
// /internal/transfers/{txid}/refund, and misrecord-correct, behind the
// internal credential.
func (s *Server) refundRoutes(mux *http.ServeMux) {
	s.misrecordRoutes(mux)
	rf, ok := s.cfg.Coordinator.(Refunder)
	if !ok {
		return
	}
	mux.HandleFunc("POST /internal/transfers/{txid}/refund", s.cron(s.jsonBody(func(w http.ResponseWriter, r *http.Request) {
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
	})))
	mux.HandleFunc("GET /internal/transfers/{txid}/refund", s.cron(func(w http.ResponseWriter, r *http.Request) {
		rev, err := rf.Reversal(r.Context(), r.PathValue("txid"))
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, rev)
	}))
}

// misrecordRoutes mounts POST /internal/transfers/{txid}/misrecord-correct
// behind the internal credential.
func (s *Server) misrecordRoutes(mux *http.ServeMux) {
	c, ok := s.cfg.Coordinator.(Corrector)
	if !ok {
		return
	}
	mux.HandleFunc("POST /internal/transfers/{txid}/misrecord-correct", s.cron(s.jsonBody(func(w http.ResponseWriter, r *http.Request) {
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
	})))
}

var (
	_ Refunder  = (*orchestrator.Orchestrator)(nil)
	_ Corrector = (*orchestrator.Orchestrator)(nil)
)
