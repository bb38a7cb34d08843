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
	t := o.to
	for _, p := range []struct {
		name params.Name
		dst  *time.Duration
	}{{params.ExecTimeout, &t.Exec}, {params.PayeeProofTimeout, &t.PayeeProof}, {params.SuspendedTimeout, &t.Suspended}} {
		v, err := params.ShowTx(ctx, tx, p.name)
		if err != nil {
			return Timeouts{}, err
		}
		if !v.IsDefault {
			*p.dst = time.Duration(v.Value) * time.Second
		}
	}
	v, err := params.ShowTx(ctx, tx, params.AdapterDownAfter)
	if err != nil {
		return Timeouts{}, err
	}
	if !v.IsDefault {
		t.AdapterDownAfter = int(v.Value)
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
