package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox/events"
)

// The metrics of GET /internal/metrics (docs/gateway.md lists them). The
// exposition is github.com/prometheus/client_golang's: it escapes label
// values, negotiates the format (text 0.0.4 by default, protobuf or
// OpenMetrics on request) and checks at registration that no two
// collectors claim one family. Gauges over databases are read at scrape
// time by collectors (ScrapeGauge), never by polling loops.

// latencyBuckets are the request-duration histogram bounds (seconds).
var latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// scrapeTimeout bounds the database reads of one scrape.
const scrapeTimeout = 5 * time.Second

type metrics struct {
	reg               *prometheus.Registry
	requests          *prometheus.CounterVec
	latency           *prometheus.HistogramVec
	auditFailures     atomic.Int64
	signatureFailures atomic.Int64
	bodiesShed        atomic.Int64
}

func newMetrics(db *store.DB, clk clock.Clock, extra []prometheus.Collector) (*metrics, error) {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "zcgw_http_requests_total",
		Help: "HTTP requests served, by route pattern, method and status."}, []string{"route", "method", "status"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "zcgw_http_request_duration_seconds",
		Help: "HTTP request duration.", Buckets: latencyBuckets}, []string{"route"})
	counter := func(name, help string, f func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(f()) })
	}
	cs := []prometheus.Collector{m.requests, m.latency,
		counter("zcgw_access_audit_write_failures_total", "AccessAuditLog writes that failed (the query was still answered).", m.auditFailures.Load),
		counter("zcgw_ingress_signature_failures_total", "Bank ingress requests refused by signature verification.", m.signatureFailures.Load),
		counter("zcgw_ingress_bodies_shed_total", "Bank ingress requests answered 503 because the unauthenticated body-read slots were full.", m.bodiesShed.Load),
		counter("zcgw_db_statements_total", "SQL statements run on the coordinator database.", func() int64 { return db.Stats().Statements }),
		counter("zcgw_db_commits_total", "Write commits on the coordinator database.", func() int64 { return db.Stats().Commits }),
		coordinatorGauges(db, clk),
	}
	for _, c := range append(cs, extra...) {
		if err := m.reg.Register(c); err != nil {
			return nil, fmt.Errorf("gateway: register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) observe(route, method string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

// Sample is one value of a ScrapeGauge, its label values in the order of
// the family's Labels.
type Sample struct {
	Labels []string
	Value  float64
}

// ScrapeGauge is a gauge family whose samples Read returns at scrape time.
// Read must only read (it runs in every mode) and be cheap: a COUNT over
// an index, not a scan of history.
type ScrapeGauge struct {
	Name, Help string
	Labels     []string
	Read       func(ctx context.Context) ([]Sample, error)
}

// NewScrapeCollector returns a prometheus.Collector of the families. Each
// scrape calls every Read (all within scrapeTimeout); a Read that fails
// makes its family an error of the scrape (logged by /internal/metrics)
// while the other families are still served.
func NewScrapeCollector(fams ...ScrapeGauge) prometheus.Collector {
	c := &scrapeCollector{fams: fams}
	for _, f := range fams {
		c.descs = append(c.descs, prometheus.NewDesc(f.Name, f.Help, f.Labels, nil))
	}
	return c
}

type scrapeCollector struct {
	fams  []ScrapeGauge
	descs []*prometheus.Desc
}

func (c *scrapeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *scrapeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	for i, f := range c.fams {
		samples, err := f.Read(ctx)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.descs[i], fmt.Errorf("%s: %w", f.Name, err))
			continue
		}
		for _, s := range samples {
			m, err := prometheus.NewConstMetric(c.descs[i], prometheus.GaugeValue, s.Value, s.Labels...)
			if err != nil {
				m = prometheus.NewInvalidMetric(c.descs[i], err)
			}
			ch <- m
		}
	}
}

// coordinatorGauges are the gauges over the coordinator database:
// transactions by lane and state, work items by kind and status, open
// Cases by status and the event outbox's lag.
func coordinatorGauges(db *store.DB, clk clock.Clock) prometheus.Collector {
	groupBy := func(query string) func(ctx context.Context) ([]Sample, error) {
		return func(ctx context.Context) (out []Sample, err error) {
			err = db.Read(ctx, func(tx *store.Tx) error {
				rows, err := tx.QueryContext(ctx, query)
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
					var a, b string
					var n int64
					if err := rows.Scan(&a, &b, &n); err != nil {
						return err
					}
					out = append(out, Sample{Labels: []string{a, b}, Value: float64(n)})
				}
				return rows.Err()
			})
			return out, err
		}
	}
	ev := events.New(db, clk)
	lag := func(ctx context.Context) (events.Lag, error) { return ev.Lag(ctx) }
	return NewScrapeCollector(
		ScrapeGauge{Name: "zcgw_transactions", Help: "Transactions by lane and state.", Labels: []string{"lane", "state"},
			Read: groupBy(`SELECT lane, state, COUNT(*) FROM Transactions GROUP BY lane, state ORDER BY 1, 2`)},
		ScrapeGauge{Name: "zcgw_queue_items", Help: "Orchestrator work items by kind and status.", Labels: []string{"kind", "status"},
			Read: groupBy(`SELECT kind, status, COUNT(*) FROM OrchestratorQueue GROUP BY kind, status ORDER BY 1, 2`)},
		ScrapeGauge{Name: "zcgw_cases_open", Help: "Cases not yet resolved, by status.", Labels: []string{"status"},
			Read: func(ctx context.Context) (out []Sample, err error) {
				err = db.Read(ctx, func(tx *store.Tx) error {
					n, err := cases.CountOpenTx(ctx, tx)
					for _, s := range cases.OpenStates {
						out = append(out, Sample{Labels: []string{s}, Value: float64(n[s])})
					}
					return err
				})
				return out, err
			}},
		ScrapeGauge{Name: "zcgw_event_outbox_unsent", Help: "Event-outbox rows the broker has not acknowledged yet.",
			Read: func(ctx context.Context) ([]Sample, error) {
				l, err := lag(ctx)
				return []Sample{{Value: float64(l.Unsent)}}, err
			}},
		ScrapeGauge{Name: "zcgw_event_outbox_oldest_unsent_age_seconds", Help: "Age of the oldest unsent event-outbox row (0 when all are sent).",
			Read: func(ctx context.Context) ([]Sample, error) {
				l, err := lag(ctx)
				if err != nil || l.Oldest.IsZero() {
					return []Sample{{Value: 0}}, err
				}
				return []Sample{{Value: max(clk.Now().Sub(l.Oldest).Seconds(), 0)}}, nil
			}},
	)
}

