package fx

import (
	"context"
	"log/slog"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/zclog"
)

// FX runs the FX market and conduit transfers against one coordinator
// database.
type FX struct {
	db    *store.DB
	lanes *lane.Lanes
	h     *hlimit.H
	clk   clock.Clock
	log   *slog.Logger
	// Materialise, when set, is called after a claim committed with the
	// conduit GTID's leg txids (now DECIDED_TO_SETTLE Transactions rows):
	// the node hands them to the orchestrator's queue so they settle
	// through the banks' adapters.
	Materialised func(ctx context.Context, gtid string, txids []string) error
}

// New returns the FX service. clk nil means the system clock; log nil
// discards.
func New(db *store.DB, lanes *lane.Lanes, h *hlimit.H, clk clock.Clock, log *slog.Logger) *FX {
	if clk == nil {
		clk = clock.System{}
	}
	return &FX{db: db, lanes: lanes, h: h, clk: clk, log: zclog.OrDiscard(log)}
}

func (f *FX) now() time.Time { return f.clk.Now().UTC() }
