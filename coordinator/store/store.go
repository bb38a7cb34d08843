// Package store opens zcgw's databases (embedded SQLite files by default,
// PostgreSQL for a postgres:// location: postgres.go, docs/storage.md) and
// runs work in transactions: one writer connection taking BEGIN IMMEDIATE (SQLite
// serialises writers anyway, and several writer connections only add
// unfair busy-waiting), and a separate pool of read connections. Every
// pragma is in the DSN so it applies to every pooled connection. Writes are
// durable when acknowledged (synchronous=FULL); throughput comes from
// batching work into fewer commits, never from weaker durability: either
// explicitly (several changes in one Write) or by group commit (every
// Write, group.go: concurrent callers share one commit, each in its own
// savepoint). Statements are prepared once per pool and cached.
//
// The coordinator's consolidated schema (schema.sql) and the SQL dialect
// idioms (dialect.go) live here and nowhere else, so that another backend
// can be added behind the same conformance tests. It must not import any
// other zcgw package except coordinator/clock, coordinator/domainerr and
// coordinator/failpoint (the shared-infrastructure layer).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	sqlite3 "github.com/mattn/go-sqlite3" // SQLite driver "sqlite3"
)

// writerDriver is the SQLite driver of every writer connection: each
// connection's temporary store is in memory, so the statement journal a
// savepoint keeps (every group-commit caller runs in one, group.go) holds
// the pages it saves in memory instead of spilling them, past 64 KiB, to
// an unnamed temporary file opened for the transaction (one open and a
// pwrite per saved page). It is only the undo of a savepoint inside an
// open transaction: the WAL and synchronous=FULL keep durability as
// before. The readers keep file-backed temporaries (their large sorts).
const writerDriver = "sqlite3-zcgw-writer"

func init() {
	sql.Register(writerDriver, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		if _, err := c.Exec("PRAGMA temp_store = MEMORY", nil); err != nil {
			return fmt.Errorf("store: temp_store: %w", err)
		}
		return nil
	}})
}

// DB is an embedded SQLite database with one writer and a read pool.
type DB struct {
	path  string
	w     *sql.DB
	r     *sql.DB
	stats Stats

	postgres bool // PostgreSQL (postgres.go) rather than SQLite
	// lockFirst, when set, is run first in every write transaction: the
	// coordinator's on PostgreSQL takes the FinalitySeq row lock, so that
	// every writer of every node takes its locks in one order
	// (OpenCoordinator).
	lockFirst string
	readOpts  *sql.TxOptions // options of Read transactions

	// Statements prepared once per pool, so a hot path does not re-parse
	// and re-plan its SQL on every call (mattn/go-sqlite3 prepares every
	// Exec/Query afresh otherwise). database/sql keeps each pool
	// statement prepared on every connection that ran it.
	wstmts, rstmts stmtCache

	// group commit queue (group.go)
	groupMu      sync.Mutex
	groupQueue   []*groupReq
	groupLeading bool
	groupRunning sync.WaitGroup
	closed       bool
}

// stmtCache is one pool's prepared statements.
type stmtCache struct {
	pool     *sql.DB
	postgres bool
	mu       sync.Mutex
	stmts    map[string]*sql.Stmt
	closed   bool
}

// maxCachedStmts bounds the statement cache; beyond it statements run
// unprepared (correct, just slower).
const maxCachedStmts = 512

// Stats counts statements and commits, to measure the cost of a flow.
type Stats struct {
	Statements atomic.Int64
	Commits    atomic.Int64
}

// Snapshot is a point-in-time copy of Stats.
type Snapshot struct{ Statements, Commits int64 }

