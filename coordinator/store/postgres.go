package store

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // PostgreSQL driver "pgx"
)

// PostgreSQL backend. A location that is a postgres:// (or postgresql://)
// URL opens PostgreSQL through pgx's database/sql driver instead of a
// SQLite file. The component's tables live in the schema named by the
// URL's search_path parameter (created if missing), so every component of
// a node can share one database, each in its own schema, or use a
// database of its own.
//
// The same SQL runs on both backends: the code writes SQLite's form with
// ? placeholders, and pgQuery rewrites it once per distinct query (cached)
// into PostgreSQL's: $n placeholders, INSERT OR IGNORE as ON CONFLICT DO
// NOTHING, no INDEXED BY hint, a IS NOT b as IS DISTINCT FROM, json_extract(col, '$.key') as
// (col::jsonb ->> 'key'), json_each(?) of a JSON array as
// json_array_elements_text(?) (its column "value" is the element as text,
// as SQLite's is for an array of strings). The schema scripts are rewritten the same
// way by pgDDL (INTEGER is BIGINT: money and sequences are 64-bit; BLOB is
// BYTEA; AUTOINCREMENT is an identity column; every table gains a last
// column rowid, an identity, so that "ORDER BY ..., rowid" keeps meaning
// insertion order as in SQLite). Everything else our SQL
// uses is common to both; dialect.go lists the idioms.
//
// Transactions: the writer is one connection per process, exactly as with
// SQLite (group commit, savepoints), at READ COMMITTED; CAS updates
// re-check their guard after waiting for a row lock, and FinalitySeq's
// row lock orders appends across processes. Reads run at REPEATABLE READ,
// read-only, so a Read sees one snapshot as SQLite's readers do.

// IsPostgres reports whether location names a PostgreSQL database.
func IsPostgres(location string) bool {
	return strings.HasPrefix(location, "postgres://") || strings.HasPrefix(location, "postgresql://")
}

func openPostgres(ctx context.Context, location, schema string) (*DB, error) {
	u, err := url.Parse(location)
	if err != nil {
		return nil, fmt.Errorf("store: postgres location: %w", err)
	}
	searchPath := u.Query().Get("search_path")
	w, err := sql.Open("pgx", location)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", redactURL(u), err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	if err := applyPostgresSchema(ctx, w, searchPath, schema); err != nil {
		w.Close()
		return nil, fmt.Errorf("store: %s: %w", redactURL(u), err)
	}
	r, err := sql.Open("pgx", location)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open readers %s: %w", redactURL(u), err)
	}
	// Readers come and go: several nodes, each with a dozen databases
	// (components, queue-manager connections), share one server's
	// max_connections, so an idle reader is closed after a while rather
	// than kept for good.
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(1)
	r.SetConnMaxIdleTime(5 * time.Second)
	db := &DB{path: redactURL(u), w: w, r: r, postgres: true,
		readOpts: &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}}
	db.wstmts.pool, db.rstmts.pool = w, r
	db.wstmts.postgres, db.rstmts.postgres = true, true
	return db, nil
}

