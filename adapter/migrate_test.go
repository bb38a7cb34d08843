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
