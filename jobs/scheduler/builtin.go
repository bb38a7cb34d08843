package scheduler

import (
	"context"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/ledger"
)

// LedgerPruneJob is the one job this package implements itself: it keeps
// the ledger from growing without bound by deleting repeating-job runs
// (one per minute for the sweeps) older than LedgerRetentionDays. Daily
// instances are kept forever.
const LedgerPruneJob = "jobs-ledger-prune"

// LedgerRetentionDays is how long repeating-job runs are kept.
const LedgerRetentionDays = 30

// RegisterBuiltins registers the jobs implemented here (LedgerPruneJob).
func RegisterBuiltins(reg *Registry) error {
	return reg.Register(Job{Name: LedgerPruneJob, Steps: []Step{{
		Name: "prune-repeating-runs",
		RunTx: func(ctx context.Context, tx *store.Tx, sc StepContext) (string, error) {
			day, err := clock.ParseBusinessDate(sc.BusinessDate)
			if err != nil {
				return "", err
			}
			before := clock.BusinessDate(day.AddDate(0, 0, -LedgerRetentionDays))
			n, err := ledger.PruneRepeatingRuns(ctx, tx, before)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("deleted %d repeating-job runs dated before %s", n, before), nil
		},
	}}})
}
