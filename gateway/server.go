package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/fx"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/zclog"
)

// Coordinator is what the gateway needs of the orchestrator
// (*orchestrator.Orchestrator implements it).
type Coordinator interface {
	Submit(ctx context.Context, req orchestrator.PaymentInitiated, idempotencyKey, issuerBankID string) (orchestrator.SubmitResult, error)
	Query(ctx context.Context, txid string) (orchestrator.View, error)
	TimeoutSweep(ctx context.Context) (orchestrator.SweepResult, error)
}

// DefaultFreshnessRed is PR-FRESHNESS-RED's default (spec 001 §13.6).
const DefaultFreshnessRed = 60 * time.Second

// Config wires a Server.
type Config struct {
	// Coordinator accepts and reads transfers. Required.
	Coordinator Coordinator
	// DB is the coordinator database: FinalityLog (events, verify),
	// Transactions listing, AccessAuditLog, metrics. Required.
	DB *store.DB
	// Participants administers Participants rows (operator routes).
	Participants *participants.Registry
	// Banks maps a bank_id to the adapter handler serving
	// /bank/{bank_id}/zc-ingress/{command}.
	Banks map[string]http.Handler
	// Ingress verifies ZC egress signatures in front of Banks (OwnerType
	// should be signing.OwnerZC). Required when Banks is set: an unsigned
	// ingress is never served.
	Ingress *signing.Verifier
	// Queries verifies participant query signatures (its Registry also
	// tells whether a participant must sign).
	Queries *signing.Verifier
	// APIKeys authenticates /api callers.
	APIKeys *signing.APIKeys
	// CronSecret guards /internal/* (and is an operator credential on
	// /api queries). Empty refuses every /internal request (fail-closed).
	CronSecret string
	// Jobs serves POST /internal/cron/{job} (jobs/scheduler Runner.Handler).
	Jobs http.Handler
	// DNS serves POST /internal/dns/{kick,settle,intraday-cutoff,resume}
	// and GET /internal/boj-positions (jobs/dns Service.Handler).
	DNS http.Handler
	// AllowUnauthenticatedUI lets same-origin requests without credentials
	// through /api (ZC_ALLOW_UNAUTHENTICATED_UI, spec 002 §12.6.5): off by
	// default, and every such request is logged as a warning.
	AllowUnauthenticatedUI bool
	// FX serves the /api/fx routes (spec 001 §17.2); nil: not mounted.
	FX *fx.FX
	// Adapters are the banks' adapters by bank id: POST
	// /api/cases/{case_id}/resolve with "drift" settles a RECON_DRIFT
	// Case's drift through the Case's bank's adapter.
	Adapters map[string]*adapter.Adapter
	// Ready are /readyz's checks besides the coordinator database and the
	// mode, which it always checks (the node adds its other databases, MQ
	// and Kafka).
	Ready []ReadyCheck
	// Collectors are /internal/metrics' gauges besides the gateway's own
	// (the node adds its outboxes, MQ queues and job ledger);
	// they are read at scrape time.
	Collectors []prometheus.Collector
	// CorePostings reads where each leg's posting stands at its bank's
	// core for QueryResponse.core_posting (nil: the field is omitted).
	CorePostings CorePostings
	// FreshnessRed is PR-FRESHNESS-RED (default 60s).
	FreshnessRed time.Duration
	// Audit records access decisions (nil: AccessAuditLog in DB).
	Audit AuditWriter
	// FinalityLog records DataAccessViolationDetected (a participant
	// signature that fails against a registered key) on the GLOBAL chain
	// (nil: finality.New(Clock)); pass the log carrying the outbox hook.
	FinalityLog *finality.Log
	Clock       clock.Clock
	Logger      *slog.Logger
	// ShutdownTimeout bounds the drain of in-flight requests (default 30s).
	ShutdownTimeout time.Duration
	// HeaderReadTimeout bounds the reading of a request's headers
	// (default DefaultHeaderReadTimeout).
	HeaderReadTimeout time.Duration
	// BodyReadTimeout bounds the reading of a request's body, from the
	// moment its headers were read (default DefaultBodyReadTimeout).
	BodyReadTimeout time.Duration
	// MaxHeaderBytes bounds a request's header block (default
	// DefaultMaxHeaderBytes); a larger one is refused with 431.
	MaxHeaderBytes int
	// MaxUnauthenticatedBodies caps the bank ingress bodies being read at
	// once before their signature can be checked (default
	// DefaultMaxUnauthenticatedBodies); one more is answered 503.
	MaxUnauthenticatedBodies int
	// UIHosts are the Host header values AllowUnauthenticatedUI accepts
	// (DNS rebinding). Empty: derived by Serve from its listener
	// (localhost:PORT, 127.0.0.1:PORT, [::1]:PORT for a loopback or
	// wildcard address).
	UIHosts []string
}

