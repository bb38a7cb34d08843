package store

import (
	"context"
	"fmt"
)

// AddColumn adds column to table with ddl (the column definition after
// its name, e.g. "TEXT NOT NULL DEFAULT 'OPEN'") when a database made by
// an earlier version lacks it, on SQLite and PostgreSQL alike: the
// additive migration that CREATE TABLE IF NOT EXISTS cannot make. It reads
// first and writes only when the column is missing, checking again inside
// the write so that two processes opening the file add it once.
func AddColumn(ctx context.Context, db *DB, table, column, ddl string) error {
	var has bool
	if err := db.Read(ctx, func(tx *Tx) (err error) {
		has, err = ColumnExists(ctx, tx, table, column)
		return err
	}); err != nil || has {
		return err
	}
	return db.Write(ctx, func(tx *Tx) error {
		if has, err := ColumnExists(ctx, tx, table, column); err != nil || has {
			return err
		}
		if _, err := tx.ExecContext(ctx, "ALTER TABLE "+table+" ADD COLUMN "+column+" "+ddl); err != nil {
			return fmt.Errorf("store: migrate: add %s.%s: %w", table, column, err)
		}
		return nil
	})
}
