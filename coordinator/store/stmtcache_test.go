package store

import (
	"context"
	"path/filepath"
	"testing"
)

func TestStatementCache(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "t.db"), "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL);")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	upsert := "INSERT INTO kv (k, v) VALUES (?, 1) ON CONFLICT (k) DO UPDATE SET v = v + 1"
	script := "INSERT INTO kv (k, v) VALUES ('s1', 1); INSERT INTO kv (k, v) VALUES ('s2', 2);"
	for i := 0; i < 3; i++ {
		if err := db.Write(ctx, func(tx *Tx) error {
			if _, err := tx.ExecContext(ctx, upsert, "a"); err != nil {
				return err
			}
			if i == 0 {
				_, err := tx.ExecContext(ctx, script) // a script is never prepared: both statements run
				return err
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, ok := db.wstmts.get(upsert); !ok {
			t.Fatalf("after write %d the statement is not cached", i+1)
		}
	}
	if _, ok := db.wstmts.get(script); ok {
		t.Fatal("multi-statement script was cached")
	}
	var v, n int
	if err := db.Read(ctx, func(tx *Tx) error {
		if err := tx.QueryRowContext(ctx, "SELECT v FROM kv WHERE k = 'a'").Scan(&v); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM kv WHERE k IN ('s1', 's2')").Scan(&n)
	}); err != nil {
		t.Fatal(err)
	}
	if _, ok := db.rstmts.get("SELECT v FROM kv WHERE k = 'a'"); !ok {
		t.Fatal("a read statement is not cached after its first run")
	}
	if v != 3 || n != 2 {
		t.Fatalf("v=%d (want 3: cached statement ran every time), script rows=%d (want 2)", v, n)
	}
	// A rolled-back transaction with a cached statement leaves nothing.
	_ = db.Write(ctx, func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, upsert, "a"); err != nil {
			return err
		}
		return context.Canceled
	})
	if err := db.Read(ctx, func(tx *Tx) error { return tx.QueryRowContext(ctx, "SELECT v FROM kv WHERE k = 'a'").Scan(&v) }); err != nil || v != 3 {
		t.Fatalf("v=%d after rollback, want 3 (%v)", v, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db.wstmts.prepareMissed(ctx, map[string]bool{"SELECT 1": true})
	if err := db.Write(ctx, func(*Tx) error { return nil }); err == nil {
		t.Fatal("Write after Close succeeded")
	} // after Close: a no-op, not a panic
}

// A statement the cache does not hold yet, run many times in one
// transaction (a batch), is prepared once on the transaction and reused.
func TestStatementPreparedInTransaction(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "t.db"), "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL);")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ins := "INSERT INTO kv (k, v) VALUES (?, ?)"
	if err := db.Write(ctx, func(tx *Tx) error {
		for i := 0; i < 100; i++ {
			if _, err := tx.ExecContext(ctx, ins, string(rune('A'+i%26))+string(rune('a'+i/26)), i); err != nil {
				return err
			}
			if i == 0 && tx.local[ins] != nil {
				t.Fatal("prepared on its first run")
			}
		}
		if tx.local[ins] == nil {
			t.Fatal("a statement run 100 times in one transaction was not prepared on it")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var n, sum int
	if err := db.Read(ctx, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, "SELECT COUNT(*), SUM(v) FROM kv").Scan(&n, &sum)
	}); err != nil {
		t.Fatal(err)
	}
	if n != 100 || sum != 4950 {
		t.Fatalf("%d rows summing to %d, want 100 and 4950", n, sum)
	}
	if _, ok := db.wstmts.get(ins); !ok {
		t.Fatal("not in the pool's cache after the transaction")
	}
}
