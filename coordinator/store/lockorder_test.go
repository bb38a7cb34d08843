package store_test

import (
	"context"
	"sync"
	"testing"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

// TestCoordinatorWritersOnSeveralHandlesNeverDeadlock races writers on
// four handles of one coordinator database (on PostgreSQL: four nodes'
// connections) that take two rows in opposite orders: half update a row
// and then allocate an event_seq (a transfer's step), half allocate and
// then update (a group whose earlier caller appended). OpenCoordinator
// makes every write transaction take FinalitySeq first, so none of them
// is chosen as a deadlock victim, and every allocation is unique.
func TestCoordinatorWritersOnSeveralHandlesNeverDeadlock(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		loc := b.Location(t, "zc")
		var dbs []*store.DB
		for range 4 {
			db, err := store.OpenCoordinator(ctx, loc)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			dbs = append(dbs, db)
		}
		if err := dbs[0].Write(ctx, func(tx *store.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO IdempotencyKeys (key, status, created_at, response_body) VALUES ('lock-order', 'PROCESSING', '2026-12-03T00:00:00Z', '0')`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		bump := func(tx *store.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE IdempotencyKeys SET response_body = response_body || '+' WHERE key = 'lock-order'`)
			return err
		}
		var mu sync.Mutex
		seqs := map[int64]bool{}
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 10 {
					err := dbs[i%len(dbs)].Write(ctx, func(tx *store.Tx) error {
						if i%2 == 0 {
							if err := bump(tx); err != nil {
								return err
							}
						}
						seq, err := store.NextFinalitySeq(ctx, tx)
						if err != nil {
							return err
						}
						if i%2 == 1 {
							if err := bump(tx); err != nil {
								return err
							}
						}
						mu.Lock()
						defer mu.Unlock()
						if seqs[seq] {
							t.Errorf("event_seq %d allocated twice", seq)
						}
						seqs[seq] = true
						return nil
					})
					if err != nil {
						t.Errorf("writer %d: %v", i, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if len(seqs) != 160 {
			t.Fatalf("%d allocations committed, want 160", len(seqs))
		}
	})
}
