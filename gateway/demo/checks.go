package demo

import (
	"fmt"
	"sort"

	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
)

// BalanceCheck is the outcome of the balance invariants.
type BalanceCheck struct {
	Accounts       int   // customer accounts checked at their cores
	SettledVolume  int64 // sum of the settled transfers' amounts
	OutOfBand      int64 // sum of the out-of-band core changes (excluded from conservation)
	BanksZeroSum   int   // banks whose customer movements equal their settlement position movement
	SystemCustomer int64 // system-wide customer movement net of out-of-band changes (must be 0)
	SystemVenues   map[string]int64
	OK             bool
}

// checkBalances compares every customer balance at its core with its
// opening balance plus the settled transfers (payer -amount, payee
// +amount) and the out-of-band changes; then, per bank, the customers'
// movement with the bank's settlement position at ZC (zero-sum inside the
// bank's books), and system-wide conservation.
func (d *day) checkBalances() error {
	d.section("balance check: cores, settlement positions, conservation")
	want := map[string]int64{}
	var volume int64
	for _, t := range d.transfers {
		if t.State != "SETTLED" {
			continue
		}
		want[t.From] -= t.Amount
		want[t.To] += t.Amount
		volume += t.Amount
	}
	bankMoved := map[string]int64{}
	var sys, oob int64
	for _, a := range accounts {
		bal, err := d.n.Banks[a.Bank].Core.Balance(d.ctx, a.Core())
		if err != nil {
			return err
		}
		moved := bal.Balance - a.Opening - d.oob[a.Key]
		mark := "ok"
		if moved != want[a.Key] {
			mark = "MISMATCH"
		}
		extra := ""
		if d.oob[a.Key] != 0 {
			extra = fmt.Sprintf(" (+ out-of-band %s)", yen(d.oob[a.Key]))
		}
		d.printf("  %-14s core %12s  moved %12s  expected %12s%s  %s\n", a.Key, money(a.Currency, bal.Balance), money(a.Currency, moved), money(a.Currency, want[a.Key]), extra, mark)
		if moved != want[a.Key] {
			return violated(InvPayerPayee, "%s at core %s moved %d (net of out-of-band changes), the settled transfers say %d",
				a.Key, a.Core(), moved, want[a.Key])
		}
		bankMoved[a.Bank] += moved
		sys += moved
		oob += d.oob[a.Key]
	}
	ps, err := d.n.Orchestrator.Positions(d.ctx)
	if err != nil {
		return err
	}
	// A bank's settlement position is its net at ZC (the immediate lanes)
	// plus its simulated BOJ account (DNS cycles move the ZC net there
	// when they settle), each against its opening value.
	pos := map[string]int64{}
	venues := map[string]int64{}
	for _, p := range ps {
		v := p.Balance - d.opening[p.BankID+"/"+p.Venue]
		pos[p.BankID] += v
		venues[p.Venue] += v
	}
	zero := 0
	for _, b := range banks {
		d.printf("  bank %s customers moved %12s, settlement position (ZC + BOJ) moved %12s\n", b.ID, yen(bankMoved[b.ID]), yen(pos[b.ID]))
		if bankMoved[b.ID] != pos[b.ID] {
			return violated(InvZeroSumBank, "bank %s: customers moved %d but its settlement position (ZC + BOJ) moved %d", b.ID, bankMoved[b.ID], pos[b.ID])
		}
		zero++
	}
	if sys != 0 {
		return violated(InvConservation, "customer balances moved %d system-wide (net of out-of-band changes), want 0", sys)
	}
	for v, sum := range venues {
		if sum != 0 {
			return violated(InvConservation, "settlement positions at %s moved %d in total, want 0", v, sum)
		}
	}
	d.printf("  system-wide: customers moved %s, positions at ZC %s, at BOJ %s: conserved\n", yen(sys),
		yen(venues[orchestrator.VenueZC]), yen(venues[orchestrator.VenueBOJ]))
	d.sum.Balances = BalanceCheck{Accounts: len(accounts), SettledVolume: volume, OutOfBand: oob, BanksZeroSum: zero,
		SystemCustomer: sys, SystemVenues: venues, OK: true}
	return nil
}

