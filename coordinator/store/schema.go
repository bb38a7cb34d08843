package store

import (
	"context"
	_ "embed"
)

// Schema is the coordinator's consolidated schema (schema.sql): every table
// of spec 003 plus SystemMode, as idempotent DDL and seed rows. It is the
// one schema file; change it in place and update docs/schema.md with it.
//
//go:embed schema.sql
var Schema string

// OpenCoordinator opens (creating if needed) the coordinator database at
// path and applies Schema. Applying it again on an existing database is a
// no-op, so every start calls this.
func OpenCoordinator(ctx context.Context, path string) (*DB, error) {
	if !IsPostgres(path) {
		if err := createSQLite(ctx, path, CoordinatorPageSize); err != nil {
			return nil, err
		}
	}
	db, err := Open(ctx, path, Schema)
	if err == nil && db.postgres {
		// Several nodes write the coordinator at once on PostgreSQL. A
		// write group that held a transfer's rows and then asked for the
		// FinalitySeq row (every FinalityLog append does) deadlocked with
		// another node's group that held FinalitySeq and asked for those
		// rows (SQLSTATE 40P01). Taking FinalitySeq first in every write
		// transaction gives all writers one lock order; it serialises the
		// coordinator's writes across nodes, as SQLite's one writer does
		// within one (docs/storage.md "Several nodes").
		db.lockFirst = "SELECT next_seq FROM FinalitySeq WHERE id = 1 FOR UPDATE"
	}
	return db, err
}
