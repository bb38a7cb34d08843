package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

const workSchema = `CREATE TABLE IF NOT EXISTS Work (
  id INTEGER PRIMARY KEY,
  status TEXT NOT NULL DEFAULT 'READY',
  owner TEXT
);`

// TestSkipLockedClaimsAreDisjointAcrossHandles races claimers on separate
// handles of one database (on PostgreSQL: separate connections, the way
// several nodes claim) with the claim the orchestrator makes: select due
// items with SkipLocked, then one guarded UPDATE of them, which must
// change every selected row. Every item is claimed exactly once and no
// claim finds a selected row taken under it.
func TestSkipLockedClaimsAreDisjointAcrossHandles(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		loc := b.Location(t, "work")
		const handles, items, batch = 6, 300, 7
		dbs := make([]*store.DB, handles)
		for i := range dbs {
			db, err := store.Open(ctx, loc, workSchema)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			dbs[i] = db
		}
		if err := dbs[0].Write(ctx, func(tx *store.Tx) error {
			for i := 1; i <= items; i++ {
				if _, err := tx.ExecContext(ctx, "INSERT INTO Work (id) VALUES (?)", i); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		claimedBy := map[int]string{}
		var wg sync.WaitGroup
		for h, db := range dbs {
			for w := range 2 {
				owner := fmt.Sprintf("node-%d/w%d", h, w)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						var got []int
						err := db.Write(ctx, func(tx *store.Tx) error {
							got = got[:0]
							rows, err := tx.QueryContext(ctx, "SELECT id FROM Work WHERE status = 'READY' ORDER BY id LIMIT ?"+tx.SkipLocked(), batch)
							if err != nil {
								return err
							}
							for rows.Next() {
								var id int
								if err := rows.Scan(&id); err != nil {
									rows.Close()
									return err
								}
								got = append(got, id)
							}
							rows.Close()
							if err := rows.Err(); err != nil || len(got) == 0 {
								return err
							}
							ids := strings.TrimSuffix(strings.Repeat("?,", len(got)), ",")
							args := []any{owner}
							for _, id := range got {
								args = append(args, id)
							}
							res, err := tx.ExecContext(ctx, "UPDATE Work SET status = 'CLAIMED', owner = ? WHERE status = 'READY' AND id IN ("+ids+")", args...)
							if err != nil {
								return err
							}
							if n, _ := res.RowsAffected(); n != int64(len(got)) {
								return fmt.Errorf("claimed %d of %d selected items: a selected row was taken under the claim", n, len(got))
							}
							return nil
						})
						if err != nil {
							t.Error(err)
							return
						}
						if len(got) == 0 {
							return
						}
						mu.Lock()
						for _, id := range got {
							if prev, ok := claimedBy[id]; ok {
								t.Errorf("item %d claimed by %s and %s", id, prev, owner)
							}
							claimedBy[id] = owner
						}
						mu.Unlock()
					}
				}()
			}
		}
		wg.Wait()
		if len(claimedBy) != items {
			t.Fatalf("%d of %d items claimed", len(claimedBy), items)
		}
		var left int
		if err := dbs[0].Read(ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM Work WHERE status <> 'CLAIMED'").Scan(&left)
		}); err != nil {
			t.Fatal(err)
		}
		if left != 0 {
			t.Fatalf("%d items not claimed", left)
		}
	})
}
