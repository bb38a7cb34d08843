package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// Where each database of a node lives. A node owns several databases, one
// per component: the coordinator's (with the job ledger), the ingress
// nonces, the embedded queue manager, and per bank its adapter and its
// simulated core. A Locator is the one answer to "where is component X
// stored": every opener (the node, the CLI commands, the bench) asks it
// for the location it passes to Open, never builds a path itself.
//
// SQLite (the default): DIR/<component>.db in the data folder, the files
// zcgw has always used. PostgreSQL: one schema per component, named
// <prefix><component> with '-' as '_' (zc, ingress_nonces, mq,
// adapter_001, core_001), in the database of URL, or of URLs[component]
// when the component has a database of its own.

// Component names: the database of each part of a node.
const (
	// CoordinatorDB is the coordinator's database; the job ledger shares it.
	CoordinatorDB = "zc"
	// NoncesDB is the ingress nonce store.
	NoncesDB = "ingress-nonces"
	// MQDB is the embedded queue manager's queue store.
	MQDB = "mq"
)

// AdapterDB is the database of a bank's adapter.
func AdapterDB(bank string) string { return "adapter-" + bank }

// CoreDB is the database of a bank's simulated core.
func CoreDB(bank string) string { return "core-" + bank }

// Kind is a storage backend.
type Kind string

// The backends.
const (
	SQLite   Kind = "sqlite"
	Postgres Kind = "postgres"
)

// Locator maps a component name to the location Open takes.
type Locator struct {
	Kind Kind // "" is SQLite
	// Dir is the data folder (SQLite files).
	Dir string
	// URL is the PostgreSQL database (no search_path: the Locator sets it
	// per component).
	URL string
	// Prefix starts every schema name (PostgreSQL), so that several
	// deployments, or a test and a bench, share one database.
	Prefix string
	// URLs gives a component a database of its own (PostgreSQL).
	URLs map[string]string
}

// Postgres reports whether the components live in PostgreSQL.
func (l Locator) Postgres() bool { return l.Kind == Postgres }

// SchemaName is a component's PostgreSQL schema.
func (l Locator) SchemaName(component string) string {
	return l.Prefix + strings.ReplaceAll(component, "-", "_")
}

// Location is what Open takes for a component: a SQLite file under Dir,
// or a postgres:// URL whose search_path is the component's schema.
func (l Locator) Location(component string) string {
	if !l.Postgres() {
		return filepath.Join(l.Dir, component+".db")
	}
	base := l.database(component)
	u, err := url.Parse(base)
	if err != nil { // CheckPostgresURL refuses it first; Open reports it
		return base
	}
	q := u.Query()
	q.Set("search_path", l.SchemaName(component))
	u.RawQuery = q.Encode()
	return u.String()
}

// Describe names a component's location for logs and command output: the
// file, or the URL with its password masked.
func (l Locator) Describe(component string) string { return Redact(l.Location(component)) }

// Name names a component's database for an operator: "zc.db" (in the
// data folder), or "schema zc in postgres://…" (the password masked).
func (l Locator) Name(component string) string {
	if !l.Postgres() {
		return component + ".db"
	}
	return "schema " + l.SchemaName(component) + " in " + Redact(l.database(component))
}

// database is the PostgreSQL database URL of a component.
func (l Locator) database(component string) string {
	if u, ok := l.URLs[component]; ok {
		return u
	}
	return l.URL
}

// Redact masks the password of a postgres:// location (a file path is
// returned as is).
func Redact(location string) string {
	if !IsPostgres(location) {
		return location
	}
	u, err := url.Parse(location)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	return u.Redacted()
}

// Exists reports whether a component's database was ever created: its
// file, or its schema.
func (l Locator) Exists(ctx context.Context, component string) (bool, error) {
	loc := l.Location(component)
	if !l.Postgres() {
		_, err := os.Stat(loc)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return err == nil, err
	}
	var ok bool
	err := l.admin(ctx, component, func(db *sql.DB) error {
		return db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", l.SchemaName(component)).Scan(&ok)
	})
	return ok, err
}

// Drop deletes a component's database: its file (with the WAL), or its
// schema with everything in it. Dropping what does not exist is not an
// error.
func (l Locator) Drop(ctx context.Context, component string) error {
	if !l.Postgres() {
		loc := l.Location(component)
		var errs []error
		for _, p := range []string{loc, loc + "-wal", loc + "-shm"} {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	return l.admin(ctx, component, func(db *sql.DB) error {
		_, err := db.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+quoteIdent(l.SchemaName(component))+" CASCADE")
		return err
	})
}

func (l Locator) admin(ctx context.Context, component string, f func(*sql.DB) error) error {
	base := l.database(component)
	db, err := sql.Open("pgx", base)
	if err != nil {
		return fmt.Errorf("store: %s: %w", Redact(base), err)
	}
	defer db.Close()
	if err := f(db); err != nil {
		return fmt.Errorf("store: %s: %w", Redact(base), err)
	}
	return nil
}

// CheckPostgresURL says what is wrong with a PostgreSQL database URL for
// a Locator ("" when nothing): it must be postgres:// or postgresql://,
// name a host and a database, and leave search_path to the Locator.
func CheckPostgresURL(raw string) string {
	if raw == "" {
		return "missing"
	}
	if !IsPostgres(raw) {
		return "not a postgres:// or postgresql:// URL"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "not a URL: " + strings.ReplaceAll(err.Error(), raw, Redact(raw))
	}
	switch {
	case u.Host == "" && u.Query().Get("host") == "":
		return "names no host"
	case strings.Trim(u.Path, "/") == "":
		return "names no database (postgres://host:port/DATABASE)"
	case u.Query().Has("search_path"):
		return "sets search_path: zcgw puts each component in its own schema (use store.schema_prefix to share a database)"
	}
	return ""
}

// CheckSchemaPrefix says what is wrong with a schema prefix ("" when
// nothing): lower-case letters, digits and '_', starting with a letter,
// so that every schema name is a plain identifier.
func CheckSchemaPrefix(p string) string {
	for i, c := range p {
		if !(c >= 'a' && c <= 'z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return fmt.Sprintf("%q: character %d (%q) is not one of a-z, 0-9 (not first), _", p, i, c)
		}
	}
	if len(p) > 40 {
		return fmt.Sprintf("%q: longer than 40 characters (PostgreSQL names stop at 63)", p)
	}
	return ""
}
