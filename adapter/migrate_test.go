package adapter

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/store"
)

// oldDriftSchema is Schema as it was before the core balance file: the
// drift source CHECK knew INQUIRY and RESULT_FILE only.
var oldDriftSchema = strings.Replace(Schema, "('INQUIRY','RESULT_FILE','BALANCE_FILE')", "('INQUIRY','RESULT_FILE')", 1)

func insertDrift(ctx context.Context, db *store.DB, id, source string) error {
	return db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO AdapterReconDrift
			(drift_id, bank_id, account_hash, core_account, shadow_balance, core_balance, drift, source, status, case_id, detected_at)
			VALUES (?, '0001', 'h1', '001-1-0000001', 1000, 1500, 500, ?, 'OPEN', 'CASE-1', '2026-12-01T12:00:00Z')`, id, source)
		return err
	})
}

func TestOpenDBMigratesAnOldDriftCheck(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "adapter-0001.db")
	if oldDriftSchema == Schema {
		t.Fatal("the old schema text was not derived")
	}
	old, err := store.Open(ctx, path, oldDriftSchema)
	if err != nil {
		t.Fatal(err)
	}
	if err := insertDrift(ctx, old, "DRIFT-OLD", SourceInquiry); err != nil {
		t.Fatal(err)
	}
	if err := insertDrift(ctx, old, "DRIFT-X", SourceBalanceFile); err == nil || !strings.Contains(err.Error(), "CHECK") {
		t.Fatalf("the old schema took a BALANCE_FILE drift (%v): the test does not start from the old schema", err)
	}
	old.Close()

	// A plain store.Open with the current Schema leaves the old table.
	plain, err := store.Open(ctx, path, Schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := insertDrift(ctx, plain, "DRIFT-X", SourceBalanceFile); err == nil {
		t.Fatal("store.Open alone changed the CHECK: the migration is not what makes it pass")
	}
	plain.Close()

	for round := 0; round < 2; round++ { // the second open finds nothing to do
		db, err := OpenDB(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		id := []string{"DRIFT-BF1", "DRIFT-BF2"}[round]
		if err := insertDrift(ctx, db, id, SourceBalanceFile); err != nil {
			t.Fatalf("round %d: a BALANCE_FILE drift after OpenDB: %v", round, err)
		}
		if err := insertDrift(ctx, db, "DRIFT-BAD", "BOGUS"); err == nil || !strings.Contains(err.Error(), "CHECK") {
			t.Fatalf("round %d: an unknown source was accepted (%v): the check must stay", round, err)
		}
		var rows, old, index int
		err = db.Read(ctx, func(tx *store.Tx) error {
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), SUM(drift_id = 'DRIFT-OLD' AND source = 'INQUIRY' AND drift = 500
				AND case_id = 'CASE-1' AND status = 'OPEN') FROM AdapterReconDrift`).Scan(&rows, &old); err != nil {
				return err
			}
			return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'idx_drift_open'`).Scan(&index)
		})
		if err != nil {
			t.Fatal(err)
		}
		if rows != 2+round || old != 1 || index != 1 {
			t.Fatalf("round %d: %d rows (want %d), old row kept %d, index %d", round, rows, 2+round, old, index)
		}
		db.Close()
	}
}

// A database made before EDI_PATTERN and the account lifecycle: OpenDB
// rebuilds AdapterFilters (its rows kept) and adds AdapterAccounts.lifecycle
// (existing accounts OPEN).
func TestOpenDBMigratesFiltersAndLifecycle(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "adapter-0001.db")
	oldSchema := strings.Replace(Schema, ",'EDI_PATTERN')", ")", 1)
	oldSchema = strings.Replace(oldSchema, "  lifecycle       TEXT NOT NULL DEFAULT 'OPEN' CHECK (lifecycle IN ('OPEN','CLOSING_HOLD','CLOSED')),\n", "", 1)
	if oldSchema == Schema || strings.Contains(oldSchema, "lifecycle IN") {
		t.Fatal("the old schema text was not derived")
	}
	old, err := store.Open(ctx, path, oldSchema)
	if err != nil {
		t.Fatal(err)
	}
	insert := func(db *store.DB, id, typ string) error {
		return db.Write(ctx, func(tx *store.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO AdapterFilters (filter_id, scope, filter_type, condition_json, action, created_by, created_at, updated_at)
				VALUES (?, 'BANK', ?, '{}', 'REJECT', 'TELLER:t', '2026-12-01T00:00:00Z', '2026-12-01T00:00:00Z')`, id, typ)
			return err
		})
	}
	if err := insert(old, "FLT-OLD", FilterRequireApproval); err != nil {
		t.Fatal(err)
	}
	if err := old.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO AdapterAccounts (account_hash, core_account, holder_name, status, opening_balance, created_at, updated_at)
			VALUES ('h:1', '100-1-0000001', 'A', 'ACTIVE', 10, '2026-12-01T00:00:00Z', '2026-12-01T00:00:00Z')`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := insert(old, "FLT-X", FilterEDIPattern); err == nil {
		t.Fatal("the old schema took an EDI_PATTERN filter: the test does not start from the old schema")
	}
	old.Close()
	db, err := OpenDB(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := insert(db, "FLT-EDI", FilterEDIPattern); err != nil {
		t.Fatalf("EDI_PATTERN after OpenDB: %v", err)
	}
	var n int
	var lc string
	if err := db.Read(ctx, func(tx *store.Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM AdapterFilters`).Scan(&n); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT lifecycle FROM AdapterAccounts WHERE account_hash = 'h:1'`).Scan(&lc)
	}); err != nil {
		t.Fatal(err)
	}
	if n != 2 || lc != LifecycleOpen {
		t.Fatalf("after migration: %d filters, lifecycle %q", n, lc)
	}
}