// promLog passes the exposition's errors (a family that could not be
// read) to the gateway's JSON log.
type promLog struct{ log *slog.Logger }

func (p promLog) Println(v ...any) { p.log.Error("metrics.scrape_failed", "error", fmt.Sprint(v...)) }

// serveMetrics is GET /internal/metrics: the Prometheus exposition (text
// 0.0.4 unless the scraper asks for another format), or with ?format=json
// each family's samples as {"<family>": [{"labels": {...}, "value": v}]}
// (histograms give count and sum). A family that cannot be read is left
// out and logged; the others are served. It writes nothing, so it works in
// the read-only modes.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("format") != "json" {
		promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError,
			ErrorLog: promLog{s.log}}).ServeHTTP(w, r)
		return
	}
	fams, err := s.metrics.reg.Gather()
	if err != nil {
		promLog{s.log}.Println(err)
	}
	writeJSON(w, http.StatusOK, jsonFamilies(fams))
}

// JSONSample is one sample of the ?format=json rendering.
type JSONSample struct {
	Labels map[string]string `json:"labels,omitempty"`
	Value  *float64          `json:"value,omitempty"`
	Count  *uint64           `json:"count,omitempty"`
	Sum    *float64          `json:"sum,omitempty"`
}

// MetricsJSON is GET /internal/metrics?format=json: every metric family's
// samples keyed by the metric's name.
type MetricsJSON map[string][]JSONSample

func jsonFamilies(fams []*dto.MetricFamily) MetricsJSON {
	out := make(map[string][]JSONSample, len(fams))
	for _, f := range fams {
		samples := make([]JSONSample, 0, len(f.GetMetric()))
		for _, m := range f.GetMetric() {
			var js JSONSample
			if len(m.GetLabel()) > 0 {
				js.Labels = map[string]string{}
				for _, l := range m.GetLabel() {
					js.Labels[l.GetName()] = l.GetValue()
				}
			}
			switch {
			case m.Counter != nil:
				js.Value = m.Counter.Value
			case m.Gauge != nil:
				js.Value = m.Gauge.Value
			case m.Histogram != nil:
				js.Count, js.Sum = m.Histogram.SampleCount, m.Histogram.SampleSum
			}
			samples = append(samples, js)
		}
		out[f.GetName()] = samples
	}
	for _, v := range out {
		sort.SliceStable(v, func(i, j int) bool { return fmt.Sprint(v[i].Labels) < fmt.Sprint(v[j].Labels) })
	}
	return out
}
