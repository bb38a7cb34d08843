package lane

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// TestInsertNewTxsInTxRunsAlsoBetweenTheRowsAndTheHooks: the batch's
// after-append hook is started before any row is written, the caller's
// also runs once the Transactions rows and FinalityLog entries are in,
// and the hook's rows are written last, in the same transaction; every
// transfer gets its row and a GENESIS entry with consecutive event_seq.
func TestInsertNewTxsInTxRunsAlsoBetweenTheRowsAndTheHooks(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var order []string
	count := func(tx *store.Tx, q string) int {
		var n int
		if err := tx.QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	e.lanes.log.AfterAppendFirst = func(_ context.Context, es []finality.Entry) func(context.Context, *store.Tx) error {
		order = append(order, fmt.Sprintf("start %d", len(es)))
		return func(ctx context.Context, tx *store.Tx) error {
			order = append(order, fmt.Sprintf("finish, also's row there: %d", count(tx, `SELECT COUNT(*) FROM IdempotencyKeys WHERE key = 'also'`)))
			return nil
		}
	}
	ns := []NewTx{newTx("TX-B1"), newTx("TX-B2"), newTx("TX-B3")}
	var entries []finality.Entry
	err := e.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		entries, err = e.lanes.InsertNewTxsInTx(ctx, tx, ns, func() error {
			order = append(order, fmt.Sprintf("also: %d transactions, %d entries", count(tx, `SELECT COUNT(*) FROM Transactions`), count(tx, `SELECT COUNT(*) FROM FinalityLog`)))
			_, err := tx.ExecContext(ctx, `INSERT INTO IdempotencyKeys (key, status, created_at) VALUES ('also', 'DONE', 'x')`)
			return err
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"start 3", "also: 3 transactions, 3 entries", "finish, also's row there: 1"}
	if !slices.Equal(order, want) {
		t.Fatalf("order %q, want %q", order, want)
	}
	for i, en := range entries {
		if en.TxID != ns[i].TxID || en.PrevHash != finality.Genesis || en.EventSeq != entries[0].EventSeq+int64(i) {
			t.Fatalf("entry %d: %+v", i, en)
		}
	}
	if vr, err := finality.VerifyAll(ctx, e.db); err != nil || !vr.OK() {
		t.Fatalf("chains: %+v, %v", vr, err)
	}
}

// TestInsertNewTxsInTxAlsoErrorWritesNothing: an error of also is the
// batch's, the hook's rows are not written, and the rolled-back
// transaction leaves no transfer, entry or sequence number used.
func TestInsertNewTxsInTxAlsoErrorWritesNothing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	finished := false
	e.lanes.log.AfterAppendFirst = func(context.Context, []finality.Entry) func(context.Context, *store.Tx) error {
		return func(context.Context, *store.Tx) error { finished = true; return nil }
	}
	boom := errors.New("boom")
	err := e.db.Write(ctx, func(tx *store.Tx) error {
		_, err := e.lanes.InsertNewTxsInTx(ctx, tx, []NewTx{newTx("TX-C1"), newTx("TX-C2")}, func() error { return boom })
		return err
	})
	if !errors.Is(err, boom) || finished {
		t.Fatalf("err %v (want boom), hook finished %v", err, finished)
	}
	var txs, entries int
	if err := e.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM Transactions), (SELECT COUNT(*) FROM FinalityLog)`).Scan(&txs, &entries)
	}); err != nil {
		t.Fatal(err)
	}
	if txs != 0 || entries != 0 {
		t.Fatalf("%d transactions, %d entries after the rollback", txs, entries)
	}
	// The next batch starts where the rolled-back one would have.
	var got []finality.Entry
	if err := e.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		got, err = e.lanes.InsertNewTxsInTx(ctx, tx, []NewTx{newTx("TX-C1")}, nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got[0].EventSeq != 1 {
		t.Fatalf("event_seq %d after a rolled-back batch, want 1", got[0].EventSeq)
	}
}

// TestInsertNewTxsInTxExistingTxIDIsErrNotAllNew: a txid that exists
// stops the batch with ErrNotAllNew before also runs.
func TestInsertNewTxsInTxExistingTxIDIsErrNotAllNew(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if err := e.db.Write(ctx, func(tx *store.Tx) error {
		_, err := e.lanes.InsertNewTxsInTx(ctx, tx, []NewTx{newTx("TX-D1")}, nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	ran := false
	err := e.db.Write(ctx, func(tx *store.Tx) error {
		_, err := e.lanes.InsertNewTxsInTx(ctx, tx, []NewTx{newTx("TX-D2"), newTx("TX-D1")}, func() error { ran = true; return nil })
		return err
	})
	if !errors.Is(err, ErrNotAllNew) || ran {
		t.Fatalf("err %v (want ErrNotAllNew), also ran %v", err, ran)
	}
}
