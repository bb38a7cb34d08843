package store_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
	"sync"
	"testing"
)

func TestWriteGroupedIsolatesEachCaller(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		db := storetest.Open(t, b, "t", "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL); CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL); INSERT OR IGNORE INTO counter VALUES (1, 0);")
		const callers = 48
		var wg sync.WaitGroup
		errs := make([]error, callers)
		panics := make([]any, callers)
		for i := 0; i < callers; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				defer func() { panics[i] = recover() }()
				errs[i] = db.Write(ctx, func(tx *store.Tx) error {
					if _, err := tx.ExecContext(ctx, "UPDATE counter SET n = n + 1 WHERE id = 1"); err != nil {
						return err
					}
					if _, err := tx.ExecContext(ctx, "INSERT INTO kv (k, v) VALUES (?, ?)", fmt.Sprint("k", i), i); err != nil {
						return err
					}
					switch i % 8 {
					case 3:
						return fmt.Errorf("caller %d fails", i)
					case 5:
						panic(fmt.Sprintf("caller %d panics", i))
					}
					return nil
				})
			}(i)
		}
		wg.Wait()
		want := 0
		for i := 0; i < callers; i++ {
			switch i % 8 {
			case 3:
				if errs[i] == nil || panics[i] != nil {
					t.Errorf("caller %d: err %v panic %v, want its own error", i, errs[i], panics[i])
				}
			case 5:
				if panics[i] != fmt.Sprintf("caller %d panics", i) {
					t.Errorf("caller %d: panic %v not re-raised in the caller", i, panics[i])
				}
			default:
				want++
				if errs[i] != nil || panics[i] != nil {
					t.Errorf("caller %d: err %v panic %v", i, errs[i], panics[i])
				}
			}
		}
		var rows, n int
		if err := db.Read(ctx, func(tx *store.Tx) error {
			if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM kv").Scan(&rows); err != nil {
				return err
			}
			return tx.QueryRowContext(ctx, "SELECT n FROM counter").Scan(&n)
		}); err != nil {
			t.Fatal(err)
		}
		if rows != want || n != want {
			t.Fatalf("rows=%d counter=%d, want %d each (failed callers fully undone)", rows, n, want)
		}
		if c := db.Stats().Commits; c >= callers {
			t.Logf("note: %d commits for %d callers (no grouping happened this run)", c, callers)
		}
	})
}

func TestWriteGroupedHonoursCancelledContext(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		db := storetest.Open(t, b, "t", "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY);")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		ran := false
		err := db.Write(ctx, func(tx *store.Tx) error { ran = true; return nil })
		if !errors.Is(err, context.Canceled) || ran {
			t.Fatalf("err %v ran %v", err, ran)
		}
	})
}

// TestWriteGroupedCallerCancelledMidWrite: a caller whose context is
// cancelled after its fn started cannot interrupt the shared transaction:
// its statements run to the end (it asked before it was queued), and its
// neighbours in the group commit.
func TestWriteGroupedCallerCancelledMidWrite(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		db := storetest.Open(t, b, "t", "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY);")
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				errs[i] = db.Write(ctx, func(tx *store.Tx) error {
					if i%2 == 0 {
						cancel() // the caller gives up while its write is under way
					}
					_, err := tx.ExecContext(ctx, "INSERT INTO kv VALUES (?)", fmt.Sprint("k", i))
					return err
				})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("caller %d: %v", i, err)
			}
		}
		var n int
		if err := db.Read(context.Background(), func(tx *store.Tx) error {
			return tx.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM kv").Scan(&n)
		}); err != nil || n != len(errs) {
			t.Fatalf("rows %d (%v), want %d: a cancelled caller broke its group", n, err, len(errs))
		}
	})
}

// AfterCommit callbacks run once the caller's writes are committed: for
// every caller whose fn succeeded, and for none that failed (alone or in a
// group, where its savepoint is undone), and they see the committed rows.
func TestAfterCommitRunsOnlyForCommittedCallers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) { afterCommitRunsOnlyForCommittedCallers(t, b) })
}

