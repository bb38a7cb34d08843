package gateway

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/params"
)

// The PR-* parameter ledger's operator path (spec 002 §12.7-§12.9,
// coordinator/params):
//
//	GET  /internal/params[?bank_id=B]          every parameter (of bank B: its per-bank values)
//	GET  /internal/params/{name}[?bank_id=B]   one parameter (bank B's value)
//	POST /internal/params/{name}               {"old_value","value","evidence_ref","reason","operator"[,"bank_id"]}: change it

// ParamList is the answer of GET /internal/params.
type ParamList struct {
	Parameters []params.Value `json:"parameters"`
}

// ParamChangeRequest is the body of POST /internal/params/{name}. Values
// are strings as an operator writes them: an integer (JPY, seconds, a
// count) or, for a duration, "90s", "4h", "1h30m". OldValue is the value
// the operator read: the change applies only while it is still the
// current one (CONCURRENCY_CONFLICT otherwise).
type ParamChangeRequest struct {
	OldValue    *string `json:"old_value"`
	Value       *string `json:"value"`
	EvidenceRef string  `json:"evidence_ref"`
	Reason      string  `json:"reason"`
	Operator    string  `json:"operator"`
	// BankID changes that bank's value of a per-bank parameter (limits,
	// its own hv_threshold); "none" clears a nullable one.
	BankID string `json:"bank_id,omitempty"`
}

// leaser is what the ledger needs of the Coordinator: the work-item lease
// its timeouts race (*orchestrator.Orchestrator has it).
type leaser interface{ Lease() time.Duration }

func (s *Server) paramLedger() *params.Ledger {
	var lease time.Duration
	if l, ok := s.cfg.Coordinator.(leaser); ok {
		lease = l.Lease()
	}
	return params.NewLedger(s.cfg.DB, s.cfg.FinalityLog, s.clk, s.log, lease)
}

func (s *Server) listParams(w http.ResponseWriter, r *http.Request) {
	var vs []params.Value
	var err error
	if bank := r.URL.Query().Get("bank_id"); bank != "" {
		vs, err = params.ListBank(r.Context(), s.cfg.DB, bank)
	} else {
		vs, err = params.List(r.Context(), s.cfg.DB)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ParamList{Parameters: vs})
}

func (s *Server) getParam(w http.ResponseWriter, r *http.Request) {
	var v params.Value
	var err error
	if bank := r.URL.Query().Get("bank_id"); bank != "" {
		v, err = params.ShowBank(r.Context(), s.cfg.DB, params.Name(r.PathValue("name")), bank)
	} else {
		v, err = params.Show(r.Context(), s.cfg.DB, params.Name(r.PathValue("name")))
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) setParam(w http.ResponseWriter, r *http.Request) {
	name := params.Name(r.PathValue("name"))
	d, err := params.Lookup(name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	body, err := readBody(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req ParamChangeRequest
	if err := decodeStrict(body, &req); err != nil {
		writeError(w, r, err)
		return
	}
	c := params.Change{Name: name, BankID: req.BankID, EvidenceRef: req.EvidenceRef, Reason: req.Reason, By: req.Operator}
	for _, f := range []struct {
		field string
		raw   *string
		dst   *int64
	}{{"old_value", req.OldValue, &c.Old}, {"value", req.Value, &c.New}} {
		if f.raw == nil || strings.TrimSpace(*f.raw) == "" {
			writeError(w, r, domainerr.New("MISSING_FIELD", f.field+" is required (the change applies only from the value you read)",
				map[string]any{"field": f.field, "parameter": string(name)}))
			return
		}
		if *f.dst, err = d.Parse(*f.raw); err != nil {
			writeError(w, r, err)
			return
		}
	}
	// The change and its GLOBAL-chain entry commit together even if the
	// caller goes away.
	res, err := s.paramLedger().Set(context.WithoutCancel(r.Context()), c)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