// Open opens (creating if needed) the database at path and applies
// schema, a script of idempotent DDL (CREATE ... IF NOT EXISTS). An empty
// schema applies nothing. path is a SQLite file, or a postgres:// URL
// (postgres.go: the schema is rewritten for PostgreSQL and applied in the
// URL's search_path).
func Open(ctx context.Context, path, schema string) (*DB, error) {
	if IsPostgres(path) {
		return openPostgres(ctx, path, schema)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("store: create folder for %s: %w", path, err)
	}
	base := "file:" + (&url.URL{Path: path}).EscapedPath()
	common := "_busy_timeout=10000&_foreign_keys=on&_journal_mode=WAL&_synchronous=FULL"
	w, err := sql.Open(writerDriver, base+"?"+common+"&_txlock=immediate&_cache_size=-32768")
	if err != nil {
		return nil, fmt.Errorf("store: open writer %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	if schema != "" {
		if _, err := w.ExecContext(ctx, schemaFor(schema, false, func(s string) string { return s })); err != nil {
			w.Close()
			return nil, fmt.Errorf("store: apply schema to %s: %w", path, err)
		}
	} else if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	r, err := sql.Open("sqlite3", base+"?"+common+"&_query_only=true&_txlock=deferred")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open readers %s: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	db := &DB{path: path, w: w, r: r}
	db.wstmts.pool, db.rstmts.pool = w, r
	return db, nil
}

// Path is the database file.
func (db *DB) Path() string { return db.path }

// Close waits for queued writes to commit, then closes both pools. A
// Write after Close returns an error.
func (db *DB) Close() error {
	db.groupMu.Lock()
	db.closed = true
	db.groupMu.Unlock()
	db.groupRunning.Wait()
	return errors.Join(db.wstmts.close(), db.rstmts.close(), db.r.Close(), db.w.Close())
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, st := range c.stmts {
		errs = append(errs, st.Close())
	}
	c.stmts, c.closed = nil, true
	return errors.Join(errs...)
}

// get returns the prepared statement for query if the cache has it. A
// miss runs unprepared and is remembered; prepareMissed prepares the
// misses after the transaction ends, when its connection is free again
// (preparing on the pool inside the transaction could wait for that very
// connection forever).
func (c *stmtCache) get(query string) (*sql.Stmt, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.stmts[query]
	return st, ok
}

// prepareMissed prepares the single-statement queries a transaction ran
// unprepared, up to the cache bound. Failures are not errors: the query
// keeps running unprepared.
func (c *stmtCache) prepareMissed(ctx context.Context, missed map[string]bool) {
	for query := range missed {
		c.mu.Lock()
		_, have := c.stmts[query]
		full := len(c.stmts) >= maxCachedStmts
		c.mu.Unlock()
		if have || full {
			continue
		}
		prepared := query
		if c.postgres {
			prepared = pgQuery(query)
		}
		st, err := c.pool.PrepareContext(ctx, prepared)
		if err != nil {
			continue
		}
		c.mu.Lock()
		if _, have := c.stmts[query]; have || c.closed {
			st.Close()
		} else {
			if c.stmts == nil {
				c.stmts = map[string]*sql.Stmt{}
			}
			c.stmts[query] = st
		}
		c.mu.Unlock()
	}
}

// singleStatement reports whether query is one statement (Prepare would
// silently run only the first statement of a script).
func singleStatement(query string) bool {
	return !strings.Contains(strings.TrimRight(strings.TrimSpace(query), ";"), ";")
}

// Stats returns the statement and commit counters so far.
func (db *DB) Stats() Snapshot {
	return Snapshot{Statements: db.stats.Statements.Load(), Commits: db.stats.Commits.Load()}
}

// Read runs fn in a read transaction on the read pool, which sees a
// consistent snapshot of the last commit.
func (db *DB) Read(ctx context.Context, fn func(tx *Tx) error) error {
	return db.run(ctx, db.r, fn, false)
}

func (db *DB) run(ctx context.Context, pool *sql.DB, fn func(tx *Tx) error, write bool) (err error) {
	var opts *sql.TxOptions
	if !write {
		opts = db.readOpts
	}
	stx, err := pool.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	tx := &Tx{Tx: stx, stats: &db.stats, cache: &db.rstmts, postgres: db.postgres}
	if write {
		tx.cache = &db.wstmts
	}
	defer func() {
		if p := recover(); p != nil {
			_ = stx.Rollback()
			panic(p)
		}
	}()
	if write && db.lockFirst != "" {
		if _, err := tx.ExecContext(ctx, db.lockFirst); err != nil {
			_ = stx.Rollback()
			return fmt.Errorf("store: lock first: %w", err)
		}
	}
	if err := fn(tx); err != nil {
		if rbErr := stx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
			return errors.Join(err, fmt.Errorf("store: rollback: %w", rbErr))
		}
		return err
	}
	if err := stx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	if write {
		db.stats.Commits.Add(1)
	}
	for _, f := range tx.after {
		f()
	}
	if len(tx.missed) > 0 {
		tx.cache.prepareMissed(context.WithoutCancel(ctx), tx.missed)
	}
	return nil
}

