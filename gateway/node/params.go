package node

import (
	"context"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/params"
)

// OpenParams opens the PR-* parameter ledger of a data folder no node
// serves, for `zcgw params set` run in this process, under the same rules
// as OpenModes (the folder's node lock, the event-outbox hook). The
// ledger guards the timeouts with params.DefaultLease: the lease a node
// started on the folder takes. close releases everything.
func OpenParams(ctx context.Context, dataDir string, clk clock.Clock) (l *params.Ledger, close func() error, err error) {
	if clk == nil {
		clk = clock.System{}
	}
	db, log, close, err := openOperator(ctx, dataDir, clk)
	if err != nil {
		return nil, nil, err
	}
	return params.NewLedger(db, log, clk, nil, params.DefaultLease), close, nil
}
