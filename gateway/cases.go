package gateway

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/eod"
)

// The back office's Case routes (operator scope, X-Purpose-Code required,
// every request written to AccessAuditLog by s.query):
//
//	GET  /api/cases?status=&bank=&cause=&sla_before=&overdue=&after=&limit=
//	GET  /api/cases/{case_id}
//	POST /api/cases/{case_id}/resolve  {"operator":"...","note":"..."}
//	POST /api/cases/{case_id}/close    {"operator":"...","note":"..."}

// CaseView is one Case on the wire.
type CaseView struct {
	CaseID          string `json:"case_id"`
	State           string `json:"state"`
	ReasonCode      string `json:"reason_code"`
	CauseKey        string `json:"cause_key,omitempty"`
	BankID          string `json:"bank_id,omitempty"`
	DetectionPath   string `json:"detection_path,omitempty"`
	RelatedTxID     string `json:"related_txid,omitempty"`
	RelatedGtID     string `json:"related_gtid,omitempty"`
	Description     string `json:"description,omitempty"`
	OpenedBy        string `json:"opened_by"`
	OccurrenceCount int64  `json:"occurrence_count"`
	SLADeadline     string `json:"sla_deadline,omitempty"`
	EscalatedAt     string `json:"escalated_at,omitempty"`
	ResolvedAt      string `json:"resolved_at,omitempty"`
	CreatedAt       string `json:"created_at"`
	UpdatedAt       string `json:"updated_at"`
}

// CaseHistoryEntry is one EntityStateLog row of a Case.
type CaseHistoryEntry struct {
	EventType  string `json:"event_type"`
	From       string `json:"state_from,omitempty"`
	To         string `json:"state_to"`
	ReasonCode string `json:"reason_code,omitempty"`
	Actor      string `json:"actor,omitempty"`
	Payload    string `json:"payload_json,omitempty"`
	OccurredAt string `json:"occurred_at"`
}

// CaseDetail is GET /api/cases/{case_id}.
type CaseDetail struct {
	CaseView
	Links   []string           `json:"related"`
	History []CaseHistoryEntry `json:"history"`
}

// CaseList is GET /api/cases: a page and how many more match after it
// (the next page: after = the last case_id).
type CaseList struct {
	Cases []CaseView `json:"cases"`
	More  int64      `json:"more"`
}

// CaseDecisionRequest is the body of POST /api/cases/{case_id}/resolve|close.
type CaseDecisionRequest struct {
	Operator string `json:"operator"`
	Note     string `json:"note"`
	// Drift ("adjust" or "accept", resolve only) ends a RECON_DRIFT Case
	// with its drift (eod.SettleDriftCase).
	Drift string `json:"drift,omitempty"`
}

// CaseDecisionResponse says what a decision did. StateFrom is empty when a
// drift resolution found the Case already RESOLVED (run again).
type CaseDecisionResponse struct {
	CaseID    string `json:"case_id"`
	Decision  string `json:"decision"`
	StateFrom string `json:"state_from,omitempty"`
	StateTo   string `json:"state_to"`
	// Drift resolution only.
	DriftID      string `json:"drift_id,omitempty"`
	Drift        int64  `json:"drift,omitempty"`
	CoreAccount  string `json:"core_account,omitempty"`
	PostingRef   string `json:"posting_ref,omitempty"`
	DriftAlready bool   `json:"drift_already_settled,omitempty"`
}

// CaseViewOf renders a Case row.
func CaseViewOf(k cases.Case) CaseView {
	return CaseView{CaseID: k.CaseID, State: k.State, ReasonCode: k.ReasonCode, CauseKey: k.CauseKey, BankID: k.CausePartyID,
		DetectionPath: k.DetectionPath, RelatedTxID: k.RelatedTxID, RelatedGtID: k.RelatedGtID, Description: k.Description,
		OpenedBy: k.OpenedBy, OccurrenceCount: k.OccurrenceCount, SLADeadline: k.SLADeadline, EscalatedAt: k.EscalatedAt,
		ResolvedAt: k.ResolvedAt, CreatedAt: k.CreatedAt, UpdatedAt: k.UpdatedAt}
}

// CaseDetailOf renders a Case with its links and history.
func CaseDetailOf(d cases.Detail) CaseDetail {
	out := CaseDetail{CaseView: CaseViewOf(d.Case), Links: d.Links, History: []CaseHistoryEntry{}}
	if out.Links == nil {
		out.Links = []string{}
	}
	for _, e := range d.History {
		out.History = append(out.History, CaseHistoryEntry{EventType: e.EventType, From: e.From, To: e.To,
			ReasonCode: e.ReasonCode, Actor: e.Actor, Payload: e.Payload, OccurredAt: e.OccurredAt})
	}
	return out
}

