package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

// NextFinalitySeqs allocates a run of consecutive event_seq values after
// every earlier one; InsertRows writes every row, and a row whose key
// exists fails the statement and writes none of its rows (the bulk
// submission relies on both, on each backend).
func TestNextFinalitySeqsAndInsertRows(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		db := openTestCoordinator(t, b)
		var one, first, next int64
		if err := db.Write(ctx, func(tx *store.Tx) error {
			var err error
			if one, err = store.NextFinalitySeq(ctx, tx); err != nil {
				return err
			}
			if first, err = store.NextFinalitySeqs(ctx, tx, 100); err != nil {
				return err
			}
			next, err = store.NextFinalitySeq(ctx, tx)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if first != one+1 || next != first+100 {
			t.Fatalf("seq %d, then 100 from %d, then %d", one, first, next)
		}
		cols := []string{"key", "status", "created_at", "updated_at"}
		rows := func(from, n int) []any {
			var args []any
			for i := from; i < from+n; i++ {
				args = append(args, fmt.Sprintf("k%03d", i), "DONE", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z")
			}
			return args
		}
		if err := db.Write(ctx, func(tx *store.Tx) error {
			_, err := tx.ExecContext(ctx, store.InsertRows("IdempotencyKeys", cols, 50), rows(0, 50)...)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		err := db.Write(ctx, func(tx *store.Tx) error {
			_, err := tx.ExecContext(ctx, store.InsertRows("IdempotencyKeys", cols, 10), rows(45, 10)...)
			return err
		})
		if !store.IsUniqueViolation(err) {
			t.Fatalf("overlapping rows: %v, want a unique violation", err)
		}
		var n int
		if err := db.Read(ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM IdempotencyKeys`).Scan(&n)
		}); err != nil {
			t.Fatal(err)
		}
		if n != 50 {
			t.Fatalf("%d keys, want 50", n)
		}
	})
}
