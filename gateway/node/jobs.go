package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"

	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/sysmode"
	"github.com/zcgw/zcgw/jobs"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/eod"
	"github.com/zcgw/zcgw/jobs/overnight"
	"github.com/zcgw/zcgw/jobs/scheduler"
	"github.com/zcgw/zcgw/outbox"
)

// registerAllJobs registers every job body of a node into reg: the
// scheduler's built-ins, the node's own jobs (registerJobs) and DNS with
// the batch windows. It is the one registration: Start uses it for the
// node's runner and JobCatalog for `zcgw jobs list`, so both tell the same
// truth about which jobs have a body. Registration only reads n.DB,
// n.DataDir and n.FinalityLog; the bodies reach the banks, the
// orchestrator and the outboxes through n when they run.
func (n *Node) registerAllJobs(ctx context.Context, reg *scheduler.Registry, clk clock.Clock, log *slog.Logger) error {
	if err := scheduler.RegisterBuiltins(reg); err != nil {
		return err
	}
	if err := n.registerJobs(ctx, reg, clk, log); err != nil {
		return err
	}
	var err error
	n.DNS, n.Windows, err = jobs.RegisterDNSAndWindows(ctx, reg, jobs.DNSAndWindowDeps{DB: n.DB, FinalityLog: n.FinalityLog,
		Gate: sysmode.Gate{}, Clock: clk, Logger: log, Acceptor: n.Orchestrator, Currencies: n.dnsCurrencies()})
	return err
}

