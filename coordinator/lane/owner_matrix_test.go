package lane

import (
	"context"
	"fmt"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

var matrixOwners = []string{OwnerZC, CycleOwner("DNS-JPY-20260401-01"), OwnerVenueBOJ, OwnerChainDefault}

// For every (state, owner) pair, exactly one issuer — the owner — can move
// the row; every other issuer gets OWNERSHIP_VIOLATION and changes
// nothing. Checked for transitions and cancels; suspends by a non-owner
// are skipped instead.
func TestOwnerMatrix(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	n := 0
	for state := range AllowedTransitions {
		if state.Terminal() {
			continue
		}
		for _, owner := range matrixOwners {
			for _, issuer := range matrixOwners {
				n++
				id := fmt.Sprintf("TX-M%03d", n)
				e.seedTx(t, id, state, owner)
				to := anyNext(state)
				res, err := e.lanes.TransitionWithLog(ctx, Transition{TxID: id, From: state, To: to, EventType: eventFor(to), Issuer: issuer})
				r := e.row(t, id)
				if issuer == owner {
					if err != nil || !res.Applied || r.State != to || r.Version != 1 {
						t.Errorf("(%s, %s) owner could not move it: %+v %v", state, owner, res, err)
					}
					continue
				}
				if domainerr.Code(err) != "OWNERSHIP_VIOLATION" || r.State != state || r.Version != 0 || r.Owner != owner || r.Logs != 1 {
					t.Errorf("(%s, %s) issuer %s: err %v row %+v", state, owner, issuer, err, r)
				}
				if CanTransition(state, DecidedCancel) {
					if _, err := e.lanes.CancelInFlightTx(ctx, Cancel{TxID: id, ReasonCode: "X", Issuer: issuer, SkipReleaseH: true}); domainerr.Code(err) != "OWNERSHIP_VIOLATION" {
						t.Errorf("(%s, %s) cancel by %s: %v", state, owner, issuer, err)
					}
				}
				for _, target := range []TxState{Suspended, PrecheckedSuspended} {
					if CanTransition(state, target) {
						sres, err := e.lanes.SuspendTx(ctx, Suspend{TxID: id, From: state, To: target, ReasonCode: "X", Issuer: issuer})
						if err != nil || !sres.Skipped || sres.Applied {
							t.Errorf("(%s, %s) suspend by %s: %+v %v", state, owner, issuer, sres, err)
						}
					}
				}
				if r2 := e.row(t, id); r2 != r {
					t.Errorf("(%s, %s) refused calls changed the row: %+v -> %+v", state, owner, r, r2)
				}
			}
		}
	}
	t.Logf("%d (state, owner, issuer) combinations", n)
}
