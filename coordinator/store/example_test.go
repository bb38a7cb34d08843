package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zcgw/zcgw/coordinator/store"
)

func ExampleOpenCoordinator() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "zcgw-example")
	defer os.RemoveAll(dir)
	db, err := store.OpenCoordinator(ctx, filepath.Join(dir, "zc.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	var seq int64
	_ = db.Write(ctx, func(tx *store.Tx) error {
		ok, err := store.Insert(ctx, tx, "IdempotencyKeys", []string{"key", "created_at"}, "TX:TX-1:PaymentInitiated:001", "2026-04-01T00:00:00Z")
		fmt.Println("claimed:", ok)
		if err != nil {
			return err
		}
		seq, err = store.NextFinalitySeq(ctx, tx)
		return err
	})
	fmt.Println("first event_seq:", seq)
	// Output:
	// claimed: true
	// first event_seq: 1
}
