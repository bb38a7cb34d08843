package adapter

import (
	"context"
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/coordinator/store"
)

// OpenDB opens (creating if needed) an adapter database at path with
// Schema and brings a database made by an earlier version up to it
// (Migrate). Everything that opens an adapter database goes through it.
func OpenDB(ctx context.Context, path string) (*store.DB, error) {
	db, err := store.Open(ctx, path, Schema)
	if err != nil {
		return nil, err
	}
	if err := Migrate(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Migrate brings a database made by an earlier version up to Schema.
// Added columns are added (addAccountCurrency, addAccountLifecycle); a
// table whose CHECK constraints refuse what this version writes is
// rebuilt, because CREATE TABLE IF NOT EXISTS leaves such a table as it
// was and SQLite cannot alter a CHECK:
//
//   - AdapterReconDrift, made before the core balance file, refuses
//     source 'BALANCE_FILE';
//   - AdapterFilters, made before EDI_PATTERN, refuses that filter type.
//
// A rebuild runs in one write transaction (create the new table from its
// DDL in Schema, copy every row, drop the old one, rename, recreate its
// indexes), so a crash leaves either the old table or the new one, with
// every row; the checks are still there after. A database created by this
// version (and PostgreSQL, whose adapter schema is created from the
// current text) needs nothing.
func Migrate(ctx context.Context, db *store.DB) error {
	if err := addAccountCurrency(ctx, db); err != nil {
		return err
	}
	if err := addAccountLifecycle(ctx, db); err != nil {
		return err
	}
	if db.Postgres() {
		return nil
	}
	if err := migrateShadowTriggers(ctx, db); err != nil {
		return err
	}
	if err := rebuildTable(ctx, db, "AdapterReconDrift", "'"+SourceBalanceFile+"'", "idx_drift_open"); err != nil {
		return err
	}
	return rebuildTable(ctx, db, "AdapterFilters", "'"+FilterEDIPattern+"'", "idx_filters_account")
}

// rebuildTable rebuilds table from its DDL in Schema when its stored DDL
// lacks marker (see Migrate), with its indexes.
func rebuildTable(ctx context.Context, db *store.DB, table, marker string, indexes ...string) error {
	old := func(tx *store.Tx) (bool, error) {
		var ddl string
		err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&ddl)
		if err != nil {
			return false, fmt.Errorf("adapter: migrate: read %s: %w", table, err)
		}
		return !strings.Contains(ddl, marker), nil
	}
	var need bool
	if err := db.Read(ctx, func(tx *store.Tx) (err error) { need, err = old(tx); return }); err != nil || !need {
		return err
	}
	create := schemaStatement("CREATE TABLE IF NOT EXISTS " + table + " (")
	err := db.Write(ctx, func(tx *store.Tx) error {
		if need, err := old(tx); err != nil || !need {
			return err // another process migrated it first
		}
		var cols []string
		rows, err := tx.QueryContext(ctx, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, table)
		if err != nil {
			return err
		}
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				rows.Close()
				return err
			}
			cols = append(cols, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		list := strings.Join(cols, ", ")
		steps := []string{strings.Replace(create, table+" (", table+"_migrated (", 1),
			"INSERT INTO " + table + "_migrated (" + list + ") SELECT " + list + " FROM " + table,
			"DROP TABLE " + table,
			"ALTER TABLE " + table + "_migrated RENAME TO " + table}
		for _, ix := range indexes {
			steps = append(steps, schemaStatement("CREATE INDEX IF NOT EXISTS "+ix+" "))
		}
		for _, q := range steps {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("adapter: migrate %s: %s: %w", table, strings.SplitN(q, "(", 2)[0], err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("adapter: migrate %s: %w", db.Path(), err)
	}
	return nil
}

// schemaStatement is the statement of Schema that starts with prefix, up
// to its semicolon (the DDL is written once, in Schema).
func schemaStatement(prefix string) string {
	i := strings.Index(Schema, prefix)
	if i < 0 {
		panic("adapter: no statement " + prefix + "in the schema")
	}
	s := Schema[i:]
	return s[:strings.Index(s, ";")+1]
}

// addAccountCurrency adds AdapterAccounts.currency (foreign-currency
// accounts, docs/fx.md) to a database made before it: existing rows keep
// NULL, the adapter's own currency, which is what they were.
func addAccountCurrency(ctx context.Context, db *store.DB) error {
	return store.AddColumn(ctx, db, "AdapterAccounts", "currency", "TEXT")
}

// addAccountLifecycle adds AdapterAccounts.lifecycle (the account
// lifecycle, lifecycle.go) to a database made before it: every existing
// account is OPEN, as it was.
func addAccountLifecycle(ctx context.Context, db *store.DB) error {
	return store.AddColumn(ctx, db, "AdapterAccounts", "lifecycle",
		"TEXT NOT NULL DEFAULT 'OPEN' CHECK (lifecycle IN ('OPEN','CLOSING_HOLD','CLOSED'))")
}
