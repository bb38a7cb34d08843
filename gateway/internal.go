package gateway

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

func (s *Server) timeoutSweep(w http.ResponseWriter, r *http.Request) {
	res, err := s.cfg.Coordinator.TimeoutSweep(context.WithoutCancel(r.Context()))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) jobs(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Jobs == nil {
		writeError(w, r, domainerr.New("NOT_FOUND", "no job runner is configured", map[string]any{"job": r.PathValue("job")}))
		return
	}
	s.cfg.Jobs.ServeHTTP(w, r)
}

// latencyBuckets are the request-duration histogram bounds (seconds).
var latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

type routeKey struct {
	route, method string
	status        int
}

type histogram struct {
	counts []int64 // per bucket, cumulative at render
	sum    float64
	n      int64
}

type metrics struct {
	mu                sync.Mutex
	requests          map[routeKey]int64
	latency           map[string]*histogram
	auditFailures     atomic.Int64
	signatureFailures atomic.Int64
	bodiesShed        atomic.Int64
}

func newMetrics() *metrics {
	return &metrics{requests: map[routeKey]int64{}, latency: map[string]*histogram{}}
}

func (m *metrics) observe(route, method string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[routeKey{route, method, status}]++
	h := m.latency[route]
	if h == nil {
		h = &histogram{counts: make([]int64, len(latencyBuckets))}
		m.latency[route] = h
	}
	sec := d.Seconds()
	for i, b := range latencyBuckets {
		if sec <= b {
			h.counts[i]++
			break
		}
	}
	h.sum += sec
	h.n++
}

