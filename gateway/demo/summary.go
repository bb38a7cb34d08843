package demo

import (
	"errors"
	"time"
)

// Summary is what the demo day did and found.
type Summary struct {
	DataDir      string // the run's folder (absolute)
	BusinessDate string // JST YYYY-MM-DD

	Transfers []Transfer
	Settled   int
	Cancelled int
	InCases   int // transfers with a Case

	Offline   OfflineCore
	LostReply LostReply

	Files     ResultFile
	Overnight Overnight
	Jobs      []JobRun
	DNS       []DNSCycle
	Workbook  string // the reconciliation workbook (absolute path)
	Drifts    []DriftFound
	FX        map[string]string // FX scene: gtid -> final FxTransfers status (fx.go)

	Events EventOutbox

	Balances BalanceCheck
	Chains   ChainAudit

	Elapsed time.Duration
	// Failed names the invariant that failed ("" when all held).
	Failed string
}

// summary fills the counts and prints the closing summary.
func (d *day) summary(err error) {
	d.sum.Transfers = d.sum.Transfers[:0]
	for _, t := range d.transfers {
		d.sum.Transfers = append(d.sum.Transfers, *t)
		switch t.State {
		case "SETTLED":
			d.sum.Settled++
		case "CANCELLED":
			d.sum.Cancelled++
		}
		if t.CaseID != "" {
			d.sum.InCases++
		}
	}
	var inv *InvariantError
	if errors.As(err, &inv) {
		d.sum.Failed = inv.Invariant
	}
	d.printf("\n== summary of %s\n", d.sum.BusinessDate)
	d.printf("  transfers: %d settled, %d cancelled, %d in Cases (of %d: %d over HTTP, %d from a dropped Zengin file)\n",
		d.sum.Settled, d.sum.Cancelled, d.sum.InCases, len(d.transfers), len(d.transfers)-len(d.fileTransfers), len(d.fileTransfers))
	if d.sum.Balances.OK {
		d.printf("  balances: %d accounts match their cores; %d banks zero-sum; conserved system-wide (settled volume %s)\n",
			d.sum.Balances.Accounts, d.sum.Balances.BanksZeroSum, yen(d.sum.Balances.SettledVolume))
	}
	if o := d.sum.Offline; o.Bank != "" {
		d.printf("  core %s offline: %d postings queued, %d applied when it returned\n", o.Bank, o.Queued, o.Drained)
	}
	if l := d.sum.LostReply; l.TxID != "" {
		d.printf("  lost reply at core %s: posting sent %d time(s), resolved by %d inquiry(ies), %d journal line(s)\n", l.Bank, l.Sends, l.Lookups, l.Journal)
	}
	if o := d.sum.Overnight; o.PostingFile != "" {
		d.printf("  overnight file to core %s: %d postings, %d confirmed by its result file, %d refused\n", o.Bank, o.Records, o.Posted, o.Blocked)
	}
	for _, dr := range d.sum.Drifts {
		d.printf("  drift found: bank %s account %s (core %s) %s -> Case %s\n", dr.Bank, dr.Account, dr.CoreAccount, yen(dr.Drift), dr.CaseID)
	}
	if d.sum.Chains.OK {
		d.printf("  chain audit: OK (%d chains, %d entries)\n", d.sum.Chains.Chains, d.sum.Chains.Entries)
	}
	if e := d.sum.Events; e.Rows > 0 {
		d.printf("  events: %d in the event outbox, %d unsent (no Kafka configured)\n", e.Rows, e.Unsent)
	}
	if j := len(d.sum.Jobs); j > 0 {
		d.printf("  scheduler runs: %d (", j)
		for i, r := range d.sum.Jobs {
			if i > 0 {
				d.printf(", ")
			}
			d.printf("%s %s %s", r.At, r.Job, r.Status)
		}
		d.printf(")\n")
	}
	d.printf("  files:\n")
	if f := d.sum.Files; f.Path != "" {
		d.printf("    result file (bank %s): %s (%d records: %s)\n", f.Bank, f.Path, f.Records, codesText(f.Codes))
		d.printf("    the file it answers:   %s\n", f.Dropped)
	}
	if o := d.sum.Overnight; o.PostingFile != "" {
		d.printf("    overnight posting file (core %s): %s\n", o.Bank, o.PostingFile)
		d.printf("    the core's result file:         %s\n", o.ResultFile)
	}
	if d.sum.Workbook != "" {
		d.printf("    reconciliation workbook: %s\n", d.sum.Workbook)
	}
	d.printf("    data folder: %s (event log zcgw.log; removed by the next run)\n", d.sum.DataDir)
	d.printf("  took %s\n", d.sum.Elapsed.Round(time.Millisecond))
	if err != nil {
		d.printf("\nFAILED: %v\n", err)
	} else {
		d.printf("\nall invariants held\n")
	}
}