// Edge limits (docs/gateway.md "Limits").
const (
	DefaultHeaderReadTimeout        = 10 * time.Second
	DefaultBodyReadTimeout          = 10 * time.Second
	DefaultMaxHeaderBytes           = 64 << 10
	DefaultMaxUnauthenticatedBodies = 64
)

// Server is the gateway.
type Server struct {
	cfg     Config
	clk     clock.Clock
	log     *slog.Logger
	audit   AuditWriter
	metrics *metrics
	handler http.Handler
	// bodySlots holds one token per unauthenticated body being read.
	bodySlots chan struct{}
	// uiHosts is the set of Host values the unauthenticated UI accepts.
	uiHosts atomic.Pointer[map[string]bool]
	// openapiDoc is OpenAPI()'s document, built once.
	openapiOnce sync.Once
	openapiDoc  []byte
}

// New builds a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Coordinator == nil || cfg.DB == nil {
		return nil, errors.New("gateway: Config.Coordinator and Config.DB are required")
	}
	if len(cfg.Banks) > 0 && cfg.Ingress == nil {
		return nil, errors.New("gateway: Config.Ingress is required to serve bank ingress")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.FreshnessRed <= 0 {
		cfg.FreshnessRed = DefaultFreshnessRed
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	if cfg.APIKeys == nil {
		cfg.APIKeys = &signing.APIKeys{}
	}
	if cfg.HeaderReadTimeout <= 0 {
		cfg.HeaderReadTimeout = DefaultHeaderReadTimeout
	}
	if cfg.BodyReadTimeout <= 0 {
		cfg.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if cfg.MaxHeaderBytes <= 0 {
		cfg.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if cfg.MaxUnauthenticatedBodies <= 0 {
		cfg.MaxUnauthenticatedBodies = DefaultMaxUnauthenticatedBodies
	}
	s := &Server{cfg: cfg, clk: cfg.Clock, log: zclog.OrDiscard(cfg.Logger).With("component", "gateway"),
		bodySlots: make(chan struct{}, cfg.MaxUnauthenticatedBodies)}
	var err error
	if s.metrics, err = newMetrics(cfg.DB, s.clk, cfg.Collectors); err != nil {
		return nil, err
	}
	s.setUIHosts(cfg.UIHosts)
	if cfg.FinalityLog == nil {
		s.cfg.FinalityLog = finality.New(cfg.Clock)
	}
	s.audit = cfg.Audit
	if s.audit == nil {
		s.audit = DBAudit{DB: cfg.DB}
	}
	s.handler = s.edge(s.routes())
	return s, nil
}

// Handler is the gateway's http.Handler.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, r, errNotFoundRoute(r))
}

// Serve serves on ln until ctx is done, then shuts down gracefully: it
// stops accepting connections and waits (up to ShutdownTimeout) for
// in-flight requests to finish. It returns nil after a clean drain.
// Headers are bounded in time (HeaderReadTimeout) and size
// (MaxHeaderBytes); bodies in time by the edge (BodyReadTimeout).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if len(s.cfg.UIHosts) == 0 {
		s.setUIHosts(loopbackHosts(ln.Addr()))
	}
	hs := &http.Server{Handler: s.handler, ReadHeaderTimeout: s.cfg.HeaderReadTimeout, MaxHeaderBytes: s.cfg.MaxHeaderBytes,
		IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	s.log.Info("gateway.started", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("gateway.shutting_down")
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	err := hs.Shutdown(sctx)
	if e := <-errc; e != nil && !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	s.log.Info("gateway.stopped", "error", errString(err))
	return err
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