// Tx is one transaction. Its Exec/Query/QueryRow count statements; in a
// write transaction they reuse statements prepared on the writer
// connection.
type Tx struct {
	*sql.Tx
	stats    *Stats
	cache    *stmtCache      // the pool's prepared statements
	postgres bool            // queries are rewritten for PostgreSQL (pgQuery)
	missed   map[string]bool // statements to prepare after this transaction
	// local holds the statements this transaction prepared itself: a
	// query missed by the cache and run a second time in the same
	// transaction (a batch writing thousands of rows) is prepared on the
	// transaction's connection once, not parsed again for every row.
	// database/sql closes them when the transaction ends.
	local map[string]*sql.Stmt
	// shared marks a group-commit transaction: it carries several callers'
	// writes, so no one caller's cancellation may interrupt a statement
	// (SQLite would abandon the whole transaction, neighbours included).
	shared bool
	after  []func() // AfterCommit callbacks
	// memo holds values this transaction read or wrote itself (Memo), so
	// a later statement of the same transaction need not read them again.
	memo map[string]any
}

// Memo returns the value remembered under key in this transaction
// (SetMemo), if any. A memo lives as long as the transaction and no
// longer, and every ROLLBACK TO a savepoint run through ExecContext (a
// group-commit caller's failure, or a caller's own savepoint) drops all
// of them, since the rolled-back statements may have written what they
// remember. It is for values only this transaction can change while it
// runs: the writer holds the database's write lock (SQLite) or the row's
// lock after its UPDATE (PostgreSQL), or the value is the transaction's
// own write.
func (tx *Tx) Memo(key string) (any, bool) {
	v, ok := tx.memo[key]
	return v, ok
}

// SetMemo remembers v under key for the rest of the transaction (Memo).
func (tx *Tx) SetMemo(key string, v any) {
	if tx.memo == nil {
		tx.memo = map[string]any{}
	}
	tx.memo[key] = v
}

// Forget drops the memo under key: call it after a statement that changes
// what the memo holds.
func (tx *Tx) Forget(key string) { delete(tx.memo, key) }

// AfterCommit runs f after the transaction committed durably (never when it
// rolls back, nor when the caller's part of a group commit is undone). f
// runs on the committing goroutine before Write returns: it must be quick
// and must not call Write (a wake-up signal, not work).
func (tx *Tx) AfterCommit(f func()) { tx.after = append(tx.after, f) }

// detach drops the caller's cancellation inside a shared transaction.
func (tx *Tx) detach(ctx context.Context) context.Context {
	if tx.shared {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

func (tx *Tx) stmt(ctx context.Context, query string) *sql.Stmt {
	if !singleStatement(query) {
		return nil
	}
	if st, ok := tx.cache.get(query); ok {
		return tx.Tx.StmtContext(ctx, st)
	}
	if st, ok := tx.local[query]; ok {
		return st
	}
	if tx.missed[query] {
		// The second run in this transaction: prepare it here, on the
		// transaction's own connection (the pool's may be this one).
		st, err := tx.Tx.PrepareContext(ctx, tx.dialect(query))
		if err != nil {
			return nil // runs unprepared and reports its own error
		}
		if tx.local == nil {
			tx.local = map[string]*sql.Stmt{}
		}
		tx.local[query] = st
		return st
	}
	if tx.missed == nil {
		tx.missed = map[string]bool{}
	}
	tx.missed[query] = true
	return nil
}

// dialect is query in the backend's form.
func (tx *Tx) dialect(query string) string {
	if tx.postgres {
		return pgQuery(query)
	}
	return query
}

// ExecContext runs a statement. A ROLLBACK TO drops every memo (Memo).
func (tx *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	tx.stats.Statements.Add(1)
	if len(tx.memo) > 0 && strings.HasPrefix(query, "ROLLBACK") {
		clear(tx.memo)
	}
	ctx = tx.detach(ctx)
	if st := tx.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return tx.Tx.ExecContext(ctx, tx.dialect(query), args...)
}

// QueryContext runs a query.
func (tx *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	tx.stats.Statements.Add(1)
	ctx = tx.detach(ctx)
	if st := tx.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return tx.Tx.QueryContext(ctx, tx.dialect(query), args...)
}

// QueryRowContext runs a single-row query.
func (tx *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	tx.stats.Statements.Add(1)
	ctx = tx.detach(ctx)
	if st := tx.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return tx.Tx.QueryRowContext(ctx, tx.dialect(query), args...)
}
