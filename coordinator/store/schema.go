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
	return Open(ctx, path, Schema)
}
