package dns

import (
	"context"
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

// Job names of the scheduler catalogue (jobs/scheduler/config.go) that this
// package provides bodies for.
const (
	JobKick           = "dns-kick"
	JobSettle         = "dns-settle"
	JobIntradayCutoff = "dns-intraday-cutoff"
)

// Jobs returns the bodies of dns-kick, dns-settle and dns-intraday-cutoff
// for the given currencies (none: JPY). Each is one RunTx step per
// currency, so its cycle changes and its completion row commit together
// (exactly once, however often the run is restarted).
func (s *Service) Jobs(currencies ...string) []scheduler.Job {
	if len(currencies) == 0 {
		currencies = []string{"JPY"}
	}
	var kick, settle, cutoff []scheduler.Step
	for _, ccy := range currencies {
		ccy := ccy
		kick = append(kick, scheduler.Step{Name: "kick-" + ccy, RunTx: func(ctx context.Context, tx *store.Tx, sc scheduler.StepContext) (string, error) {
			r, err := s.KickDayInTx(ctx, tx, sc.BusinessDate, ccy)
			if err != nil {
				return "", err
			}
			if !r.Applied {
				return fmt.Sprintf("%s already %s", r.Cycle.CycleID, r.Cycle.State), nil
			}
			return fmt.Sprintf("%s kicked: %d transactions, %d banks", r.Cycle.CycleID, r.TxCount, len(r.Positions)), nil
		}})
		settle = append(settle, scheduler.Step{Name: "settle-" + ccy, RunTx: func(ctx context.Context, tx *store.Tx, sc scheduler.StepContext) (string, error) {
			rs, err := s.SettleDayInTx(ctx, tx, sc.BusinessDate, ccy)
			if err != nil {
				return "", err
			}
			if len(rs) == 0 {
				return "no kicked " + ccy + " cycle to settle", nil
			}
			parts := make([]string, len(rs))
			for i, r := range rs {
				parts[i] = r.Cycle.CycleID + " " + r.Cycle.State
				if r.Held {
					parts[i] += fmt.Sprintf(" (%d debtors short)", len(r.Shortfalls))
				}
			}
			return strings.Join(parts, "; "), nil
		}})
		cutoff = append(cutoff, scheduler.Step{Name: "cutoff-" + ccy, RunTx: func(ctx context.Context, tx *store.Tx, sc scheduler.StepContext) (string, error) {
			r, err := s.IntradayCutoffInTx(ctx, tx, sc.BusinessDate, ccy)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%s %s (%d transactions), opened %s", r.Closed.CycleID, r.Closed.State, r.Kick.TxCount, r.Next.CycleID), nil
		}})
	}
	return []scheduler.Job{
		{Name: JobKick, Steps: kick},
		{Name: JobSettle, Steps: settle},
		{Name: JobIntradayCutoff, Steps: cutoff},
	}
}
