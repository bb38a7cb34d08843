package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

func pragma(t *testing.T, db *DB, name string) string {
	t.Helper()
	var v string
	if err := db.Read(context.Background(), func(tx *Tx) error {
		return tx.QueryRowContext(context.Background(), "PRAGMA "+name).Scan(&v)
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestNewCoordinatorDatabaseHasLargePages: a coordinator database created
// by OpenCoordinator has CoordinatorPageSize pages and WAL; one created
// before with SQLite's 4 KiB pages keeps them and its rows.
func TestNewCoordinatorDatabaseHasLargePages(t *testing.T) {
	ctx := context.Background()
	fresh := filepath.Join(t.TempDir(), "sub", "zc.db")
	db, err := OpenCoordinator(ctx, fresh)
	if err != nil {
		t.Fatal(err)
	}
	if got := pragma(t, db, "page_size"); got != "8192" {
		t.Fatalf("new database page_size %s, want 8192", got)
	}
	if got := pragma(t, db, "journal_mode"); got != "wal" {
		t.Fatalf("journal_mode %s", got)
	}
	db.Close()

	old := filepath.Join(t.TempDir(), "zc.db")
	raw, err := sql.Open("sqlite3", "file:"+old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE Kept (v TEXT); INSERT INTO Kept VALUES ('row')`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db, err = OpenCoordinator(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := pragma(t, db, "page_size"); got != "4096" {
		t.Fatalf("existing database page_size %s, want 4096 kept", got)
	}
	var v string
	if err := db.Read(ctx, func(tx *Tx) error { return tx.QueryRowContext(ctx, `SELECT v FROM Kept`).Scan(&v) }); err != nil || v != "row" {
		t.Fatalf("existing row: %q, %v", v, err)
	}
}