func afterCommitRunsOnlyForCommittedCallers(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	db := storetest.Open(t, b, "t", "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL);")
	const callers = 40
	var mu sync.Mutex
	ran := map[int]bool{}
	var wg sync.WaitGroup
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_ = db.Write(ctx, func(tx *store.Tx) error {
				if _, err := tx.ExecContext(ctx, "INSERT INTO kv (k, v) VALUES (?, ?)", fmt.Sprint("k", i), i); err != nil {
					return err
				}
				tx.AfterCommit(func() {
					var n int
					if err := db.Read(ctx, func(tx *store.Tx) error {
						return tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM kv WHERE k = ?", fmt.Sprint("k", i)).Scan(&n)
					}); err != nil || n != 1 {
						t.Errorf("caller %d: callback before its row is visible (%d, %v)", i, n, err)
					}
					mu.Lock()
					ran[i] = true
					mu.Unlock()
				})
				if i%4 == 1 {
					return errors.New("refused")
				}
				return nil
			})
		}(i)
	}
	wg.Wait()
	for i := 0; i < callers; i++ {
		if ran[i] != (i%4 != 1) {
			t.Errorf("caller %d: callback ran=%v", i, ran[i])
		}
	}
}

// Two processes lock two rows in opposite orders: PostgreSQL breaks the
// deadlock by aborting one, whose Write is undone and run again once the
// other has committed, so both Writes succeed and each increment lands
// exactly once. (SQLite has one writer: the second Write waits.)
func TestWriteRunsADeadlockVictimAgain(t *testing.T) {
	pg, ok := storetest.Postgres(t)
	if !ok {
		t.Skip("no PostgreSQL server: SQLite cannot deadlock")
	}
	ctx := context.Background()
	loc := pg.Location(t, "deadlock")
	var dbs [2]*store.DB
	for i := range dbs {
		db, err := store.Open(ctx, loc, "CREATE TABLE IF NOT EXISTS r (id INTEGER PRIMARY KEY, n INTEGER NOT NULL); INSERT OR IGNORE INTO r VALUES (1, 0), (2, 0);")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs[i] = db
	}
	var both sync.WaitGroup // each has locked its first row
	both.Add(2)
	var runs [2]int
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		first, second := 1+i, 2-i
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = dbs[i].Write(ctx, func(tx *store.Tx) error {
				runs[i]++
				if _, err := tx.ExecContext(ctx, "UPDATE r SET n = n + 1 WHERE id = ?", first); err != nil {
					return err
				}
				if runs[i] == 1 {
					both.Done()
					both.Wait()
				}
				_, err := tx.ExecContext(ctx, "UPDATE r SET n = n + 1 WHERE id = ?", second)
				return err
			})
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("writes: %v, %v", errs[0], errs[1])
	}
	if runs[0]+runs[1] < 3 {
		t.Fatalf("fn runs %v: want a deadlock victim run again", runs)
	}
	for id := 1; id <= 2; id++ {
		var n int
		if err := dbs[0].Read(ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(ctx, "SELECT n FROM r WHERE id = ?", id).Scan(&n)
		}); err != nil || n != 2 {
			t.Fatalf("row %d: n = %d (%v), want 2", id, n, err)
		}
	}
}

// A statement repeated inside one transaction (prepared on the
// transaction from its second run) gives the same rows on both backends,
// also in a group commit where one caller fails after repeating it.
func TestRepeatedStatementInOneTransaction(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		db := storetest.Open(t, b, "t", "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL);")
		const callers = 8
		var wg sync.WaitGroup
		errs := make([]error, callers)
		for c := 0; c < callers; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[c] = db.Write(ctx, func(tx *store.Tx) error {
					for i := 0; i < 50; i++ {
						if _, err := tx.ExecContext(ctx, "INSERT INTO kv (k, v) VALUES (?, ?)", fmt.Sprintf("c%d-%d", c, i), i); err != nil {
							return err
						}
					}
					if c == 0 {
						return errors.New("caller 0 gives up")
					}
					return nil
				})
			}()
		}
		wg.Wait()
		for c, err := range errs {
			if (c == 0) != (err != nil) {
				t.Fatalf("caller %d: %v", c, err)
			}
		}
		var n, sum int
		if err := db.Read(ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(SUM(v), 0) FROM kv").Scan(&n, &sum)
		}); err != nil {
			t.Fatal(err)
		}
		if n != (callers-1)*50 || sum != (callers-1)*1225 {
			t.Fatalf("%d rows summing to %d, want %d and %d", n, sum, (callers-1)*50, (callers-1)*1225)
		}
	})
}
