package store

import (
	"errors"

	"context"
	"fmt"
	"github.com/jackc/pgx/v5/pgconn"
	"strings"
)

// The SQL dialect idioms the coordinator depends on live in this file and
// nowhere else (spec 000 §7.2). Each function documents its SQLite form and
// the equivalent another backend (PostgreSQL) would use; a port rewrites
// this file and must pass dialect_test.go (the conformance tests of spec
// 000 §7.3 item 0: guarded conditional insert, all-or-nothing write,
// idempotent insert, strictly increasing event_seq).

// InsertOrIgnore builds an idempotent INSERT of one row into table with
// the given columns, one placeholder per column: a row whose primary or
// unique key already exists is silently skipped (RowsAffected 0).
//
// SQLite: INSERT OR IGNORE INTO t (a, b) VALUES (?, ?).
// PostgreSQL: INSERT INTO t (a, b) VALUES ($1, $2) ON CONFLICT DO NOTHING.
func InsertOrIgnore(table string, columns []string) string {
	ph := strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ")
	return fmt.Sprintf("INSERT OR IGNORE INTO %s (%s) VALUES (%s)", table, strings.Join(columns, ", "), ph)
}

// Insert runs InsertOrIgnore and reports whether the row was inserted,
// which is the atomic claim several callers rely on (idempotency keys,
// new transactions): exactly one of N racing inserters gets true.
func Insert(ctx context.Context, tx *Tx, table string, columns []string, args ...any) (inserted bool, err error) {
	if len(args) != len(columns) {
		return false, fmt.Errorf("store: insert into %s: %d columns, %d values", table, len(columns), len(args))
	}
	return Applied(tx.ExecContext(ctx, InsertOrIgnore(table, columns), args...))
}

// Applied runs the result of a guarded statement (a CAS UPDATE, an
// INSERT OR IGNORE) and reports whether it changed at least one row. This
// is the "changes() > 0" gate: inside one serialised write transaction the
// caller branches on it and writes the dependent rows (the FinalityLog
// entry) only when the guard held — the Go equivalent of SQLite's
// conditional INSERT ... WHERE changes() > 0 and of PostgreSQL's
// UPDATE ... RETURNING row check.
func Applied(res interface{ RowsAffected() (int64, error) }, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: rows affected: %w", err)
	}
	return n > 0, nil
}

// NextFinalitySeq allocates the next FinalityLog event_seq inside tx:
// strictly increasing and never reused, because the allocation commits or
// rolls back with the entry that uses it and the single writer serialises
// all allocations.
//
// SQLite: a plain UPDATE followed by a SELECT in the same transaction; the
// SELECT only on the transaction's first allocation, since later ones know
// the value the transaction itself set (Tx memo: a FinalityLog entry costs
// one statement here, not two, when a group commit carries many).
// UPDATE ... RETURNING is deliberately not used: with mattn/go-sqlite3 it
// costs 80–150 µs per call (glibc heap trimming around SQLite's temporary
// result table), while UPDATE + SELECT costs a few µs.
// PostgreSQL: UPDATE FinalitySeq SET next_seq = next_seq + 1 WHERE id = 1
// RETURNING next_seq (or a SEQUENCE if gaps on rollback are acceptable —
// they are: gaps are allowed, reuse is not).
func NextFinalitySeq(ctx context.Context, tx *Tx) (int64, error) {
	return NextFinalitySeqs(ctx, tx, 1)
}

// finalitySeqMemo is the Tx memo of FinalitySeq.next_seq as this
// transaction last set it: after its own UPDATE the transaction holds the
// row (SQLite's write lock, PostgreSQL's row lock), so the next allocation
// in the same transaction knows the value without reading it back.
const finalitySeqMemo = "store.FinalitySeq.next_seq"

// NextFinalitySeqs allocates n consecutive FinalityLog event_seq values
// inside tx and returns the first (the others follow it): NextFinalitySeq
// for a batch of entries, with the same guarantees, in two statements.
//
// SQLite: UPDATE ... SET next_seq = next_seq + n, then SELECT.
// PostgreSQL: UPDATE ... SET next_seq = next_seq + $1 RETURNING next_seq.
func NextFinalitySeqs(ctx context.Context, tx *Tx, n int) (int64, error) {
	if n < 1 {
		return 0, fmt.Errorf("store: allocate %d event_seq values", n)
	}
	ok, err := Applied(tx.ExecContext(ctx, "UPDATE FinalitySeq SET next_seq = next_seq + ? WHERE id = 1", n))
	if err != nil {
		tx.Forget(finalitySeqMemo)
		return 0, fmt.Errorf("store: allocate event_seq: %w", err)
	}
	if !ok {
		return 0, fmt.Errorf("store: allocate event_seq: FinalitySeq row 1 is missing")
	}
	var last int64
	if v, ok := tx.Memo(finalitySeqMemo); ok {
		last = v.(int64) + int64(n)
	} else if err := tx.QueryRowContext(ctx, "SELECT next_seq FROM FinalitySeq WHERE id = 1").Scan(&last); err != nil {
		return 0, fmt.Errorf("store: read event_seq: %w", err)
	}
	tx.SetMemo(finalitySeqMemo, last)
	return last - int64(n) + 1, nil
}

