package lane

import (
	"context"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// A hint (HintRow, or the memo of the transaction's own last CAS) is never
// trusted: a stale one, whatever is stale in it, gives the answer a read
// row gives, and the moves it allows are the CAS's.
func TestStaleHintsDecideOnTheReadRow(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.seedTx(t, "TX-1", Received, OwnerZC)
	pass := Transition{TxID: "TX-1", From: Received, To: Prechecked, EventType: finality.PreCheckPassed}
	inTx := func(hint func(tx *store.Tx), fn func(tx *store.Tx) error) error {
		return e.db.Write(ctx, func(tx *store.Tx) error {
			hint(tx)
			return fn(tx)
		})
	}

	// A stale version: the CAS from the hint misses, the row is read and
	// the transition applies from its real version.
	var res Result
	err := inTx(func(tx *store.Tx) { HintRow(tx, "TX-1", Received, 41, OwnerZC) }, func(tx *store.Tx) (err error) {
		res, err = e.lanes.TransitionInTx(ctx, tx, pass)
		return err
	})
	if err != nil || !res.Applied || res.Version != 1 {
		t.Fatalf("stale version: %+v %v", res, err)
	}

	// A hint that says a state the row left: not applied, and
	// PreviousState is where the row really is.
	err = inTx(func(tx *store.Tx) { HintRow(tx, "TX-1", Received, 0, OwnerZC) }, func(tx *store.Tx) (err error) {
		res, err = e.lanes.TransitionInTx(ctx, tx, pass)
		return err
	})
	if err != nil || res.Applied || res.PreviousState != Prechecked || res.Version != 1 {
		t.Fatalf("stale state: %+v %v", res, err)
	}

	// A hint with another owner does not refuse a row ZC owns; a hint
	// that says ZC owns a row another owner holds does not move it.
	err = inTx(func(tx *store.Tx) { HintRow(tx, "TX-1", Prechecked, 1, "VENUE:BOJ") }, func(tx *store.Tx) (err error) {
		res, err = e.lanes.TransitionInTx(ctx, tx, Transition{TxID: "TX-1", From: Prechecked, To: HReserved, EventType: finality.HReserved})
		return err
	})
	if err != nil || !res.Applied || res.Version != 2 {
		t.Fatalf("stale foreign owner: %+v %v", res, err)
	}
	e.exec(t, "UPDATE Transactions SET owner = 'VENUE:BOJ' WHERE txid = 'TX-1'")
	err = inTx(func(tx *store.Tx) { HintRow(tx, "TX-1", HReserved, 2, OwnerZC) }, func(tx *store.Tx) error {
		_, err := e.lanes.TransitionInTx(ctx, tx, Transition{TxID: "TX-1", From: HReserved, To: DecidedToSettle, EventType: finality.DecidedToSettle})
		return err
	})
	if domainerr.Code(err) != "OWNERSHIP_VIOLATION" {
		t.Fatalf("stale ZC owner: %v", err)
	}
	e.exec(t, "UPDATE Transactions SET state = 'DECIDED_TO_SETTLE' WHERE txid = 'TX-1'")
	var susp SuspendResult
	err = inTx(func(tx *store.Tx) { HintRow(tx, "TX-1", DecidedToSettle, 2, OwnerZC) }, func(tx *store.Tx) (err error) {
		susp, err = e.lanes.SuspendInTx(ctx, tx, Suspend{TxID: "TX-1", From: DecidedToSettle, To: Suspended, ReasonCode: "SUSPEND_ADAPTER_DOWN"})
		return err
	})
	if err != nil || susp.Applied || !susp.Skipped || susp.Owner != "VENUE:BOJ" {
		t.Fatalf("suspend on a stale ZC owner: %+v %v", susp, err)
	}
	e.exec(t, "UPDATE Transactions SET owner = 'ZC', state = 'H_RESERVED' WHERE txid = 'TX-1'")

	// Two moves in one transaction: the second goes from the first's CAS
	// (no read); a raw write between them (jobs/dns hands rows over with
	// plain SQL) makes that memo stale, and the suspend still decides on
	// the row as it is.
	err = e.db.Write(ctx, func(tx *store.Tx) error {
		if _, err := e.lanes.TransitionInTx(ctx, tx, Transition{TxID: "TX-1", From: HReserved, To: DecidedToSettle, EventType: finality.DecidedToSettle}); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE Transactions SET version = version + 5 WHERE txid = 'TX-1'"); err != nil {
			return err
		}
		sres, err := e.lanes.SuspendInTx(ctx, tx, Suspend{TxID: "TX-1", From: DecidedToSettle, To: Suspended, ReasonCode: "SUSPEND_ADAPTER_DOWN"})
		if err != nil || !sres.Applied || sres.Version != 9 {
			t.Errorf("suspend after a raw write: %+v %v", sres, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := e.row(t, "TX-1"); r.State != Suspended || r.Version != 9 || r.Logs != 5 {
		t.Fatalf("row = %+v", r)
	}
	e.verify(t)
}
