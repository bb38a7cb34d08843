package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
)

// CoordinatorPageSize is the page size, in bytes, a new SQLite coordinator
// database is created with (SQLite's default is 4,096; PostgreSQL's pages
// are 8,192). An event outbox row (a signed §12.2 message and its Kafka
// headers, about 2.4 KB) fits one to a 4 KiB page and three to an 8 KiB
// one; a file drop's chunk writes about a fifth fewer bytes into the WAL
// and the database (docs/PERFORMANCE.md, "File drop (session 6, branch
// perf14-file)"). A database created before keeps its page size: SQLite
// changes it only by VACUUM, which zcgw never runs on its own.
const CoordinatorPageSize = 8192

// createSQLite creates an empty SQLite database at path with pageSize
// and WAL mode when no database is there yet; an existing file is left as
// it is. A WAL database's page size is fixed once WAL is set, so it is
// set here, before Open's connections turn WAL on.
func createSQLite(ctx context.Context, path string, pageSize int) error {
	if st, err := os.Stat(path); err == nil && st.Size() > 0 {
		return nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("store: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("store: create folder for %s: %w", path, err)
	}
	db, err := sql.Open("sqlite3", "file:"+(&url.URL{Path: path}).EscapedPath())
	if err != nil {
		return fmt.Errorf("store: create %s: %w", path, err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, fmt.Sprintf("PRAGMA page_size = %d; PRAGMA journal_mode = WAL", pageSize)); err != nil {
		return fmt.Errorf("store: create %s with %d-byte pages: %w", path, pageSize, err)
	}
	return nil
}