// applyPostgresSchema creates the schema named by searchPath and applies
// the component's DDL, rewritten for PostgreSQL, in one transaction under
// an advisory lock: several nodes starting at once on one database must
// not race each other's CREATE ... IF NOT EXISTS (PostgreSQL's catalog
// inserts can collide).
func applyPostgresSchema(ctx context.Context, w *sql.DB, searchPath, schema string) error {
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin schema: %w", err)
	}
	defer tx.Rollback()
	h := fnv.New64a()
	h.Write([]byte("zcgw-schema:" + searchPath))
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(h.Sum64())); err != nil {
		return fmt.Errorf("schema lock: %w", err)
	}
	if searchPath != "" {
		if _, err := tx.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+quoteIdent(searchPath)); err != nil {
			return fmt.Errorf("create schema %s: %w", searchPath, err)
		}
	}
	if schema != "" {
		ddl := schemaFor(schema, true, pgDDL)
		// A schema already applied is not applied again: its DDL would
		// take table locks (CREATE INDEX IF NOT EXISTS locks its table
		// even when the index exists) beside the writes of the nodes
		// already running on the database, and deadlock with them. The
		// digests of the scripts applied are kept in the schema's
		// comment (no table of our own: the schema stays the component's).
		dh := fnv.New64a()
		dh.Write([]byte(ddl))
		digest := fmt.Sprintf("%016x", dh.Sum64())
		var name string
		var comment sql.NullString
		if err := tx.QueryRowContext(ctx, "SELECT n.nspname, obj_description(n.oid, 'pg_namespace') FROM pg_namespace n WHERE n.nspname = current_schema()").Scan(&name, &comment); err != nil {
			return fmt.Errorf("schema comment: %w", err)
		}
		applied := strings.Fields(strings.TrimPrefix(comment.String, schemaCommentPrefix))
		if strings.HasPrefix(comment.String, schemaCommentPrefix) && slices.Contains(applied, digest) {
			return tx.Commit()
		}
		if _, err := tx.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("apply schema: %w", err)
		}
		if !strings.HasPrefix(comment.String, schemaCommentPrefix) {
			applied = nil
		}
		note := schemaCommentPrefix + strings.Join(append(applied, digest), " ")
		if _, err := tx.ExecContext(ctx, "COMMENT ON SCHEMA "+quoteIdent(name)+" IS '"+strings.ReplaceAll(note, "'", "''")+"'"); err != nil {
			return fmt.Errorf("schema comment: %w", err)
		}
	}
	return tx.Commit()
}

// schemaCommentPrefix starts the comment of a schema zcgw applied its
// scripts to, followed by their digests.
const schemaCommentPrefix = "zcgw schema scripts applied: "

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// redactURL names a database without its password.
func redactURL(u *url.URL) string { return u.Redacted() }

var (
	ddlAutoinc  = regexp.MustCompile(`(?i)\bINTEGER\s+PRIMARY\s+KEY\s+AUTOINCREMENT\b`)
	ddlInteger  = regexp.MustCompile(`\bINTEGER\b`)
	ddlBlob     = regexp.MustCompile(`\bBLOB\b`)
	ddlReal     = regexp.MustCompile(`\bREAL\b`)
	ddlInsertOr = regexp.MustCompile(`(?is)INSERT\s+OR\s+IGNORE\s+INTO([^;]*);`)
)

