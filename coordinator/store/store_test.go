package store_test

import (
	"context"
	"errors"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
	"testing"
)

func TestWriteRollsBackOnError(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		db := storetest.Open(t, b, "t", "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL);")
		boom := errors.New("boom")
		err := db.Write(ctx, func(tx *store.Tx) error {
			if _, err := tx.ExecContext(ctx, "INSERT INTO kv VALUES ('a', 1)"); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Write error = %v, want boom", err)
		}
		if err := db.Write(ctx, func(tx *store.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO kv VALUES ('b', 2)")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var n, sum int
		if err := db.Read(ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(SUM(v),0) FROM kv").Scan(&n, &sum)
		}); err != nil {
			t.Fatal(err)
		}
		if n != 1 || sum != 2 {
			t.Fatalf("rows = %d sum = %d, want only the committed row b=2", n, sum)
		}
		if got := db.Stats().Commits; got != 1 {
			t.Fatalf("commits = %d, want 1", got)
		}
	})
}

func TestReadPoolRefusesWrites(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		db := storetest.Open(t, b, "t", "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY);")
		err := db.Read(ctx, func(tx *store.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO kv VALUES ('x')")
			return err
		})
		if err == nil {
			t.Fatal("insert through the read pool succeeded")
		}
	})
}
