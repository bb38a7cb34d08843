package orchestrator

import (
	"context"
	"time"

	"github.com/zcgw/zcgw/coordinator/params"
	"github.com/zcgw/zcgw/coordinator/store"
)

// timeoutsTx is the Timeouts in force, read at use time inside tx: a
// PR-* timeout an operator set in the parameter ledger (coordinator/params)
// wins over Config.Timeouts, which are its defaults for this orchestrator.
func (o *Orchestrator) timeoutsTx(ctx context.Context, tx *store.Tx) (Timeouts, error) {
	changed, err := params.ChangedTx(ctx, tx)
	if err != nil {
		return Timeouts{}, err
	}
	t := o.to
	for name, dst := range map[params.Name]*time.Duration{params.ExecTimeout: &t.Exec, params.PayeeProofTimeout: &t.PayeeProof,
		params.SuspendedTimeout: &t.Suspended} {
		if v, ok := changed[name]; ok {
			*dst = time.Duration(v) * time.Second
		}
	}
	if v, ok := changed[params.AdapterDownAfter]; ok {
		t.AdapterDownAfter = int(v)
	}
	return t, nil
}

// timeouts is timeoutsTx in its own read transaction.
func (o *Orchestrator) timeouts(ctx context.Context) (t Timeouts, err error) {
	err = o.db.Read(ctx, func(tx *store.Tx) error {
		t, err = o.timeoutsTx(ctx, tx)
		return err
	})
	return t, err
}

// Lease is the work-item lease of this orchestrator: every timeout it
// races (PR-EXEC-TIMEOUT, PR-PAYEE-PROOF-TIMEOUT, PR-SUSPENDED-TIMEOUT)
// must stay longer, so the parameter ledger refuses a change that would
// break it (params.NewLedger's lease).
func (o *Orchestrator) Lease() time.Duration { return o.cfg.Lease }
