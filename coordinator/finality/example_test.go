package finality_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

func ExampleVerifyChain() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "zcgw-example")
	defer os.RemoveAll(dir)
	db, err := store.OpenCoordinator(ctx, filepath.Join(dir, "zc.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	log := finality.New(clock.NewManual(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)))
	var second finality.Entry
	_ = db.Write(ctx, func(tx *store.Tx) error {
		if _, err := log.Append(ctx, tx, finality.Event{TxID: "TX-1", Type: finality.PaymentInitiated, StateTo: "RECEIVED"}); err != nil {
			return err
		}
		second, err = log.Append(ctx, tx, finality.Event{TxID: "TX-1", Type: finality.PreCheckPassed, StateFrom: "RECEIVED", StateTo: "PRECHECKED"})
		return err
	})
	rep, _ := finality.VerifyChain(ctx, db, "TX-1")
	fmt.Println(rep.Entries, rep.OK())

	// Someone edits the second entry's state_to.
	_ = db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE FinalityLog SET state_to = 'SETTLED' WHERE log_id = ?", second.LogID)
		return err
	})
	rep, _ = finality.VerifyChain(ctx, db, "TX-1")
	fmt.Println(rep.Break.Reason, rep.Break.Position, rep.Break.LogID == second.LogID)
	// Output:
	// 2 true
	// ENTRY_HASH_MISMATCH 1 true
}
