package demo

import (
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
	"github.com/zcgw/zcgw/jobs"
	"github.com/zcgw/zcgw/jobs/dns"
	"github.com/zcgw/zcgw/jobs/eod"
	"github.com/zcgw/zcgw/jobs/ledger"
	"github.com/zcgw/zcgw/jobs/overnight"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

// JobRun is one scheduler run of the day.
type JobRun struct {
	Job    string
	At     string // simulated JST time
	Status string // COMPLETED
	Steps  []string
}

// DNSCycle is one settled DNS cycle.
type DNSCycle struct {
	CycleID      string
	State        string
	NetPositions map[string]int64
}

// openScheduler wires the scheduler's Runner on the node's coordinator
// database and the day's clock, with the bodies of the DNS jobs and the
// BULK/DEFERRED windows (jobs.RegisterDNSAndWindows), of the overnight
// file exchange over the node's batch-window banks (overnight.Register)
// and of the end-of-day job (eod.Register), each registered by its own
// package.
func (d *day) openScheduler() error {
	led, err := ledger.Open(d.ctx, d.n.Stores.Location(store.CoordinatorDB), d.clk)
	if err != nil {
		return err
	}
	d.closers = append(d.closers, led.Close)
	reg := scheduler.NewRegistry()
	if d.dns, _, err = jobs.RegisterDNSAndWindows(d.ctx, reg, jobs.DNSAndWindowDeps{DB: d.n.DB, FinalityLog: d.flog,
		Gate: sysmode.Gate{}, Clock: d.clk, Logger: d.log, Acceptor: d.n.Orchestrator}); err != nil {
		return err
	}
	var adapters []*adapter.Adapter
	var exchanges []*overnight.Exchange
	for _, b := range banks {
		adapters = append(adapters, d.n.Banks[b.ID].Adapter)
		if x := d.n.Banks[b.ID].Exchange; x != nil {
			exchanges = append(exchanges, x)
		}
	}
	if err := overnight.Register(reg, exchanges); err != nil {
		return err
	}
	if d.eod, err = eod.Register(d.ctx, reg, eod.Config{DB: d.n.DB, Banks: adapters, DataDir: d.dir, BalanceFile: d.n.BalanceFile, Clock: d.clk, Logger: d.log}); err != nil {
		return err
	}
	if d.runner, err = scheduler.NewRunner(scheduler.Options{Ledger: led, Registry: reg, Config: scheduler.DefaultConfig(),
		Clock: d.clk, Logger: d.log, Holder: "zcgw-demo"}); err != nil {
		return err
	}
	d.printf("  scheduler: jobs %v registered\n", reg.Names())
	return nil
}

// runJob runs one job instance through the scheduler's Runner for the
// business date at the current simulated time, and prints its steps.
func (d *day) runJob(name string) error {
	if err := d.quiesce(30 * time.Second); err != nil {
		return err
	}
	res, err := d.runner.Run(d.ctx, scheduler.Request{Job: name, BusinessDate: d.sum.BusinessDate, By: "zcgw demo"})
	jr := JobRun{Job: name, At: d.now(), Status: string(res.Run.Status)}
	for _, s := range res.Steps {
		jr.Steps = append(jr.Steps, fmt.Sprintf("%s: %s", s.Name, s.Summary))
	}
	d.sum.Jobs = append(d.sum.Jobs, jr)
	d.printf("  job %s (run %d, %s)\n", name, res.Run.RunID, jr.Status)
	for _, s := range jr.Steps {
		d.printf("      %s\n", s)
	}
	if err != nil {
		return violated(InvBatchJobs, "job %s at %s: %v", name, jr.At, err)
	}
	return nil
}

// intradayCutoff closes the morning DNS cycle (kick and settle) and opens
// the afternoon's.
func (d *day) intradayCutoff() error {
	d.at("12:00")
	d.section("DNS intraday cutoff (scheduler job " + dns.JobIntradayCutoff + ")")
	return d.runJob(dns.JobIntradayCutoff)
}

// dnsClose kicks and settles the day's last DNS cycle.
func (d *day) dnsClose() error {
	d.at("16:00")
	d.section("DNS kick (scheduler job " + dns.JobKick + ")")
	if err := d.runJob(dns.JobKick); err != nil {
		return err
	}
	d.at("16:15")
	d.section("DNS settle (scheduler job " + dns.JobSettle + ")")
	return d.runJob(dns.JobSettle)
}

// checkDNS: every cycle of the day settled, each bank's simulated BOJ
// account moved by exactly its net positions, and nothing is left at ZC
// (every settled transfer was netted exactly once).
func (d *day) checkDNS() error {
	d.section("DNS netting check")
	cycles, err := d.dns.CyclesOf(d.ctx, d.sum.BusinessDate, "JPY")
	if err != nil {
		return err
	}
	net := map[string]int64{}
	for _, c := range cycles {
		d.sum.DNS = append(d.sum.DNS, DNSCycle{CycleID: c.CycleID, State: c.State, NetPositions: c.NetPositions})
		d.printf("  cycle %s %s net positions %v\n", c.CycleID, c.State, c.NetPositions)
		if c.State == dns.StateOpen {
			continue // the next cycle, opened by the last cutoff
		}
		if c.State != dns.StateSettled {
			return violated(InvDNSNetting, "cycle %s is %s, want SETTLED", c.CycleID, c.State)
		}
		for b, v := range c.NetPositions {
			net[b] += v
		}
	}
	ps, err := d.n.Orchestrator.Positions(d.ctx)
	if err != nil {
		return err
	}
	boj, zc := map[string]int64{}, map[string]int64{}
	for _, p := range ps {
		if p.Currency != "JPY" {
			continue // the day's DNS cycles net yen; the FX scene's dollars stay at ZC (fx.go checks them)
		}
		switch p.Venue {
		case orchestrator.VenueBOJ:
			boj[p.BankID] += p.Balance - d.opening[p.BankID+"/"+p.Venue]
		case orchestrator.VenueZC:
			zc[p.BankID] += p.Balance - d.opening[p.BankID+"/"+p.Venue]
		}
	}
	ids := make([]string, 0, len(banks))
	for _, b := range banks {
		ids = append(ids, b.ID)
	}
	sort.Strings(ids)
	var sum int64
	for _, id := range ids {
		d.printf("  bank %s: BOJ moved %12s, DNS net %12s, left at ZC %12s\n", id, yen(boj[id]), yen(net[id]), yen(zc[id]))
		if boj[id] != net[id] || zc[id] != 0 {
			return violated(InvDNSNetting, "bank %s: BOJ moved %d, DNS net positions %d, left at ZC %d (want BOJ = net, nothing left at ZC)",
				id, boj[id], net[id], zc[id])
		}
		sum += boj[id]
	}
	if sum != 0 {
		return violated(InvConservation, "BOJ accounts moved %d in total, want 0", sum)
	}
	return nil
}

// endOfDay runs the EOD job: close the date, reset limits, audit every
// chain, reconcile every bank's shadow ledger with its core (the
// out-of-band change shows up as a drift with a Case) and write the
// reconciliation workbook.
func (d *day) endOfDay() error {
	d.at("23:30")
	d.section("end of day (scheduler job " + eod.JobName + ")")
	if err := d.runJob(eod.JobName); err != nil {
		return err
	}
	d.sum.Workbook = d.eod.WorkbookPath(d.sum.BusinessDate)
	st, err := os.Stat(d.sum.Workbook)
	if err != nil {
		return violated(InvWorkbook, "no reconciliation workbook: %v", err)
	}
	d.printf("  workbook %s (%d bytes)\n", d.sum.Workbook, st.Size())
	audit, ok, err := eod.ChainAuditOf(d.ctx, d.n.DB, d.sum.BusinessDate)
	if err != nil {
		return err
	}
	if !ok || audit.Breaks != 0 {
		return violated(InvChainAudit, "EOD chain audit: recorded %v, %s", ok, audit.Text())
	}
	d.printf("  EOD chain audit: %s\n", audit.Text())
	return d.checkDrift()
}

// DriftFound is a drift reconciliation found, with its Case.
type DriftFound struct {
	Bank        string
	Account     string // account key
	CoreAccount string
	Drift       int64 // core - shadow
	CaseID      string
}

// checkDrift: reconciliation found exactly the out-of-band changes, each
// as an OPEN drift with a Case, and nothing else.
func (d *day) checkDrift() error {
	byCore := map[string]account{}
	for _, a := range accounts {
		byCore[a.Bank+"/"+a.Core()] = a
	}
	found := map[string]int64{}
	for _, b := range banks {
		drifts, err := d.n.Banks[b.ID].Adapter.Drifts(d.ctx, "")
		if err != nil {
			return err
		}
		for _, dr := range drifts {
			a := byCore[b.ID+"/"+dr.CoreAccount]
			d.sum.Drifts = append(d.sum.Drifts, DriftFound{Bank: b.ID, Account: a.Key, CoreAccount: dr.CoreAccount, Drift: dr.Drift, CaseID: dr.CaseID})
			d.printf("  drift at bank %s: %s core %s shadow %s core %s drift %s (%s) -> Case %s\n", b.ID, a.Key, dr.CoreAccount,
				yen(dr.ShadowBalance), yen(dr.CoreBalance), yen(dr.Drift), dr.Status, dr.CaseID)
			if dr.CaseID == "" {
				return violated(InvDriftCase, "drift %s at bank %s has no Case", dr.DriftID, b.ID)
			}
			found[a.Key] += dr.Drift
		}
	}
	for key, delta := range d.oob {
		if found[key] != delta {
			return violated(InvDriftCase, "the out-of-band change of %d at %s was found as a drift of %d", delta, key, found[key])
		}
	}
	if len(found) != len(d.oob) {
		return violated(InvDriftCase, "drifts found at %v, out-of-band changes made at %v", found, d.oob)
	}
	return nil
}
