package gateway

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

// The operator's crisis controls (spec 000 ch. 6) and the health probes.
//
//	GET  /healthz                              liveness: 200 while the process serves
//	GET  /readyz                               readiness: each check, 503 when one fails
//	GET  /internal/system-mode                 the modes, each flag's last change
//	POST /internal/system-mode/bcp-activate    {"operator","reason"}: BCP_READONLY on
//	POST /internal/system-mode/bcp-deactivate  {"operator","reason"}: BCP_READONLY off
//	POST /internal/system-mode/quorum-report   {"replicas_up","replicas_configured"[,"reporter"]}

// ReadyCheck is one readiness check: Check returns nil when the
// dependency it names is usable. It must be cheap (it runs on every
// /readyz) and must not write durable state.
type ReadyCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// DBWritable is the readiness check of a SQLite database: it takes and
// releases the write lock (an immediate transaction that changes nothing,
// so nothing is written or synced). It fails when the database is closed,
// cannot be locked for writing within the check's deadline, or refuses a
// write transaction.
func DBWritable(name string, db *store.DB) ReadyCheck {
	return ReadyCheck{Name: "db:" + name, Check: func(ctx context.Context) error {
		return db.Write(ctx, func(*store.Tx) error { return nil })
	}}
}

// readyCheckTimeout bounds each readiness check.
const readyCheckTimeout = 2 * time.Second

// CheckResult is one check in the /readyz body.
type CheckResult struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// Readiness is the /readyz body. Ready is false (and the status 503) when
// any check failed. A read-only mode does not make the node unready: it
// still serves every read (spec 000 §6.3), so Writable and Modes say it.
type Readiness struct {
	Ready    bool           `json:"ready"`
	Writable bool           `json:"writable"`
	Modes    []sysmode.Mode `json:"modes"`
	Checks   []CheckResult  `json:"checks"`
}

func (s *Server) modes() *sysmode.Controller {
	return sysmode.NewController(s.cfg.DB, s.cfg.FinalityLog, s.clk, s.log)
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, Health{Status: "alive"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	run := func(name string, f func(ctx context.Context) error) CheckResult {
		ctx, cancel := context.WithTimeout(r.Context(), readyCheckTimeout)
		defer cancel()
		if err := f(ctx); err != nil {
			return CheckResult{Name: name, Error: err.Error()}
		}
		return CheckResult{Name: name, OK: true}
	}
	body := Readiness{Ready: true}
	checks := append([]ReadyCheck{DBWritable("zc.db", s.cfg.DB)}, s.cfg.Ready...)
	for _, c := range checks {
		body.Checks = append(body.Checks, run(c.Name, c.Check))
	}
	body.Checks = append(body.Checks, run("mode", func(ctx context.Context) error {
		st, err := s.modes().Status(ctx)
		body.Writable, body.Modes = st.Writable(), st.Modes()
		return err
	}))
	status := http.StatusOK
	for _, c := range body.Checks {
		if !c.OK {
			body.Ready, status = false, http.StatusServiceUnavailable
		}
	}
	if !body.Ready {
		loggerFrom(r).WarnContext(r.Context(), "http.not_ready", "checks", body.Checks)
	}
	writeJSON(w, status, body)
}

// ModeChange is the answer of a mode change: whether the flag moved
// (false: it already had that value, nothing was written) and the modes
// after it.
type ModeChange struct {
	Changed bool         `json:"changed"`
	Mode    sysmode.View `json:"mode"`
}

// BCPRequest is the body of bcp-activate and bcp-deactivate.
type BCPRequest struct {
	Operator string `json:"operator"`
	Reason   string `json:"reason"`
}

// QuorumReport is the body of quorum-report: how many of the configured
// replicas the reporting health monitor reaches.
type QuorumReport struct {
	ReplicasUp         *int   `json:"replicas_up"`
	ReplicasConfigured *int   `json:"replicas_configured"`
	Reporter           string `json:"reporter,omitempty"`
}

func (s *Server) getSystemMode(w http.ResponseWriter, r *http.Request) {
	v, err := s.modes().Show(r.Context())
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) setBCP(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req BCPRequest
	if err := decodeStrict(body, &req); err != nil {
		writeError(w, r, err)
		return
	}
	c := s.modes()
	change := c.DeactivateBCP
	if strings.HasSuffix(r.URL.Path, "/bcp-activate") {
		change = c.ActivateBCP
	}
	// The change and its GLOBAL-chain event commit together even if the
	// caller goes away.
	ctx := context.WithoutCancel(r.Context())
	_, changed, err := change(ctx, strings.TrimSpace(req.Operator), strings.TrimSpace(req.Reason))
	s.answerModeChange(ctx, w, r, changed, err)
}

func (s *Server) quorumReport(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req QuorumReport
	if err := decodeStrict(body, &req); err != nil {
		writeError(w, r, err)
		return
	}
	// A missing count must not read as 0 replicas up (that would declare
	// quorum loss).
	for _, f := range []struct {
		name string
		v    *int
	}{{"replicas_up", req.ReplicasUp}, {"replicas_configured", req.ReplicasConfigured}} {
		if f.v == nil {
			writeError(w, r, domainerr.New("MISSING_FIELD", f.name+" is required", map[string]any{"field": f.name}))
			return
		}
	}
	ctx := context.WithoutCancel(r.Context())
	_, changed, err := s.modes().ReconcileQuorum(ctx, *req.ReplicasUp, *req.ReplicasConfigured)
	if err == nil {
		loggerFrom(r).InfoContext(r.Context(), "sysmode.quorum_report", "replicas_up", *req.ReplicasUp,
			"replicas_configured", *req.ReplicasConfigured, "reporter", req.Reporter, "changed", changed)
	}
	s.answerModeChange(ctx, w, r, changed, err)
}

func (s *Server) answerModeChange(ctx context.Context, w http.ResponseWriter, r *http.Request, changed bool, err error) {
	if err != nil {
		writeError(w, r, err)
		return
	}
	v, err := s.modes().Show(ctx)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ModeChange{Changed: changed, Mode: v})
}
