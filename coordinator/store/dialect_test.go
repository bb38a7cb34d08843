package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

// Conformance tests of the dialect idioms (spec 000 §7.3 item 0). A new
// backend must pass these unchanged.

func openTestCoordinator(t testing.TB, b storetest.Backend) *store.DB {
	t.Helper()
	return storetest.Open(t, b, "zc", store.Schema)
}

func TestInsertOrIgnoreBuildsOneRowInsert(t *testing.T) {
	got := store.InsertOrIgnore("IdempotencyKeys", []string{"key", "status", "created_at"})
	want := "INSERT OR IGNORE INTO IdempotencyKeys (key, status, created_at) VALUES (?, ?, ?)"
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestInsertIsAnAtomicClaim(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		db := openTestCoordinator(t, b)
		const n = 16
		var wg sync.WaitGroup
		wins := make(chan int, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				err := db.Write(ctx, func(tx *store.Tx) error {
					ok, err := store.Insert(ctx, tx, "IdempotencyKeys", []string{"key", "status", "created_at", "response_body"},
						"TX:1:PaymentInitiated:001", "PROCESSING", "2026-01-01T00:00:00Z", fmt.Sprint(i))
					if ok {
						wins <- i
					}
					return err
				})
				if err != nil {
					t.Error(err)
				}
			}(i)
		}
		wg.Wait()
		close(wins)
		var winners []int
		for w := range wins {
			winners = append(winners, w)
		}
		if len(winners) != 1 {
			t.Fatalf("winners = %v, want exactly one", winners)
		}
		var body string
		var rows int
		if err := db.Read(ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(ctx, "SELECT COUNT(*), MAX(response_body) FROM IdempotencyKeys").Scan(&rows, &body)
		}); err != nil {
			t.Fatal(err)
		}
		if rows != 1 || body != fmt.Sprint(winners[0]) {
			t.Fatalf("rows=%d body=%s, want 1 row written by winner %d", rows, body, winners[0])
		}
	})
}

func TestInsertRejectsColumnValueMismatch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		db := openTestCoordinator(t, b)
		err := db.Write(ctx, func(tx *store.Tx) error {
			_, err := store.Insert(ctx, tx, "IdempotencyKeys", []string{"key", "status"}, "k")
			return err
		})
		if err == nil {
			t.Fatal("Insert with 2 columns and 1 value succeeded")
		}
	})
}

// The guarded conditional write: the dependent row is written only when
// the CAS applied, and a failure after the CAS undoes it.
func TestAppliedGatesDependentWriteAndRollsBackTogether(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		db := openTestCoordinator(t, b)
		if err := db.Write(ctx, func(tx *store.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO Vault (vault_ref, data_type, payload_json, expires_at, created_at)
				VALUES ('V1', 'PII', '{}', '2026-01-02T00:00:00Z', '2026-01-01T00:00:00Z')`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		evict := func(tx *store.Tx) (bool, error) {
			ok, err := store.Applied(tx.ExecContext(ctx, "UPDATE Vault SET is_evicted = 1 WHERE vault_ref = 'V1' AND is_evicted = 0"))
			if err != nil || !ok {
				return ok, err
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO EntityStateLog (log_id, entity_type, entity_id, event_type, state_to, occurred_at)
				VALUES (?, 'VAULT', 'V1', 'Evicted', 'EVICTED', '2026-01-01T00:00:00Z')`, "ESL-"+filepath.Base(t.Name()))
			return ok, err
		}
		boom := errors.New("boom")
		err := db.Write(ctx, func(tx *store.Tx) error {
			if ok, err := evict(tx); err != nil || !ok {
				t.Fatalf("first evict applied=%v err=%v", ok, err)
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
		count := func() (evicted, logs int) {
			if err := db.Read(ctx, func(tx *store.Tx) error {
				if err := tx.QueryRowContext(ctx, "SELECT is_evicted FROM Vault WHERE vault_ref='V1'").Scan(&evicted); err != nil {
					return err
				}
				return tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM EntityStateLog").Scan(&logs)
			}); err != nil {
				t.Fatal(err)
			}
			return
		}
		if e, l := count(); e != 0 || l != 0 {
			t.Fatalf("after rollback evicted=%d logs=%d, want 0 0", e, l)
		}
		for i, wantApplied := range []bool{true, false} {
			var applied bool
			if err := db.Write(ctx, func(tx *store.Tx) error {
				var err error
				applied, err = evict(tx)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if applied != wantApplied {
				t.Fatalf("evict #%d applied=%v, want %v", i+1, applied, wantApplied)
			}
		}
		if e, l := count(); e != 1 || l != 1 {
			t.Fatalf("evicted=%d logs=%d, want 1 1 (second CAS must not log)", e, l)
		}
	})
}

func TestNextFinalitySeqStrictlyIncreasesAndNeverReuses(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		db := openTestCoordinator(t, b)
		var mu sync.Mutex
		seen := map[int64]bool{}
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 20; i++ {
					var seq int64
					rollback := i%5 == 0
					err := db.Write(ctx, func(tx *store.Tx) error {
						var err error
						if seq, err = store.NextFinalitySeq(ctx, tx); err != nil {
							return err
						}
						if rollback {
							return errors.New("rolled back")
						}
						return nil
					})
					if rollback {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if seen[seq] {
						t.Errorf("event_seq %d allocated twice", seq)
					}
					seen[seq] = true
					mu.Unlock()
				}
			}(g)
		}
		wg.Wait()
		if len(seen) != 8*16 {
			t.Fatalf("committed allocations = %d, want %d", len(seen), 8*16)
		}
		for s := int64(1); s <= int64(len(seen)); s++ {
			if !seen[s] {
				t.Fatalf("seq %d missing: committed allocations must be 1..%d (rolled-back ones are reused only because they never committed)", s, len(seen))
			}
		}
	})
}

func TestIsUniqueViolation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		db := openTestCoordinator(t, b)
		ins := func() error {
			return db.Write(ctx, func(tx *store.Tx) error {
				_, err := tx.ExecContext(ctx, "INSERT INTO IdempotencyKeys (key, created_at) VALUES ('k', 'x')")
				return err
			})
		}
		if err := ins(); err != nil {
			t.Fatal(err)
		}
		err := ins()
		if !store.IsUniqueViolation(err) {
			t.Fatalf("duplicate key error %v not recognised", err)
		}
		if store.IsUniqueViolation(errors.New("disk I/O error")) || store.IsUniqueViolation(nil) {
			t.Fatal("non-constraint errors recognised as unique violations")
		}
	})
}
