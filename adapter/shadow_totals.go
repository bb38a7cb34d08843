package adapter

import (
	"context"
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/coordinator/store"
)

// The shadow's sums over an account's postings (applied, pending debits
// and credits, unsettled) are kept per account in AdapterShadowTotals by
// triggers on AdapterPostings and AdapterOutbox, so readShadow reads one
// row instead of summing every posting the account ever had (a cost that
// grew with the account's history, on every reserve, debit and credit).
// The totals stay derived data: each trigger runs inside the statement
// that inserts, re-statuses or deletes a posting or its outbox row, so
// they can never disagree with the outbox about what the core was told.
// Each trigger has a SQLite form and a PostgreSQL form (a PL/pgSQL
// function of the same name), built from the same statements
// (store.ByBackend; test/storeconf checks both declare the same triggers).
// TestShadowTotalsMatchTheirSums recomputes them from the rows
// (shadowSumsSQL) after every kind of change.

// Which outbox statuses count toward which sum (readShadow's definition).
var (
	pendingStatuses   = []string{"PENDING", "CLAIMED", "IN_DOUBT", "BLOCKED", "IN_FILE"}
	unsettledStatuses = []string{"CLAIMED", "IN_DOUBT", "IN_FILE"}
)

// oneOf is "st is one of statuses" as a chain of equalities, not
// "st IN (...)": SQLite codes a constant IN list as an ephemeral b-tree
// built on each run of the statement, and a trigger's statements run once
// per changed row, so each outbox status UPDATE paid for eight such trees
// (a temporary pager and its page-cache allocation each): measured on a
// bench adapter file, 0.05–0.5 ms of CPU per UPDATE against 6–8 µs with
// the chains (docs/PERFORMANCE.md, session 7).
func oneOf(st string, statuses []string) string {
	eqs := make([]string, len(statuses))
	for i, s := range statuses {
		eqs[i] = st + " = '" + s + "'"
	}
	return "(" + strings.Join(eqs, " OR ") + ")"
}

// contrib is the four sums' contribution of posting p under outbox
// status st, times sign ("+" or "-").
func contrib(st, p, sign string) string {
	return fmt.Sprintf(`%[3]sSUM(CASE WHEN %[1]s = 'APPLIED' THEN %[2]s.direction * %[2]s.amount ELSE 0 END),
	%[3]sSUM(CASE WHEN %[4]s AND %[2]s.direction < 0 THEN %[2]s.amount ELSE 0 END),
	%[3]sSUM(CASE WHEN %[4]s AND %[2]s.direction > 0 THEN %[2]s.amount ELSE 0 END),
	%[3]sSUM(CASE WHEN %[5]s THEN 1 ELSE 0 END)`, st, p, sign, oneOf(st, pendingStatuses), oneOf(st, unsettledStatuses))
}

const upsertTotals = `INSERT INTO AdapterShadowTotals (account_hash, applied, pending_debits, pending_credits, unsettled) `

// addTotals adds the proposed row to the kept one (its columns qualified:
// PostgreSQL finds a bare name ambiguous beside excluded's).
const addTotals = ` ON CONFLICT(account_hash) DO UPDATE SET applied = AdapterShadowTotals.applied + excluded.applied,
	pending_debits = AdapterShadowTotals.pending_debits + excluded.pending_debits,
	pending_credits = AdapterShadowTotals.pending_credits + excluded.pending_credits,
	unsettled = AdapterShadowTotals.unsettled + excluded.unsettled;`

// trigger declares an AFTER ... FOR EACH ROW trigger in both backends'
// forms: SQLite's (body in the trigger) and PostgreSQL's (body in a
// PL/pgSQL function of the same name, which the trigger executes). event
// is "INSERT", "DELETE" or "UPDATE OF cols"; changed, when not empty,
// lists the columns whose value must differ for the trigger to fire.
func trigger(name, event, table string, changed []string, body string) string {
	var liteWhen, pgWhen []string
	for _, c := range changed {
		liteWhen = append(liteWhen, "OLD."+c+" IS NOT NEW."+c)
		pgWhen = append(pgWhen, "OLD."+c+" IS DISTINCT FROM NEW."+c)
	}
	lite := "CREATE TRIGGER IF NOT EXISTS " + name + " AFTER " + event + " ON " + table
	pg := "CREATE OR REPLACE FUNCTION " + name + "() RETURNS trigger LANGUAGE plpgsql AS $fn$\nBEGIN\n" + body +
		"\nRETURN NULL;\nEND\n$fn$;\nCREATE OR REPLACE TRIGGER " + name + " AFTER " + event + " ON " + table + " FOR EACH ROW"
	if len(changed) > 0 {
		lite += " WHEN " + strings.Join(liteWhen, " OR ")
		pg += " WHEN (" + strings.Join(pgWhen, " OR ") + ")"
	}
	liteTriggers[name] = lite + " BEGIN\n" + body + "\nEND"
	return store.ByBackend(liteTriggers[name]+";", pg+" EXECUTE FUNCTION "+name+"();")
}

// liteTriggers is each shadow trigger's SQLite statement, by name, for
// migrateShadowTriggers.
var liteTriggers = map[string]string{}

