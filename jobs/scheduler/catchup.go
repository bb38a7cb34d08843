package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/jobs/ledger"
)

// Missed is one daily instance whose scheduled fire time passed without a
// COMPLETED run.
type Missed struct {
	Job          string
	BusinessDate string
	Due          time.Time // the fire time it was due at
}

// CatchUpPlan lists, for every enabled daily job with catch_up on and a
// registered body, the business dates whose fire time is in
// (last completed date, now] by the clock, oldest first across all jobs
// (ordered by due time, then job name). Each job contributes at most
// CatchUpMaxDays dates, the oldest ones, so that dates are never skipped:
// the rest are in Pending and are caught up by the next start-up (or by
// hand). A job that never completed a run has no reference date and is
// not caught up.
func (r *Runner) CatchUpPlan(ctx context.Context) (plan []Missed, pending map[string]int, err error) {
	now := r.clk.Now()
	pending = map[string]int{}
	for _, name := range r.cfg.Names() {
		jc := r.cfg.Jobs[name]
		if _, ok := r.reg.Lookup(name); !ok || !jc.Enabled || !jc.CatchUp || jc.Instance != Daily || r.cfg.CatchUpMaxDays == 0 {
			continue
		}
		last, err := r.ledger.LastCompletedDate(ctx, name, ledger.DailySlot)
		if err != nil {
			return nil, nil, err
		}
		if last == "" {
			continue
		}
		lastDay, err := clock.ParseBusinessDate(last)
		if err != nil {
			return nil, nil, fmt.Errorf("scheduler: %s: stored business date %q: %w", name, last, err)
		}
		t := lastDay.AddDate(0, 0, 1).Add(-time.Second) // Next is strictly after t
		seen := map[string]bool{}
		var dates []Missed
		for {
			fire := jc.Next(t)
			if fire.IsZero() || fire.After(now) {
				break
			}
			t = fire
			d := clock.BusinessDate(fire)
			if d <= last || seen[d] {
				continue
			}
			seen[d] = true
			if len(dates) == r.cfg.CatchUpMaxDays {
				pending[name]++
				continue
			}
			dates = append(dates, Missed{Job: name, BusinessDate: d, Due: fire})
		}
		plan = append(plan, dates...)
	}
	sort.SliceStable(plan, func(i, j int) bool {
		if !plan[i].Due.Equal(plan[j].Due) {
			return plan[i].Due.Before(plan[j].Due)
		}
		return plan[i].Job < plan[j].Job
	})
	return plan, pending, nil
}

// CatchUp runs CatchUpPlan in order (trigger "catchup"). An instance that
// another runner completed meanwhile is skipped. It stops at the first
// failure (a later date must not run before an earlier one succeeded) and
// when another runner holds a job's lease (that runner is catching up).
func (r *Runner) CatchUp(ctx context.Context) ([]Result, error) {
	plan, pending, err := r.CatchUpPlan(ctx)
	if err != nil {
		return nil, err
	}
	for job, n := range pending {
		r.log.Warn("job.catchup_truncated", "job", job, "pending_dates", n, "catch_up_max_days", r.cfg.CatchUpMaxDays)
	}
	var out []Result
	for _, m := range plan {
		r.log.Info("job.catchup", "job", m.Job, "business_date", m.BusinessDate, "due_at", clock.Stamp(m.Due))
		res, err := r.Run(ctx, Request{Job: m.Job, BusinessDate: m.BusinessDate, Trigger: "catchup"})
		if errors.Is(err, ledger.ErrAlreadyCompleted) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("scheduler: catch-up stopped at %s %s: %w", m.Job, m.BusinessDate, err)
		}
		out = append(out, res)
	}
	return out, nil
}
