package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/zcgw/zcgw/coordinator/store"
)

// addCounter is code that takes a store.Writer: it behaves the same with
// a *store.DB and with store.Grouped(db).
func addCounter(ctx context.Context, w store.Writer, n int) error {
	return w.Write(ctx, func(tx *store.Tx) error {
		if n < 0 {
			return fmt.Errorf("negative %d", n) // rolls back this caller only
		}
		_, err := tx.ExecContext(ctx, "UPDATE counter SET n = n + ? WHERE id = 1", n)
		return err
	})
}

func ExampleGrouped() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "zcgw-example")
	defer os.RemoveAll(dir)
	db, err := store.Open(ctx, filepath.Join(dir, "t.db"),
		"CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL); INSERT OR IGNORE INTO counter VALUES (1, 0);")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	fmt.Println(addCounter(ctx, db, 1)) // its own commit
	// Concurrent callers through the grouped writer share commits; the
	// failing one is undone alone.
	grouped := store.Grouped(db)
	var wg sync.WaitGroup
	for _, n := range []int{10, -1, 100} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = addCounter(ctx, grouped, n) }()
	}
	wg.Wait()
	var total int
	_ = db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, "SELECT n FROM counter").Scan(&total)
	})
	fmt.Println(total)
	// Output:
	// <nil>
	// 111
}
