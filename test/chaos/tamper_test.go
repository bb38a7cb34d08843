package chaos_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/store"
)

// TestAuditCatchesTampering proves the audit can fail: a short run with no
// kill must pass every check; then the files and the client's records are
// changed the way each failure would leave them, and each check must name
// what was changed.
func TestAuditCatchesTampering(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos suite: not in -short")
	}
	ctx := context.Background()
	r := runChaos(t, runConfig{seed: 42, kills: 0, clients: 2, settle: 30 * time.Second})
	if f := audit(ctx, t, r); len(f.by) > 0 {
		f.report(t)
		t.Fatalf("a run without a kill must pass the audit")
	}
	write := func(file, query string, args ...any) {
		t.Helper()
		db, err := store.Open(ctx, filepath.Join(r.dir, file), "")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Write(ctx, func(tx *store.Tx) error {
			res, err := tx.ExecContext(ctx, query, args...)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("%s: %s changed %d rows, want 1", file, query, n)
			}
			return nil
		}); err != nil {
			t.Fatalf("%s: %s: %v", file, query, err)
		}
	}
	var settled, other *sent
	for _, s := range r.all {
		if s.Kind == kindExpress && s.accepted() != nil && s.Payer.Bank != "001" && s.Payee.Bank != "001" {
			if settled == nil {
				settled = s
			} else if other == nil {
				other = s
			}
		}
	}
	if settled == nil || other == nil {
		t.Fatal("the run settled too few EXPRESS transfers outside bank 001 to tamper with")
	}
	// The files are the audit's only source once the node is stopped, so
	// the run's handles must see the changes: they read fresh snapshots.
	write("core-001.db", `INSERT INTO CoreJournal (ref, txid, account, kind, amount, delta, balance_after, source, posted_at)
		SELECT ref, txid, account, kind, amount, delta, balance_after, source, posted_at FROM CoreJournal
		WHERE source != 'OPENING' AND kind = 'CREDIT' ORDER BY journal_id LIMIT 1`) // a posting applied twice
	write("core-001.db", `UPDATE CoreAccounts SET balance = balance + 1 WHERE account = (SELECT account FROM CoreAccounts ORDER BY account LIMIT 1)`)
	write("zc.db", `UPDATE Transactions SET state = 'DECIDED_TO_SETTLE' WHERE txid = ?`, settled.txid())
	write("zc.db", `INSERT INTO Cases (case_id, related_txid, reason_code, opened_by, created_at, updated_at)
		VALUES ('CASE-TAMPER', ?, 'IDEMPOTENCY_KEY_CONFLICT', 'ZC', '2026-12-03T00:00:00Z', '2026-12-03T00:00:00Z')`, other.txid())
	write("zc.db", `UPDATE FinalityLog SET payload_json = payload_json || ' ' WHERE txid = ? AND event_type = 'Settled'`, other.txid())
	write("zc.db", `UPDATE Participants SET h_used = h_used + 7 WHERE bank_id = '003'`)
	write("core-"+other.Payee.Bank+".db", `DELETE FROM CoreJournal WHERE txid = ? AND kind = 'CREDIT'`, other.txid())
	write("adapter-"+settled.Payer.Bank+".db", `UPDATE AdapterOutbox SET status = 'PENDING' WHERE txid = ? AND kind = 'DEBIT'`, settled.txid())

	// The client's records: an answer that differs, a request never
	// answered, an accepted request forgotten, a refused one accepted.
	other.Answers = append(other.Answers, answer{Status: 200, Body: []byte(`{"txid":"TX-SOMETHING-ELSE"}`), Replayed: true},
		answer{Status: 201, Body: other.accepted().Body})
	r.all = append(r.all, &sent{Key: "chaos-tamper-unanswered", Kind: kindExpress, Payer: other.Payer, Payee: other.Payee, Amount: 1})
	var kept []*sent
	dropped := ""
	for _, s := range r.all {
		if dropped == "" && s != settled && s != other && s.accepted() != nil && s.Kind == kindExpress {
			dropped = s.txid()
			continue
		}
		kept = append(kept, s)
	}
	r.all = kept
	for i, s := range r.all {
		if s == settled {
			r.all[i] = &sent{Key: s.Key, Kind: s.Kind, Payer: s.Payer, Payee: s.Payee, Amount: s.Amount + 1, Body: s.Body, Answers: s.Answers}
		}
	}
	r.all = append(r.all, &sent{Key: "chaos-tamper-invalid", Kind: kindInvalid, Payer: other.Payer, Payee: other.Payee,
		Answers: []answer{{Status: 201, Body: []byte(`{"txid":"TX-TAMPER-INVALID"}`)}}})

	f := audit(ctx, t, r)
	for _, c := range []struct{ check, want string }{
		{chkExactlyOnce, "applied 2 times"},
		{chkAccount, "core balance"},
		{chkConserved, "the cores hold"},
		{chkShadow, "shadow"},
		{chkTerminal, settled.txid() + " (key " + settled.Key},
		{chkCrashCase, "CASE-TAMPER"},
		{chkChains, "chain break"},
		{chkReleased, "bank 003 has 7 of H in use"},
		{chkDebitCredit, other.txid() + " (key " + other.Key},
		{chkOutbox, "is PENDING"},
		{chkAnswers, "TX-SOMETHING-ELSE"},
		{chkAnswers, "accepted 2 times as new"},
		{chkUnanswered, "chaos-tamper-unanswered"},
		{chkUnknownRow, dropped},
		{chkAccepted, settled.Key},
		{chkRefused, "chaos-tamper-invalid"},
	} {
		if got := strings.Join(f.by[c.check], "\n"); !strings.Contains(got, c.want) {
			t.Errorf("check %s after tampering: findings %q, want one naming %q", c.check, got, c.want)
		}
	}
}
