package lane

import (
	"context"
	"sync"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Record appends an evidence entry on a terminal row without moving it,
// bumps version, and refuses a non-evidence event type, another owner and
// read-only modes; a row in another state is not applied.
func TestRecordAppendsEvidenceWithoutATransition(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.seedTx(t, "TX-R", FailedExecution, OwnerZC)
	res, err := e.lanes.RecordWithLog(ctx, Record{TxID: "TX-R", State: FailedExecution, EventType: finality.CreditFailedProofSubmitted,
		Payload: map[string]any{"proof_type": "CREDIT_FAILED_PROOF"}})
	if err != nil || !res.Applied || res.State != FailedExecution || res.Version != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	if res.Entry.StateFrom != "FAILED_EXECUTION" || res.Entry.StateTo != "FAILED_EXECUTION" || res.Entry.EventType != finality.CreditFailedProofSubmitted {
		t.Fatalf("entry %+v", res.Entry)
	}
	var state string
	var version int64
	if err := e.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT state, version FROM Transactions WHERE txid = 'TX-R'`).Scan(&state, &version)
	}); err != nil || state != "FAILED_EXECUTION" || version != 1 {
		t.Fatalf("row %s v%d %v", state, version, err)
	}
	if _, err := e.lanes.RecordWithLog(ctx, Record{TxID: "TX-R", State: FailedExecution, EventType: finality.Settled}); domainerr.Code(err) != "INVALID_REQUEST" {
		t.Fatalf("non-evidence event: %v", err)
	}
	if _, err := e.lanes.RecordWithLog(ctx, Record{TxID: "TX-R", State: FailedExecution, EventType: finality.ReversalCompleted, Issuer: "VENUE:BOJ"}); domainerr.Code(err) != "OWNERSHIP_VIOLATION" {
		t.Fatalf("other issuer: %v", err)
	}
	if res, err := e.lanes.RecordWithLog(ctx, Record{TxID: "TX-R", State: Settled, EventType: finality.ReversalCompleted}); err != nil || res.Applied {
		t.Fatalf("wrong state applied: %+v %v", res, err)
	}
	if _, _, err := e.modes.ActivateBCP(ctx, "op-1", "drill"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.lanes.RecordWithLog(ctx, Record{TxID: "TX-R", State: FailedExecution, EventType: finality.ReversalCompleted}); domainerr.Code(err) != "SYSTEM_BCP_READ_ONLY" {
		t.Fatalf("BCP: %v", err)
	}
	rep, err := finality.VerifyChain(ctx, e.db, "TX-R")
	if err != nil || !rep.OK() || rep.Entries != 2 {
		t.Fatalf("chain %+v %v", rep, err)
	}
}

// N goroutines record on the same row read at the same version: the
// version CAS lets each append land on the chain once, none lost, none
// doubled, and the chain stays intact.
func TestRecordRace(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.seedTx(t, "TX-RR", FailedExecution, OwnerZC)
	const n = 8
	var wg sync.WaitGroup
	applied := make(chan bool, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.lanes.RecordWithLog(ctx, Record{TxID: "TX-RR", State: FailedExecution, EventType: finality.MisrecordCorrected})
			if err != nil {
				t.Error(err)
			}
			applied <- res.Applied
		}()
	}
	wg.Wait()
	close(applied)
	got := 0
	for a := range applied {
		if a {
			got++
		}
	}
	rep, err := finality.VerifyChain(ctx, e.db, "TX-RR")
	if err != nil || !rep.OK() || rep.Entries != 1+got || got != n {
		t.Fatalf("applied %d of %d, chain %+v %v", got, n, rep, err)
	}
}