func label(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// gauge is one labelled count read from the authoritative tables.
type gauge struct {
	A     string `json:"-"`
	B     string `json:"-"`
	Count int64  `json:"count"`
}

type requestCount struct {
	Route  string `json:"route"`
	Method string `json:"method"`
	Status int    `json:"status"`
	Count  int64  `json:"count"`
}

type labelled struct {
	Labels map[string]string `json:"labels"`
	Count  int64             `json:"count"`
}

// MetricsJSON is GET /internal/metrics?format=json.
type MetricsJSON struct {
	HTTPRequests             []requestCount `json:"http_requests"`
	Transactions             []labelled     `json:"transactions"`
	QueueItems               []labelled     `json:"queue_items"`
	AccessAuditWriteFailures int64          `json:"access_audit_write_failures"`
	IngressSignatureFailures int64          `json:"ingress_signature_failures"`
	IngressBodiesShed        int64          `json:"ingress_bodies_shed"`
	DB                       MetricsDB      `json:"db"`
}

// MetricsDB is MetricsJSON.db: the coordinator database's counters.
type MetricsDB struct {
	Statements int64 `json:"statements"`
	Commits    int64 `json:"commits"`
}

// serveMetrics is GET /internal/metrics: the Prometheus text format
// (version 0.0.4) by default, JSON with ?format=json. It reports the
// gateway's own counters plus read-only projections of the authoritative
// state (transactions by lane and state, queue items by kind and status,
// the coordinator database's statement and commit counters). It writes
// nothing, so it works in the read-only modes.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	txs, err := s.gauges(r.Context(), `SELECT lane, state, COUNT(*) FROM Transactions GROUP BY lane, state ORDER BY 1, 2`)
	if err != nil {
		writeError(w, r, err)
		return
	}
	queue, err := s.gauges(r.Context(), `SELECT kind, status, COUNT(*) FROM OrchestratorQueue GROUP BY kind, status ORDER BY 1, 2`)
	if err != nil {
		writeError(w, r, err)
		return
	}
	m := s.metrics
	m.mu.Lock()
	reqs := make([]requestCount, 0, len(m.requests))
	for k, v := range m.requests {
		reqs = append(reqs, requestCount{k.route, k.method, k.status, v})
	}
	type hist struct {
		route string
		h     histogram
	}
	var hists []hist
	for rt, h := range m.latency {
		hists = append(hists, hist{rt, histogram{counts: append([]int64(nil), h.counts...), sum: h.sum, n: h.n}})
	}
	m.mu.Unlock()
	sort.Slice(reqs, func(i, j int) bool {
		a, b := reqs[i], reqs[j]
		if a.Route != b.Route {
			return a.Route < b.Route
		}
		if a.Method != b.Method {
			return a.Method < b.Method
		}
		return a.Status < b.Status
	})
	sort.Slice(hists, func(i, j int) bool { return hists[i].route < hists[j].route })
	st := s.cfg.DB.Stats()
	if r.URL.Query().Get("format") == "json" {
		lab := func(gs []gauge, ka, kb string) []labelled {
			out := make([]labelled, 0, len(gs))
			for _, g := range gs {
				out = append(out, labelled{map[string]string{ka: g.A, kb: g.B}, g.Count})
			}
			return out
		}
		writeJSON(w, http.StatusOK, MetricsJSON{
			HTTPRequests: reqs, Transactions: lab(txs, "lane", "state"), QueueItems: lab(queue, "kind", "status"),
			AccessAuditWriteFailures: m.auditFailures.Load(), IngressSignatureFailures: m.signatureFailures.Load(),
			IngressBodiesShed: m.bodiesShed.Load(), DB: MetricsDB{Statements: st.Statements, Commits: st.Commits},
		})
		return
	}
	var b strings.Builder
	b.WriteString("# HELP zcgw_http_requests_total HTTP requests served, by route pattern, method and status.\n# TYPE zcgw_http_requests_total counter\n")
	for _, k := range reqs {
		fmt.Fprintf(&b, "zcgw_http_requests_total{route=\"%s\",method=\"%s\",status=\"%d\"} %d\n", label(k.Route), k.Method, k.Status, k.Count)
	}
	b.WriteString("# HELP zcgw_http_request_duration_seconds HTTP request duration.\n# TYPE zcgw_http_request_duration_seconds histogram\n")
	for _, hh := range hists {
		var cum int64
		for i, ub := range latencyBuckets {
			cum += hh.h.counts[i]
			fmt.Fprintf(&b, "zcgw_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %d\n", label(hh.route), ub, cum)
		}
		fmt.Fprintf(&b, "zcgw_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %d\n", label(hh.route), hh.h.n)
		fmt.Fprintf(&b, "zcgw_http_request_duration_seconds_sum{route=\"%s\"} %g\n", label(hh.route), hh.h.sum)
		fmt.Fprintf(&b, "zcgw_http_request_duration_seconds_count{route=\"%s\"} %d\n", label(hh.route), hh.h.n)
	}
	fmt.Fprintf(&b, "# HELP zcgw_access_audit_write_failures_total AccessAuditLog writes that failed (the query was still answered).\n# TYPE zcgw_access_audit_write_failures_total counter\nzcgw_access_audit_write_failures_total %d\n", m.auditFailures.Load())
	fmt.Fprintf(&b, "# HELP zcgw_ingress_signature_failures_total Bank ingress requests refused by signature verification.\n# TYPE zcgw_ingress_signature_failures_total counter\nzcgw_ingress_signature_failures_total %d\n", m.signatureFailures.Load())
	fmt.Fprintf(&b, "# HELP zcgw_ingress_bodies_shed_total Bank ingress requests answered 503 because the unauthenticated body-read slots were full.\n# TYPE zcgw_ingress_bodies_shed_total counter\nzcgw_ingress_bodies_shed_total %d\n", m.bodiesShed.Load())
	b.WriteString("# HELP zcgw_transactions Transactions by lane and state.\n# TYPE zcgw_transactions gauge\n")
	for _, g := range txs {
		fmt.Fprintf(&b, "zcgw_transactions{lane=\"%s\",state=\"%s\"} %d\n", label(g.A), label(g.B), g.Count)
	}
	b.WriteString("# HELP zcgw_queue_items Orchestrator work items by kind and status.\n# TYPE zcgw_queue_items gauge\n")
	for _, g := range queue {
		fmt.Fprintf(&b, "zcgw_queue_items{kind=\"%s\",status=\"%s\"} %d\n", label(g.A), label(g.B), g.Count)
	}
	fmt.Fprintf(&b, "# HELP zcgw_db_statements_total SQL statements run on the coordinator database.\n# TYPE zcgw_db_statements_total counter\nzcgw_db_statements_total %d\n", st.Statements)
	fmt.Fprintf(&b, "# HELP zcgw_db_commits_total Write commits on the coordinator database.\n# TYPE zcgw_db_commits_total counter\nzcgw_db_commits_total %d\n", st.Commits)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(b.String()))
}

// gauges runs a read-only GROUP BY returning (a, b, count) rows.
func (s *Server) gauges(ctx context.Context, query string) ([]gauge, error) {
	var out []gauge
	err := s.cfg.DB.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, query)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var g gauge
			if err := rows.Scan(&g.A, &g.B, &g.Count); err != nil {
				return err
			}
			out = append(out, g)
		}
		return rows.Err()
	})
	return out, err
}
