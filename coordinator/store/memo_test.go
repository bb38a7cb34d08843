package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

const seqSchema = `CREATE TABLE IF NOT EXISTS FinalitySeq (id INTEGER PRIMARY KEY, next_seq INTEGER NOT NULL);
INSERT OR IGNORE INTO FinalitySeq (id, next_seq) VALUES (1, 0);
CREATE TABLE IF NOT EXISTS used (seq INTEGER PRIMARY KEY);`

func storedSeq(t *testing.T, db *store.DB) int64 {
	t.Helper()
	var n int64
	if err := db.Read(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), "SELECT next_seq FROM FinalitySeq WHERE id = 1").Scan(&n)
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestNextFinalitySeqAfterRollbackTo: the second allocation of a
// transaction knows the counter from its own first UPDATE (Tx memo), and a
// ROLLBACK TO that undid an allocation makes it read the counter again, so
// the stored counter always equals the last value handed out and no value
// is handed out twice across transactions.
func TestNextFinalitySeqAfterRollbackTo(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		db := storetest.Open(t, b, "seq", seqSchema)
		var got []int64
		if err := db.Write(ctx, func(tx *store.Tx) error {
			alloc := func() error {
				s, err := store.NextFinalitySeq(ctx, tx)
				got = append(got, s)
				return err
			}
			if err := alloc(); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "SAVEPOINT undone"); err != nil {
				return err
			}
			if err := alloc(); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO undone"); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "RELEASE undone"); err != nil {
				return err
			}
			if err := alloc(); err != nil {
				return err
			}
			first, err := store.NextFinalitySeqs(ctx, tx, 3)
			got = append(got, first)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		// 1; 2 rolled back; 2 again; 3..5
		if fmt.Sprint(got) != "[1 2 2 3]" {
			t.Errorf("allocations %v, want [1 2 2 3]", got)
		}
		if n := storedSeq(t, db); n != 5 {
			t.Errorf("stored counter %d after handing out up to 5", n)
		}
	})
}

// TestNextFinalitySeqGroupedNeverReused: 48 concurrent Writes share group
// commits, each allocating two values and recording them under a primary
// key; every fourth caller fails after allocating (its savepoint is rolled
// back under its neighbours). No committed value repeats, and the stored
// counter is the largest committed value or above.
func TestNextFinalitySeqGroupedNeverReused(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		db := storetest.Open(t, b, "seqgroup", seqSchema)
		const callers = 48
		errs := make([]error, callers)
		var wg sync.WaitGroup
		for i := 0; i < callers; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				errs[i] = db.Write(ctx, func(tx *store.Tx) error {
					for k := 0; k < 2; k++ {
						s, err := store.NextFinalitySeq(ctx, tx)
						if err != nil {
							return err
						}
						if _, err := tx.ExecContext(ctx, "INSERT INTO used (seq) VALUES (?)", s); err != nil {
							return fmt.Errorf("value %d handed out twice: %w", s, err)
						}
					}
					if i%4 == 3 {
						return errors.New("caller fails after allocating")
					}
					return nil
				})
			}(i)
		}
		wg.Wait()
		for i, err := range errs {
			if (i%4 == 3) != (err != nil) {
				t.Errorf("caller %d: %v", i, err)
			}
		}
		var n, max int64
		if err := db.Read(ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM used").Scan(&n, &max)
		}); err != nil {
			t.Fatal(err)
		}
		if n != 2*(callers-callers/4) {
			t.Errorf("%d values committed, want %d", n, 2*(callers-callers/4))
		}
		if c := storedSeq(t, db); c < max {
			t.Errorf("stored counter %d below the largest committed value %d", c, max)
		}
	})
}
