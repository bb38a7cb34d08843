package lane

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

func (e *env) seedHtlc(t *testing.T, id string) HtlcContract {
	t.Helper()
	c := HtlcContract{HtlcID: "HTLC-" + id, TxID: id, Hashlock: "ab", Timelock: "2026-04-01T10:00:00Z", Amount: 5000,
		PayerBankID: "001", PayeeBankID: "002", CreatedAt: "2026-04-01T09:00:00Z"}
	n := newTx(id)
	n.Lane, n.SideUpdates = "HTLC", InsertHtlc(c)
	e.seedNewTx(t, n, Received, OwnerZC)
	if _, err := e.lanes.TransitionWithLog(context.Background(), Transition{TxID: id, From: Received, To: HtlcLocked,
		EventType: finality.HtlcLocked, SideUpdates: HtlcEdge(c.HtlcID, HtlcReceived, HtlcContractLocked, "t", nil)}); err != nil {
		t.Fatal(err)
	}
	return c
}

// A claim (HTLC_LOCKED -> HTLC_FULFILL_REQUESTED) races the timelock cancel
// (HTLC_LOCKED -> DECIDED_CANCEL), each carrying its contract edge: exactly
// one wins, the contract ends in the state matching the transaction, and
// its version moved once.
func TestHtlcClaimRacesCancel(t *testing.T) {
	ctx := context.Background()
	wins := map[string]int{}
	for round := 0; round < 8; round++ {
		e := newEnv(t)
		c := e.seedHtlc(t, "TX-H")
		var wg sync.WaitGroup
		start := make(chan struct{})
		var claimed, cancelled atomic.Int32
		for i := 0; i < racers; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				var applied bool
				var err error
				if i%2 == 0 {
					var res Result
					res, err = e.lanes.TransitionWithLog(ctx, Transition{TxID: "TX-H", From: HtlcLocked, To: HtlcFulfillRequested,
						EventType:   finality.HtlcFulfillRequested,
						SideUpdates: HtlcEdge(c.HtlcID, HtlcContractLocked, HtlcContractFulfill, "t", map[string]any{"secret_verified": 1})})
					if applied = res.Applied; applied {
						claimed.Add(1)
					}
				} else {
					var res CancelResult
					res, err = e.lanes.CancelInFlightTx(ctx, Cancel{TxID: "TX-H", ReasonCode: "TIMELOCK_EXPIRED", FromStates: []TxState{HtlcLocked},
						SideUpdates: HtlcEdge(c.HtlcID, HtlcContractLocked, HtlcContractCanceled, "t", nil)})
					if applied = res.Applied; applied {
						cancelled.Add(1)
					}
				}
				if err != nil && !domainerr.Has(err, "CONCURRENCY_CONFLICT") {
					t.Error(err)
				}
			}(i)
		}
		close(start)
		wg.Wait()
		if claimed.Load()+cancelled.Load() != 1 {
			t.Fatalf("round %d: %d claims and %d cancels applied", round, claimed.Load(), cancelled.Load())
		}
		var got HtlcContract
		if err := e.db.Read(ctx, func(tx *store.Tx) (err error) { got, err = ReadHtlc(ctx, tx, c.HtlcID); return err }); err != nil {
			t.Fatal(err)
		}
		want := HtlcContractFulfill
		if cancelled.Load() == 1 {
			want = HtlcContractCanceled
		}
		if got.State != want || got.Version != 2 || got.SecretVerified != (want == HtlcContractFulfill) {
			t.Fatalf("round %d: contract %+v, want %s at version 2", round, got, want)
		}
		wins[string(want)]++
	}
	t.Logf("wins %v", wins)
}

// An edge whose contract is not in from fails the whole batch: the
// transaction edge it rides on is rolled back too.
func TestHtlcEdgeMissRollsBack(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.seedHtlc(t, "TX-M")
	_, err := e.lanes.TransitionWithLog(ctx, Transition{TxID: "TX-M", From: HtlcLocked, To: HtlcFulfillRequested, EventType: finality.HtlcFulfillRequested,
		SideUpdates: HtlcEdge(c.HtlcID, HtlcContractOnchain, HtlcContractFulfill, "t", nil)})
	if !domainerr.Has(err, "CONCURRENCY_CONFLICT") {
		t.Fatalf("err %v", err)
	}
	var state string
	if err := e.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT state FROM Transactions WHERE txid = 'TX-M'`).Scan(&state)
	}); err != nil || state != string(HtlcLocked) {
		t.Fatalf("transaction %s %v after a missed contract edge", state, err)
	}
	if err := e.db.Read(ctx, func(tx *store.Tx) error { _, err := ReadHtlc(ctx, tx, "HTLC-nope"); return err }); !domainerr.Has(err, "HTLC_NOT_FOUND") {
		t.Fatalf("absent HTLC: %v", err)
	}
}