// dnsCurrencies are the currencies the node runs DNS cycles in: yen, and
// every further currency a bank keeps accounts in (the FX legs leave
// positions at ZC in them; a non-JPY cycle settles them on the tokenised
// central-bank accounts of its chain, jobs/dns venue.go).
func (n *Node) dnsCurrencies() []string {
	out := []string{"JPY"}
	seen := map[string]bool{"JPY": true}
	for _, bc := range n.Config.Banks {
		for _, c := range bc.Currencies {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// JobCatalog lists the jobs a node on dataDir has a body for, without
// starting one: it opens the coordinator database (for the idempotent
// schemas the registrations apply) and runs registerAllJobs over a node
// with no banks, cores, MQ or listener — safe beside a node serving the
// folder. The bodies it builds are only listed, never run.
func JobCatalog(ctx context.Context, dataDir string, clk clock.Clock) ([]string, error) {
	if clk == nil {
		clk = clock.System{}
	}
	stores, err := Stores(dataDir)
	if err != nil {
		return nil, err
	}
	db, err := store.OpenCoordinator(ctx, stores.Location(store.CoordinatorDB))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	o, err := orchestrator.New(orchestrator.Config{DB: db, Clock: clk, WorkerID: "catalog"})
	if err != nil {
		return nil, err
	}
	n := &Node{DataDir: dataDir, DB: db, Orchestrator: o, Banks: map[string]*Bank{}, FinalityLog: finality.New(clk), clk: clk}
	reg := scheduler.NewRegistry()
	if err := n.registerAllJobs(ctx, reg, clk, slog.New(slog.DiscardHandler)); err != nil {
		return nil, err
	}
	return reg.Names(), nil
}

// registerJobs adds the node's own job bodies to reg: the sweeps that keep
// the coordinator and the outboxes moving, and EOD over every bank. (DNS
// and the BULK/DEFERRED windows are registered by jobs.RegisterDNSAndWindows.)
func (n *Node) registerJobs(ctx context.Context, reg *scheduler.Registry, clk clock.Clock, log *slog.Logger) error {
	keys := idem.New(clk, log)
	cs := cases.New(clk, log, 0)
	jobs := []scheduler.Job{
		{Name: "timeout-sweep", Steps: []scheduler.Step{{Name: "sweep", Run: func(ctx context.Context, _ scheduler.StepContext) (string, error) {
			r, err := n.Orchestrator.TimeoutSweep(ctx)
			return fmt.Sprintf("%+v", r), err
		}}, {Name: "fx", Run: func(ctx context.Context, _ scheduler.StepContext) (string, error) {
			// FX leg locks past their timelock or over a dead quote are
			// refunded; settled conduits are finalised (001 §17.4).
			if n.FX == nil {
				return "no FX service", nil
			}
			r, err := n.FX.Sweep(ctx)
			return fmt.Sprintf("%+v", r), err
		}}}},
		{Name: "outbox-drain", Steps: []scheduler.Step{{Name: "drain", Run: func(ctx context.Context, _ scheduler.StepContext) (string, error) {
			return n.drainOutboxes(ctx)
		}}}},
		{Name: "idempotency-ttl-cleanup", Steps: []scheduler.Step{{Name: "sweep", RunTx: func(ctx context.Context, tx *store.Tx, _ scheduler.StepContext) (string, error) {
			s, err := keys.Sweep(ctx, tx)
			return fmt.Sprintf("orphans %d, expired %d", s.Orphans, s.Expired), err
		}}}},
		{Name: "case-sla-escalation", Steps: []scheduler.Step{{Name: "escalate", RunTx: func(ctx context.Context, tx *store.Tx, _ scheduler.StepContext) (string, error) {
			ids, err := cs.SweepSLA(ctx, tx)
			return fmt.Sprintf("escalated %d", len(ids)), err
		}}}},
	}
	for _, j := range jobs {
		if err := reg.Register(j); err != nil {
			return err
		}
	}
	var exchanges []*overnight.Exchange
	for _, a := range n.adapters() {
		if x := n.Banks[a.BankID()].Exchange; x != nil {
			exchanges = append(exchanges, x)
		}
	}
	if err := overnight.Register(reg, exchanges); err != nil {
		return err
	}
	_, err := eod.Register(ctx, reg, eod.Config{DB: n.DB, Banks: n.adapters(), DataDir: n.DataDir, BalanceFile: n.BalanceFile,
		Cases: cs, Clock: clk, Logger: log})
	return err
}

// BalanceFile is where EOD finds a bank's core balance file: a bank whose
// simulated core runs in this node has it write the file now (what the
// core does in its batch window); another core drops it into
// eod.BalanceDir.
func (n *Node) BalanceFile(ctx context.Context, bank, businessDate string) (string, error) {
	if b := n.Banks[bank]; b != nil && b.Core != nil {
		return b.Core.DropBalanceFile(ctx, eod.BalanceDir(n.DataDir), businessDate)
	}
	return eod.BalanceFilePath(n.DataDir, bank, businessDate)
}

// drainRounds bounds one run of the outbox-drain job: each round is one
// fair pass over every bank (one posting per account).
const drainRounds = 1024

// drainOutboxes is the outbox-drain job, an operator's manual trigger of
// what each bank's outbox loop (outbox.Run) does continuously: claims whose
// lease ran out go to in-doubt resolution, in-doubt postings are asked for
// by reference, due postings are sent, and Cases a crash left unopened are
// opened. It takes turns across banks and accounts (one fair pass per bank
// per round), so a bank with thousands of postings waiting does not hold
// back the next.
func (n *Node) drainOutboxes(ctx context.Context) (string, error) {
	cfg := outbox.RunConfig{Identity: n.ID, Worker: "outbox-drain-job"}
	obs := make([]*outbox.Outbox, 0, len(n.Banks))
	for _, a := range n.adapters() {
		obs = append(obs, a.Outbox())
	}
	var errs []error
	recovered, applied := 0, 0
	for _, ob := range obs {
		r, err := ob.RecoverExpiredClaims(ctx)
		recovered += r
		errs = append(errs, err)
	}
	busy := make([]bool, len(obs))
	for i := range busy {
		busy[i] = true
	}
	for round := 0; round < drainRounds && slices.Contains(busy, true) && ctx.Err() == nil; round++ {
		for i, ob := range obs {
			if !busy[i] {
				continue
			}
			r, err := ob.Pass(ctx, cfg)
			applied += r.Applied
			if err != nil {
				errs = append(errs, err)
			}
			busy[i] = err == nil && r.Claimed > 0 && !r.Stopped
		}
	}
	for _, ob := range obs {
		_, err := ob.OpenMissingCases(ctx)
		errs = append(errs, err)
	}
	return fmt.Sprintf("recovered %d stale claims, applied %d postings", recovered, applied), errors.Join(errs...)
}

// adapters lists the banks' adapters in bank order.
func (n *Node) adapters() []*adapter.Adapter {
	ids := make([]string, 0, len(n.Banks))
	for id := range n.Banks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]*adapter.Adapter, 0, len(ids))
	for _, id := range ids {
		out = append(out, n.Banks[id].Adapter)
	}
	return out
}
