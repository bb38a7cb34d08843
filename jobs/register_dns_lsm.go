package jobs

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/batchwindow"
	"github.com/zcgw/zcgw/jobs/dns"
	"github.com/zcgw/zcgw/jobs/lsm"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

// DNSAndWindowDeps are what the DNS and batch-window job bodies need.
type DNSAndWindowDeps struct {
	DB          *store.DB         // the coordinator database (zc.db, the ledger's file)
	FinalityLog *finality.Log     // the log carrying the outbox hook
	Gate        lane.WritableGate // sysmode.Gate{}
	Clock       clock.Clock
	Logger      *slog.Logger
	// Acceptor continues window-accepted transfers: the
	// *orchestrator.Orchestrator (its AcceptBatchInTx).
	Acceptor batchwindow.Acceptor
	// Currencies with DNS cycles (none: JPY).
	Currencies []string
	// Window tunes the batch windows (horizons, fairness age, LSM budget and
	// fallback); its FinalityLog, Gate, Acceptor, Clock and Logger are taken
	// from the fields above.
	Window batchwindow.Config
}

// RegisterDNSAndWindows applies the DNS and LSM tables of their own
// (idempotent) and registers the bodies of dns-kick, dns-settle,
// dns-intraday-cutoff, bulk-window and deferred-window into reg. It returns
// the DNS service (its Handler serves /internal/dns/* and
// /internal/boj-positions) and the window runner.
func RegisterDNSAndWindows(ctx context.Context, reg *scheduler.Registry, d DNSAndWindowDeps) (*dns.Service, *batchwindow.Window, error) {
	if d.DB == nil {
		return nil, nil, fmt.Errorf("jobs: RegisterDNSAndWindows: DB is required")
	}
	if err := dns.EnsureSchema(ctx, d.DB); err != nil {
		return nil, nil, err
	}
	if err := lsm.EnsureSchema(ctx, d.DB); err != nil {
		return nil, nil, err
	}
	svc := dns.New(d.DB, d.FinalityLog, d.Gate, d.Clock, d.Logger)
	wc := d.Window
	wc.FinalityLog, wc.Gate, wc.Acceptor, wc.Clock, wc.Logger = d.FinalityLog, d.Gate, d.Acceptor, d.Clock, d.Logger
	win, err := batchwindow.New(wc)
	if err != nil {
		return nil, nil, err
	}
	for _, j := range append(svc.Jobs(d.Currencies...), win.Jobs()...) {
		if err := reg.Register(j); err != nil {
			return nil, nil, err
		}
	}
	return svc, win, nil
}