// short abbreviates a hash for printing.
func short(h string) string {
	if len(h) <= 12 {
		return h
	}
	return h[:12] + "…"
}

// checkH: once every transfer is final, every H reservation has been
// released (settled or cancelled), so no bank has H in use.
func (d *day) checkH() error {
	for _, b := range banks {
		var u hlimit.Usage
		if err := d.n.DB.Read(d.ctx, func(tx *store.Tx) error {
			var err error
			u, err = hlimit.UsageOf(d.ctx, tx, b.ID, "JPY")
			return err
		}); err != nil {
			return err
		}
		d.printf("  bank %s H in use %s of %s\n", b.ID, yen(u.Used), yen(u.Limit))
		if u.Used != 0 {
			return violated(InvHReleased, "bank %s still has %d of H in use with every transfer final", b.ID, u.Used)
		}
	}
	return nil
}

// snapshotPositions records every settlement position at the opening.
func (d *day) snapshotPositions() error {
	ps, err := d.n.Orchestrator.Positions(d.ctx)
	if err != nil {
		return err
	}
	d.opening = map[string]int64{}
	for _, p := range ps {
		d.opening[p.BankID+"/"+p.Venue] += p.Balance
		d.printf("  opening settlement position: bank %s at %s %s\n", p.BankID, p.Venue, yen(p.Balance))
	}
	return nil
}

// ChainAudit is the outcome of verifying the FinalityLog.
type ChainAudit struct {
	Chains  int
	Entries int
	Breaks  []finality.Break
	OK      bool
}

// checkChains verifies each transfer's chain over HTTP (GET …/verify),
// prints the entries (GET …/events) of one transfer of each kind, then
// verifies every chain of the log (finality.VerifyAll).
func (d *day) checkChains() error {
	d.section("FinalityLog: each transfer's hash chain, then every chain")
	shown := map[string]bool{}
	for _, t := range d.transfers {
		v, err := d.api.verify(d.ctx, t.TxID)
		if err != nil {
			return err
		}
		status := "intact"
		if !v.Intact {
			status = fmt.Sprintf("BROKEN at %+v", v.Break)
		}
		d.printf("  %s (%s, %s) chain %s: %d entries, %s\n", t.TxID, t.Via, t.State, v.ChainID, v.Entries, status)
		if kind := t.Via + "/" + t.State; !shown[kind] {
			shown[kind] = true
			evs, err := d.api.events(d.ctx, t.TxID)
			if err != nil {
				return err
			}
			for _, e := range evs {
				from := e.StateFrom
				if from == "" {
					from = "-"
				}
				d.printf("      #%-4d %-20s %-20s -> %-20s hash %s prev %s\n", e.EventSeq, e.EventType, from, e.StateTo,
					short(e.EntryHash), short(e.PrevHash))
			}
		}
		if !v.Intact {
			return violated(InvChainAudit, "chain of %s broken: %+v", t.TxID, v.Break)
		}
	}
	rep, err := finality.VerifyAll(d.ctx, d.n.DB)
	if err != nil {
		return err
	}
	d.sum.Chains = ChainAudit{Chains: rep.Chains, Entries: rep.Entries, Breaks: rep.Breaks, OK: rep.OK()}
	d.printf("  finality.VerifyAll: %d chains, %d entries, %d breaks\n", rep.Chains, rep.Entries, len(rep.Breaks))
	if !rep.OK() {
		sort.Slice(rep.Breaks, func(i, j int) bool { return rep.Breaks[i].EventSeq < rep.Breaks[j].EventSeq })
		return violated(InvChainAudit, "%d chains broken, first %+v", len(rep.Breaks), rep.Breaks[0])
	}
	return nil
}