// pgDDL rewrites a SQLite schema script into PostgreSQL's form.
func pgDDL(ddl string) string {
	ddl = stripSQLComments(ddl)
	ddl = ddlAutoinc.ReplaceAllString(ddl, "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
	ddl = ddlInteger.ReplaceAllString(ddl, "BIGINT")
	ddl = ddlBlob.ReplaceAllString(ddl, "BYTEA")
	ddl = ddlReal.ReplaceAllString(ddl, "DOUBLE PRECISION")
	ddl = ddlInsertOr.ReplaceAllString(ddl, "INSERT INTO$1 ON CONFLICT DO NOTHING;")
	return withRowid(nullSafe(ddl))
}

// nullSafe rewrites SQLite's null-safe "a IS NOT b" (b a column) as
// PostgreSQL's "a IS DISTINCT FROM b"; IS NOT NULL/TRUE/FALSE stay.
func nullSafe(q string) string {
	return qIsNot.ReplaceAllStringFunc(q, func(m string) string {
		w := qIsNot.FindStringSubmatch(m)[1]
		switch strings.ToUpper(w) {
		case "NULL", "TRUE", "FALSE", "DISTINCT":
			return m
		}
		return "IS DISTINCT FROM " + w
	})
}

// stripSQLComments removes -- comments (outside string literals), so the
// rewrites above never match words in prose.
func stripSQLComments(s string) string {
	var b strings.Builder
	inStr := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			inStr = !inStr
		case !inStr && c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			if i < len(s) {
				b.WriteByte('\n')
			}
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

var (
	pgQueries       sync.Map // SQLite query -> PostgreSQL query
	qInsertOrIgnore = regexp.MustCompile(`(?is)^(\s*)INSERT\s+OR\s+IGNORE\s+INTO\b`)
	qIndexedBy      = regexp.MustCompile(`(?i)\s+INDEXED\s+BY\s+\w+`)
	qReturning      = regexp.MustCompile(`(?is)\sRETURNING\s`)
	qIsNot          = regexp.MustCompile(`(?i)\bIS\s+NOT\s+(\w+)`)
	qJSONExtract    = regexp.MustCompile(`json_extract\(\s*([\w.]+)\s*,\s*'\$\.(\w+)'\s*\)`)
	qJSONEach       = regexp.MustCompile(`(?i)\bjson_each\(`)
)

// pgQuery rewrites one SQLite-form query into PostgreSQL's form.
func pgQuery(q string) string {
	if v, ok := pgQueries.Load(q); ok {
		return v.(string)
	}
	out := q
	if qInsertOrIgnore.MatchString(out) {
		out = qInsertOrIgnore.ReplaceAllString(out, "${1}INSERT INTO")
		body := strings.TrimRight(strings.TrimSpace(out), ";")
		if loc := qReturning.FindStringIndex(body); loc != nil {
			out = body[:loc[0]] + " ON CONFLICT DO NOTHING" + body[loc[0]:]
		} else {
			out = body + " ON CONFLICT DO NOTHING"
		}
	}
	out = qIndexedBy.ReplaceAllString(out, "")
	out = qJSONExtract.ReplaceAllString(out, "(($1)::jsonb ->> '$2')")
	out = qJSONEach.ReplaceAllString(out, "json_array_elements_text(")
	out = nullSafe(out)
	out = rebind(out)
	pgQueries.Store(q, out)
	return out
}

// rebind turns ? (and ?NNN) placeholders outside string literals and quoted
// identifiers into $1, $2, ...
func rebind(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	n := 0
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			if j > i+1 { // ?NNN: SQLite's numbered parameter
				b.WriteString("$" + q[i+1:j])
				i = j - 1
				continue
			}
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Postgres reports whether db is a PostgreSQL database.
func (db *DB) Postgres() bool { return db.postgres }

var ddlCreateTable = regexp.MustCompile(`(?i)CREATE\s+TABLE\s+(IF\s+NOT\s+EXISTS\s+)?\w+\s*\(`)

// withRowid appends "rowid BIGINT GENERATED ALWAYS AS IDENTITY" as the
// last column of every CREATE TABLE of ddl, so rowid keeps SQLite's
// meaning (insertion order) in queries; a table whose INTEGER PRIMARY
// KEY is its rowid in SQLite is no exception (the extra column is unused).
func withRowid(ddl string) string {
	var b strings.Builder
	for {
		loc := ddlCreateTable.FindStringIndex(ddl)
		if loc == nil {
			b.WriteString(ddl)
			return b.String()
		}
		// find the parenthesis closing the one the match ends with
		depth, i := 1, loc[1]
		quote := byte(0)
		for ; i < len(ddl) && depth > 0; i++ {
			switch c := ddl[i]; {
			case quote != 0:
				if c == quote {
					quote = 0
				}
			case c == '\'' || c == '"':
				quote = c
			case c == '(':
				depth++
			case c == ')':
				depth--
			}
		}
		if depth != 0 { // unbalanced: leave it for the server to report
			b.WriteString(ddl)
			return b.String()
		}
		end := i - 1
		b.WriteString(ddl[:end])
		b.WriteString(",\n  rowid BIGINT GENERATED ALWAYS AS IDENTITY")
		b.WriteString(ddl[end:i])
		ddl = ddl[i:]
	}
}
