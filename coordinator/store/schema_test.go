package store

import (
	"context"
	"path/filepath"
	"testing"
)

// The tables of spec 003 plus SystemMode and AccessViolationWindows, each with the number of columns
// the spec gives it.
var wantTables = map[string]int{
	"Participants": 17, "Transactions": 35, "HReservations": 9,
	"ParticipantCurrencyLimits": 4, "FinalityLog": 11, "FinalitySeq": 2,
	"EntityStateLog": 10, "DnsCycles": 18, "DnsNetPositions": 7,
	"IgsDeferQueue": 12, "IgsThrottleState": 5, "LsmRuns": 14,
	"HtlcContracts": 26, "GtidTransactions": 12, "GtidLegs": 15,
	"FxQuotes": 13, "FxTransfers": 12, "FxLegLocks": 14, "Cases": 19,
	"CaseRelatedTransactions": 5, "AccessAuditLog": 9, "AccessViolationWindows": 8, "Vault": 7,
	"PsprRegistry": 8, "RtpRequests": 20, "IdempotencyKeys": 6,
	"SystemMode": 7,
}

func TestOpenCoordinatorAppliesSchemaTwice(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "zc.db")
	for i := 0; i < 2; i++ { // second open re-applies the schema to a live file
		db, err := OpenCoordinator(ctx, path)
		if err != nil {
			t.Fatalf("open #%d: %v", i+1, err)
		}
		got := map[string]int{}
		var seq int64
		var modes int
		err = db.Read(ctx, func(tx *Tx) error {
			for name := range wantTables {
				var n int
				if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM pragma_table_info(?)", name).Scan(&n); err != nil {
					return err
				}
				got[name] = n
			}
			if err := tx.QueryRowContext(ctx, "SELECT next_seq FROM FinalitySeq WHERE id = 1").Scan(&seq); err != nil {
				return err
			}
			return tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM SystemMode WHERE active = 0").Scan(&modes)
		})
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		for name, cols := range wantTables {
			if got[name] != cols {
				t.Errorf("table %s has %d columns, want %d", name, got[name], cols)
			}
		}
		if seq != 0 || modes != 2 {
			t.Errorf("seeds: FinalitySeq.next_seq=%d (want 0), inactive SystemMode rows=%d (want 2)", seq, modes)
		}
	}
}
