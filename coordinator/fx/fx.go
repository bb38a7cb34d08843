package fx

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/zclog"
)

// LegAcceptor takes a materialised, decided leg transfer over inside the
// caller's transaction (*orchestrator.Orchestrator implements it): the
// legs then settle through the banks' adapters like any transfer.
//
// It also gives a refunded leg's hold back: ReleaseHoldInTx records the
// release-reserve and queues a RELEASE work item in the refund's commit,
// so a paying bank not reached is asked again until it answers.
type LegAcceptor interface {
	AcceptDecidedLegInTx(ctx context.Context, tx *store.Tx, txid, issuer, bankRes string) error
	ReleaseHoldInTx(ctx context.Context, tx *store.Tx, laneName, txid, reservationRef string) error
}

// Config assembles an FX service.
type Config struct {
	DB    *store.DB
	Lanes *lane.Lanes
	// Banks reaches the banks' ingress (reserve-funds, leg-ready-check):
	// the orchestrator's port.
	Banks orchestrator.Banks
	// Legs takes decided legs over and releases refunded legs' holds
	// (the orchestrator).
	Legs   LegAcceptor
	Clock  clock.Clock  // nil: the system clock
	Logger *slog.Logger // nil: discard
}

// FX runs the FX market and conduit transfers against one coordinator
// database. It is safe for concurrent use.
type FX struct {
	db     *store.DB
	lanes  *lane.Lanes
	h      *hlimit.H
	keys   *idem.Keys
	banks  orchestrator.Banks
	accept LegAcceptor
	clk    clock.Clock
	log    *slog.Logger
}

// New returns the FX service.
func New(cfg Config) (*FX, error) {
	if cfg.DB == nil || cfg.Lanes == nil {
		return nil, errors.New("fx: Config.DB and Config.Lanes are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	log := zclog.OrDiscard(cfg.Logger).With("component", "fx")
	return &FX{db: cfg.DB, lanes: cfg.Lanes, h: hlimit.New(cfg.Clock, log), keys: idem.New(cfg.Clock, log),
		banks: cfg.Banks, accept: cfg.Legs, clk: cfg.Clock, log: log}, nil
}

func (f *FX) now() time.Time { return f.clk.Now().UTC() }

// Now is the service's clock reading (UTC): quotes' validity and timelocks
// are reckoned against it.
func (f *FX) Now() time.Time { return f.now() }