// CaseFilterOf reads the list filter from query parameters (also used by
// the CLI to build them). now is the clock for overdue=true.
func CaseFilterOf(q map[string][]string, now time.Time) (cases.Filter, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return strings.TrimSpace(v[0])
		}
		return ""
	}
	f := cases.Filter{State: strings.ToUpper(get("status")), Bank: get("bank"), Cause: get("cause"), After: get("after")}
	if s := get("sla_before"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return f, domainerr.New("INVALID_REQUEST", "sla_before must be an RFC3339 time", map[string]any{"field": "sla_before", "value": s})
		}
		f.SLABefore = t
	}
	if s := get("overdue"); s != "" {
		on, err := strconv.ParseBool(s)
		if err != nil {
			return f, domainerr.New("INVALID_REQUEST", "overdue must be true or false", map[string]any{"field": "overdue", "value": s})
		}
		if on && (f.SLABefore.IsZero() || now.Before(f.SLABefore)) {
			f.SLABefore = now
		}
	}
	if s := get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 || n > 1000 {
			return f, domainerr.New("INVALID_REQUEST", "limit must be 1..1000", map[string]any{"field": "limit", "value": s})
		}
		f.Limit = n
	}
	return f, f.Validate()
}

func (s *Server) cases() *cases.Cases { return cases.New(s.clk, s.log, 0) }

func (s *Server) listCases(w http.ResponseWriter, r *http.Request, _ subject, _ *orchestrator.View) {
	f, err := CaseFilterOf(r.URL.Query(), s.clk.Now())
	if err != nil {
		writeError(w, r, err)
		return
	}
	var p cases.Page
	if err := s.cfg.DB.Read(r.Context(), func(tx *store.Tx) error {
		var err error
		p, err = cases.List(r.Context(), tx, f)
		return err
	}); err != nil {
		writeError(w, r, err)
		return
	}
	out := CaseList{Cases: make([]CaseView, 0, len(p.Cases)), More: p.More}
	for _, k := range p.Cases {
		out.Cases = append(out.Cases, CaseViewOf(k))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getCase(w http.ResponseWriter, r *http.Request, _ subject, _ *orchestrator.View) {
	var d cases.Detail
	if err := s.cfg.DB.Read(r.Context(), func(tx *store.Tx) error {
		var err error
		d, err = cases.Show(r.Context(), tx, r.PathValue("case_id"))
		return err
	}); err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, CaseDetailOf(d))
}

// decideCase serves POST /api/cases/{case_id}/{resolve|close}: a guarded
// move to RESOLVED with the note and operator in EntityStateLog; a Case
// already RESOLVED is 409 STATE_GUARD.
func (s *Server) decideCase(w http.ResponseWriter, r *http.Request, sub subject, _ *orchestrator.View) {
	decision := map[string]string{"resolve": cases.DecisionResolved, "close": cases.DecisionClosed}[r.PathValue("action")]
	if decision == "" {
		s.notFound(w, r)
		return
	}
	body, err := readBody(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req CaseDecisionRequest
	if err := decodeStrict(body, &req); err != nil {
		writeError(w, r, err)
		return
	}
	// The move and its log row commit together even if the caller goes away.
	ctx := context.WithoutCancel(r.Context())
	if req.Drift != "" {
		s.settleDrift(ctx, w, r, sub, req)
		return
	}
	d, err := s.cases().Decide(ctx, s.cfg.DB, cases.Decide{CaseID: r.PathValue("case_id"), Decision: decision,
		Note: strings.TrimSpace(req.Note), Operator: strings.TrimSpace(req.Operator), Source: "api " + sub.auditID()})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, CaseDecisionResponse{CaseID: d.CaseID, Decision: decision, StateFrom: d.From, StateTo: d.To})
}

// settleDrift serves a resolve with "drift": the drift of a RECON_DRIFT
// Case and the Case end together (eod.SettleDriftCase) through the adapter
// of the Case's bank.
func (s *Server) settleDrift(ctx context.Context, w http.ResponseWriter, r *http.Request, sub subject, req CaseDecisionRequest) {
	how := map[string]string{"adjust": adapter.DriftAdjust, "accept": adapter.DriftAccept}[req.Drift]
	if how == "" || r.PathValue("action") != "resolve" {
		writeError(w, r, domainerr.New("INVALID_REQUEST", "drift is adjust or accept, on resolve", map[string]any{"field": "drift", "value": req.Drift}))
		return
	}
	id := r.PathValue("case_id")
	var k cases.Case
	if err := s.cfg.DB.Read(ctx, func(tx *store.Tx) error {
		var err error
		k, err = cases.Get(ctx, tx, id)
		return err
	}); err != nil {
		writeError(w, r, err)
		return
	}
	a, ok := s.cfg.Adapters[k.CausePartyID]
	if !ok {
		writeError(w, r, domainerr.New("NOT_FOUND", "this node serves no adapter for the Case's bank",
			map[string]any{"case_id": id, "bank_id": k.CausePartyID}))
		return
	}
	st, err := eod.SettleDriftCase(ctx, s.cfg.DB, s.cases(), a, id, how, strings.TrimSpace(req.Operator), strings.TrimSpace(req.Note), "api "+sub.auditID())
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, CaseDriftResponse(id, st))
}

// CaseDriftResponse renders what eod.SettleDriftCase did.
func CaseDriftResponse(caseID string, st eod.DriftSettlement) CaseDecisionResponse {
	decision := cases.DecisionAccepted
	if st.How == adapter.DriftAdjust {
		decision = cases.DecisionAdjusted
	}
	return CaseDecisionResponse{CaseID: caseID, Decision: decision, StateFrom: st.Case.From, StateTo: cases.StateResolved,
		DriftID: st.DriftID, Drift: st.Drift.Drift, CoreAccount: st.CoreAccount, PostingRef: st.Ref, DriftAlready: st.Already}
}
