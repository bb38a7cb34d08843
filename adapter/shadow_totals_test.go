package adapter

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox"
)

func checkShadowTotals(t testing.TB, a *Adapter) {
	t.Helper()
	var drift []string
	if err := a.DB().Read(context.Background(), func(tx *store.Tx) error {
		var err error
		drift, err = shadowTotalsDrift(context.Background(), tx)
		return err
	}); err != nil {
		t.Errorf("shadow totals: %v", err)
		return
	}
	if len(drift) > 0 {
		t.Errorf("shadow totals differ from the posting rows for accounts %v", drift)
	}
}

// The kept totals follow every change of a posting or its outbox row:
// inserted in either order, re-statused through every status, moved to
// another account, deleted; and a database made before the totals existed
// gets them from its rows on its next open.
func TestShadowTotalsMatchTheirSums(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "adapter.db")
	db, err := store.Open(ctx, path, adapterSchema+outbox.Schema) // as before the totals
	if err != nil {
		t.Fatal(err)
	}
	exec := func(db *store.DB, q string, args ...any) {
		t.Helper()
		if err := db.Write(ctx, func(tx *store.Tx) error { _, err := tx.ExecContext(ctx, q, args...); return err }); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	account := func(db *store.DB, h string) {
		exec(db, `INSERT INTO AdapterAccounts (account_hash, core_account, holder_name, status, opening_balance, created_at, updated_at)
			VALUES (?, ?, 'X', 'ACTIVE', 1000, 't', 't')`, h, "C-"+h)
	}
	posting := func(db *store.DB, ref, h string, dir int, amount int64) {
		exec(db, `INSERT INTO AdapterPostings (ref, outbox_id, txid, account_hash, kind, direction, amount, request_id, created_at)
			VALUES (?, 0, 'TX', ?, CASE WHEN ? < 0 THEN 'DEBIT' ELSE 'CREDIT' END, ?, ?, 'R', 't')`, ref, h, dir, dir, amount)
	}
	outboxRow := func(db *store.DB, ref, status string, amount int64) {
		exec(db, `INSERT INTO AdapterOutbox (ref, txid, bank, account, kind, amount, status, created_at, updated_at)
			VALUES (?, 'TX', '001', 'C', 'DEBIT', ?, ?, 't', 't')`, ref, amount, status)
	}
	// A database without the totals: rows first, totals on reopen.
	account(db, "h:a")
	account(db, "h:b")
	posting(db, "P1", "h:a", -1, 100)
	outboxRow(db, "P1", "APPLIED", 100)
	posting(db, "P2", "h:b", 1, 40)
	outboxRow(db, "P2", "CLAIMED", 40)
	db.Close()
	if db, err = store.Open(ctx, path, Schema); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := &Adapter{db: db}
	checkShadowTotals(t, a)
	// Outbox row first, posting second.
	outboxRow(db, "P3", "PENDING", 7)
	posting(db, "P3", "h:a", -1, 7)
	checkShadowTotals(t, a)
	for _, st := range []string{"CLAIMED", "IN_DOUBT", "BLOCKED", "IN_FILE", "PENDING", "APPLIED", "WRITTEN_OFF", "APPLIED"} {
		exec(db, `UPDATE AdapterOutbox SET status = ? WHERE ref = 'P3'`, st)
		checkShadowTotals(t, a)
	}
	exec(db, `UPDATE AdapterPostings SET account_hash = 'h:b', amount = 9 WHERE ref = 'P3'`)
	checkShadowTotals(t, a)
	exec(db, `UPDATE AdapterOutbox SET status = 'IN_DOUBT' WHERE ref = 'P2'`)
	exec(db, `DELETE FROM AdapterPostings WHERE ref = 'P1'`)
	checkShadowTotals(t, a)
	exec(db, `DELETE FROM AdapterOutbox WHERE ref = 'P2'`)
	checkShadowTotals(t, a)
	var applied, unsettled int64
	if err := db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(applied), 0), COALESCE(SUM(unsettled), 0) FROM AdapterShadowTotals`).Scan(&applied, &unsettled)
	}); err != nil {
		t.Fatal(err)
	}
	if applied != -9 || unsettled != 0 { // only P3 is left: APPLIED debit of 9 on h:b
		t.Errorf("totals applied %d unsettled %d, want -9 and 0", applied, unsettled)
	}
}

// A database whose shadow triggers are an earlier version's (the IN-list
// form) gets this version's on its next OpenDB, and the totals the old
// triggers kept stay exact under the new ones.
func TestOpenDBReplacesOldShadowTriggers(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "adapter.db")
	db, err := OpenDB(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	in := func(st string, statuses []string) string {
		return st + " IN ('" + strings.Join(statuses, "','") + "')"
	}
	old := map[string]string{}
	for name, sql := range liteTriggers {
		for _, st := range []string{"OLD.status", "NEW.status", "o.status"} {
			sql = strings.ReplaceAll(sql, oneOf(st, pendingStatuses), in(st, pendingStatuses))
			sql = strings.ReplaceAll(sql, oneOf(st, unsettledStatuses), in(st, unsettledStatuses))
		}
		old[name] = sql
	}
	if old["trg_shadow_outbox_upd"] == liteTriggers["trg_shadow_outbox_upd"] {
		t.Fatal("the old form of trg_shadow_outbox_upd equals the new one")
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if err := db.Write(ctx, func(tx *store.Tx) error { _, err := tx.ExecContext(ctx, q, args...); return err }); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for name, sql := range old {
		exec(`DROP TRIGGER ` + name)
		exec(sql)
	}
	exec(`INSERT INTO AdapterAccounts (account_hash, core_account, holder_name, status, opening_balance, created_at, updated_at)
		VALUES ('h:a', 'C-a', 'X', 'ACTIVE', 1000, 't', 't')`)
	exec(`INSERT INTO AdapterOutbox (ref, txid, bank, account, kind, amount, status, created_at, updated_at)
		VALUES ('P1', 'TX', '001', 'C', 'DEBIT', 30, 'PENDING', 't', 't')`)
	exec(`INSERT INTO AdapterPostings (ref, outbox_id, txid, account_hash, kind, direction, amount, request_id, created_at)
		VALUES ('P1', 0, 'TX', 'h:a', 'DEBIT', -1, 30, 'R', 't')`)
	exec(`UPDATE AdapterOutbox SET status = 'CLAIMED' WHERE ref = 'P1'`)
	db.Close()

	if db, err = OpenDB(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for name, want := range liteTriggers {
		var have string
		if err := db.Read(ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?`, name).Scan(&have)
		}); err != nil {
			t.Fatal(err)
		}
		if have != strings.Replace(want, "IF NOT EXISTS ", "", 1) {
			t.Errorf("trigger %s after OpenDB:\n%s\nwant this version's:\n%s", name, have, want)
		}
	}
	a := &Adapter{db: db}
	checkShadowTotals(t, a)
	for _, st := range []string{"APPLIED", "IN_DOUBT", "PENDING", "BLOCKED", "APPLIED"} {
		exec(`UPDATE AdapterOutbox SET status = ? WHERE ref = 'P1'`, st)
		checkShadowTotals(t, a)
	}
	var applied, pd int64
	if err := db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT applied, pending_debits FROM AdapterShadowTotals WHERE account_hash = 'h:a'`).Scan(&applied, &pd)
	}); err != nil {
		t.Fatal(err)
	}
	if applied != -30 || pd != 0 {
		t.Errorf("h:a applied %d pending debits %d, want -30 and 0", applied, pd)
	}
}
