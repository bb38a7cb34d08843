package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

func TestWriteRollsBackOnError(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "t.db"), "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL);")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	boom := errors.New("boom")
	err = db.Write(ctx, func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO kv VALUES ('a', 1)"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Write error = %v, want boom", err)
	}
	if err := db.Write(ctx, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO kv VALUES ('b', 2)")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var n, sum int
	if err := db.Read(ctx, func(tx *Tx) error {
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
}

func TestReadPoolRefusesWrites(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "t.db"), "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY);")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Read(ctx, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO kv VALUES ('x')")
		return err
	})
	if err == nil {
		t.Fatal("insert through the read pool succeeded")
	}
}