// InsertRows builds a plain multi-row INSERT of rows rows into table:
// INSERT INTO t (a, b) VALUES (?, ?), (?, ?). A row whose key exists
// fails the statement (a unique violation) and the statement writes
// nothing; the transaction goes on.
//
// SQLite and PostgreSQL: the same text (PostgreSQL numbers the
// placeholders $1, $2, ...).
func InsertRows(table string, columns []string, rows int) string {
	ph := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ") + ")"
	var b strings.Builder
	b.WriteString(fmt.Sprintf("INSERT INTO %s (%s) VALUES ", table, strings.Join(columns, ", ")))
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(ph)
	}
	return b.String()
}

// IsUniqueViolation reports whether err is a unique or primary key
// constraint failure.
//
// SQLite: "UNIQUE constraint failed" / "PRIMARY KEY" in the message
// (sqlite3.ErrConstraintUnique). PostgreSQL: SQLSTATE 23505.
func IsUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		return pgErr.Code == "23505"
	}
	msg := err.Error()
	return strings.Contains(msg, "UNIQUE constraint failed") || strings.Contains(msg, "PRIMARY KEY constraint failed")
}

// isLockConflict reports whether err is PostgreSQL aborting a statement
// to break a lock conflict with another transaction: a deadlock (SQLSTATE
// 40P01) or a serialization failure (40001). The statement wrote nothing;
// running it again after the other transaction ends succeeds. SQLite has
// one writer and never reports either.
func isLockConflict(err error) bool {
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		return pgErr.Code == "40P01" || pgErr.Code == "40001"
	}
	return false
}

// IndexedBy returns a table-name suffix that pins the index a query must
// use, for the few queries whose best index SQLite's planner does not pick
// without statistics (the GLOBAL chain tip: without the hint it walks
// idx_fl_gchain_seq over every TX entry since the last GLOBAL one).
//
// SQLite: " INDEXED BY <index>". PostgreSQL: "" (its planner chooses
// partial indexes from statistics; there is no hint syntax).
func IndexedBy(index string) string { return " INDEXED BY " + index }

// InsertID runs an INSERT of one row and returns the new row's id, the
// table's INTEGER PRIMARY KEY AUTOINCREMENT column named idColumn.
//
// SQLite: the statement, then LastInsertId (RETURNING costs far more with
// mattn/go-sqlite3, see NextFinalitySeq). PostgreSQL: the statement with
// RETURNING idColumn (its driver has no LastInsertId).
func InsertID(ctx context.Context, tx *Tx, idColumn, query string, args ...any) (int64, error) {
	if tx.postgres {
		var id int64
		err := tx.QueryRowContext(ctx, strings.TrimRight(strings.TrimSpace(query), ";")+" RETURNING "+idColumn, args...).Scan(&id)
		return id, err
	}
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// ColumnExists reports whether table has column, for the additive
// migrations of files created by an earlier version (ALTER TABLE ... ADD
// COLUMN when it is missing).
//
// SQLite: pragma_table_info. PostgreSQL: information_schema.columns in
// the current schema (names folded to lower case).
func ColumnExists(ctx context.Context, tx *Tx, table, column string) (bool, error) {
	q := "SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?"
	if tx.postgres {
		q = "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = lower(?) AND column_name = lower(?)"
	}
	var n int
	if err := tx.QueryRowContext(ctx, q, table, column).Scan(&n); err != nil {
		return false, fmt.Errorf("store: columns of %s: %w", table, err)
	}
	return n > 0, nil
}

// ForUpdate is the suffix that locks the rows a SELECT reads until the
// write transaction ends, for a check-then-write (a lease, a fence) that
// must not interleave with another writer.
//
// SQLite: "" (a write transaction is exclusive: BEGIN IMMEDIATE).
// PostgreSQL: " FOR UPDATE" (writers of several nodes run concurrently).
func (tx *Tx) ForUpdate() string {
	if tx.postgres {
		return " FOR UPDATE"
	}
	return ""
}

// SkipLocked is the suffix of a SELECT that picks work items for a claim
// in the same write transaction: the rows it returns are locked until the
// transaction ends, and rows another writer has locked are skipped rather
// than waited for, so concurrent claimers on several nodes take disjoint
// items instead of queueing behind each other and then finding their
// guarded UPDATE changed nothing.
//
// SQLite: "" (the write transaction is exclusive: one claimer at a time
// sees every due row). PostgreSQL: " FOR UPDATE SKIP LOCKED". The query
// it ends must read one table (no join, no aggregate: PostgreSQL refuses
// FOR UPDATE on those), after its ORDER BY and LIMIT.
func (tx *Tx) SkipLocked() string {
	if tx.postgres {
		return " FOR UPDATE SKIP LOCKED"
	}
	return ""
}