// migrateShadowTriggers replaces, in a SQLite database made by an earlier
// version, each shadow trigger whose text is not this version's (CREATE
// TRIGGER IF NOT EXISTS keeps an old one; PostgreSQL's CREATE OR REPLACE
// needs nothing). The totals are not touched: a new trigger body computes
// the same sums, so the kept totals stay exact. One write transaction:
// a crash leaves either every old trigger or every new one.
func migrateShadowTriggers(ctx context.Context, db *store.DB) error {
	stale := func(tx *store.Tx) ([]string, error) {
		var out []string
		for name, want := range liteTriggers {
			var have string
			err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?`, name).Scan(&have)
			if err != nil {
				return nil, fmt.Errorf("adapter: migrate: read trigger %s: %w", name, err)
			}
			if have != strings.Replace(want, "IF NOT EXISTS ", "", 1) {
				out = append(out, name)
			}
		}
		return out, nil
	}
	var names []string
	if err := db.Read(ctx, func(tx *store.Tx) (err error) { names, err = stale(tx); return }); err != nil || len(names) == 0 {
		return err
	}
	err := db.Write(ctx, func(tx *store.Tx) error {
		names, err := stale(tx) // another process may have replaced them first
		if err != nil {
			return err
		}
		for _, name := range names {
			if _, err := tx.ExecContext(ctx, `DROP TRIGGER `+name); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, liteTriggers[name]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("adapter: migrate shadow triggers of %s: %w", db.Path(), err)
	}
	return nil
}

// shadowSumsSQL is the sums recomputed from the rows, per account.
var shadowSumsSQL = `SELECT p.account_hash, ` + contrib("o.status", "p", "") + `
	FROM AdapterPostings p JOIN AdapterOutbox o ON o.ref = p.ref GROUP BY p.account_hash`

// shadowTotalsSchema follows outbox.Schema in Schema (its triggers read
// AdapterOutbox). The first open of a database made before the totals
// existed fills them from the rows, once (AdapterShadowTotalsBuilt).
var shadowTotalsSchema = `
CREATE TABLE IF NOT EXISTS AdapterShadowTotals (
  account_hash    TEXT PRIMARY KEY,
  applied         INTEGER NOT NULL DEFAULT 0,
  pending_debits  INTEGER NOT NULL DEFAULT 0,
  pending_credits INTEGER NOT NULL DEFAULT 0,
  unsettled       INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS AdapterShadowTotalsBuilt (id INTEGER PRIMARY KEY CHECK (id = 1));
` + trigger("trg_shadow_posting_ins", "INSERT", "AdapterPostings", nil,
	upsertTotals+`SELECT NEW.account_hash, `+contrib("o.status", "NEW", "")+` FROM AdapterOutbox o WHERE o.ref = NEW.ref GROUP BY o.ref`+addTotals) +
	trigger("trg_shadow_posting_del", "DELETE", "AdapterPostings", nil,
		upsertTotals+`SELECT OLD.account_hash, `+contrib("o.status", "OLD", "-")+` FROM AdapterOutbox o WHERE o.ref = OLD.ref GROUP BY o.ref`+addTotals) +
	trigger("trg_shadow_posting_upd", "UPDATE OF ref, account_hash, direction, amount", "AdapterPostings", nil,
		upsertTotals+`SELECT OLD.account_hash, `+contrib("o.status", "OLD", "-")+` FROM AdapterOutbox o WHERE o.ref = OLD.ref GROUP BY o.ref`+addTotals+"\n"+
			upsertTotals+`SELECT NEW.account_hash, `+contrib("o.status", "NEW", "")+` FROM AdapterOutbox o WHERE o.ref = NEW.ref GROUP BY o.ref`+addTotals) +
	trigger("trg_shadow_outbox_ins", "INSERT", "AdapterOutbox", nil,
		upsertTotals+`SELECT p.account_hash, `+contrib("NEW.status", "p", "")+` FROM AdapterPostings p WHERE p.ref = NEW.ref GROUP BY p.account_hash`+addTotals) +
	trigger("trg_shadow_outbox_del", "DELETE", "AdapterOutbox", nil,
		upsertTotals+`SELECT p.account_hash, `+contrib("OLD.status", "p", "-")+` FROM AdapterPostings p WHERE p.ref = OLD.ref GROUP BY p.account_hash`+addTotals) +
	trigger("trg_shadow_outbox_upd", "UPDATE OF status, ref", "AdapterOutbox", []string{"status", "ref"},
		upsertTotals+`SELECT p.account_hash, `+contrib("OLD.status", "p", "-")+` FROM AdapterPostings p WHERE p.ref = OLD.ref GROUP BY p.account_hash`+addTotals+"\n"+
			upsertTotals+`SELECT p.account_hash, `+contrib("NEW.status", "p", "")+` FROM AdapterPostings p WHERE p.ref = NEW.ref GROUP BY p.account_hash`+addTotals) +
	upsertTotals + strings.Replace(shadowSumsSQL, "GROUP BY", "WHERE NOT EXISTS (SELECT 1 FROM AdapterShadowTotalsBuilt) GROUP BY", 1) + addTotals + `
INSERT OR IGNORE INTO AdapterShadowTotalsBuilt (id) VALUES (1);
`

// shadowTotalsDrift lists the accounts whose kept totals differ from the
// sums recomputed from the rows ("" each: none).
func shadowTotalsDrift(ctx context.Context, tx *store.Tx) ([]string, error) {
	out, err := queryStrings(ctx, tx, `WITH s(account_hash, applied, pd, pc, un) AS (`+shadowSumsSQL+`)
		SELECT COALESCE(s.account_hash, t.account_hash) FROM s FULL OUTER JOIN AdapterShadowTotals t ON t.account_hash = s.account_hash
		WHERE COALESCE(s.applied, 0) <> COALESCE(t.applied, 0) OR COALESCE(s.pd, 0) <> COALESCE(t.pending_debits, 0)
		   OR COALESCE(s.pc, 0) <> COALESCE(t.pending_credits, 0) OR COALESCE(s.un, 0) <> COALESCE(t.unsettled, 0)`)
	if err != nil {
		return nil, fmt.Errorf("adapter: shadow totals drift: %w", err)
	}
	return out, nil
}
