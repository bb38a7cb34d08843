// Package storetest gives tests the database backends to run on: SQLite
// always, and PostgreSQL when one is reachable (required when CI=true).
// Each PostgreSQL location is a fresh schema of one test database
// (zcgw_test), dropped when the test ends, so tests never see each
// other's rows and need nothing but a server.
//
// The server is ZCGW_TEST_POSTGRES (a postgres:// URL of a database the
// test user may CREATE DATABASE from), by default
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable. It imports
// only coordinator/store and the standard library.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/store"
)

// Backend is one database backend a test runs on.
type Backend struct {
	// Name is "sqlite" or "postgres", for subtest names.
	Name string
	// Location returns a fresh, empty location for a database called
	// name (a file in t's temporary folder, or a schema dropped at t's
	// end) to pass to store.Open.
	Location func(t testing.TB, name string) string
}

// DefaultServer is the PostgreSQL server used when ZCGW_TEST_POSTGRES is
// unset.
const DefaultServer = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

const testDatabase = "zcgw_test"

// SQLite is the embedded backend.
var SQLite = Backend{Name: "sqlite", Location: func(t testing.TB, name string) string {
	return filepath.Join(t.TempDir(), name+".db")
}}

// Each runs f as a subtest once per available backend. PostgreSQL is
// skipped with a message when no server answers, unless CI=true, where
// its absence fails the test.
func Each(t *testing.T, f func(t *testing.T, b Backend)) {
	t.Helper()
	for _, b := range Backends(t) {
		t.Run(b.Name, func(t *testing.T) { f(t, b) })
	}
}

// Backends lists the available backends (see Each).
func Backends(t testing.TB) []Backend {
	t.Helper()
	bs := []Backend{SQLite}
	if pg, ok := Postgres(t); ok {
		bs = append(bs, pg)
	}
	return bs
}

var (
	pgOnce sync.Once
	pgBase string // URL of the test database, or ""
	pgErr  error
)

// Postgres returns the PostgreSQL backend, or false (after t.Log) when no
// server answers; with CI=true a missing server fails t.
func Postgres(t testing.TB) (Backend, bool) {
	t.Helper()
	pgOnce.Do(func() { pgBase, pgErr = prepareServer() })
	if pgErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is required in CI: %v", pgErr)
		}
		t.Logf("PostgreSQL backend skipped: %v", pgErr)
		return Backend{}, false
	}
	return Backend{Name: "postgres", Location: func(t testing.TB, name string) string {
		return freshSchema(t, name)
	}}, true
}

// prepareServer checks the server and creates the test database.
func prepareServer() (string, error) {
	server := os.Getenv("ZCGW_TEST_POSTGRES")
	if server == "" {
		server = DefaultServer
	}
	u, err := url.Parse(server)
	if err != nil {
		return "", fmt.Errorf("ZCGW_TEST_POSTGRES: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	admin, err := sql.Open("pgx", server)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	if err := admin.PingContext(ctx); err != nil {
		return "", fmt.Errorf("no server at %s: %w", u.Redacted(), err)
	}
	var exists bool
	if err := admin.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", testDatabase).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+testDatabase); err != nil && !strings.Contains(err.Error(), "already exists") {
			return "", fmt.Errorf("create database %s: %w", testDatabase, err)
		}
	}
	u.Path = "/" + testDatabase
	return u.String(), nil
}

// freshSchema returns the test database's URL with a new search_path
// schema, dropped when t ends.
func freshSchema(t testing.TB, name string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + strings.ToLower(sanitize(name)) + "_" + hex.EncodeToString(b[:])
	u, _ := url.Parse(pgBase)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	t.Cleanup(func() {
		db, err := sql.Open("pgx", pgBase)
		if err != nil {
			return
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
	})
	return u.String()
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		if b.Len() >= 24 {
			break
		}
	}
	return b.String()
}

// Open opens a fresh database on b with schema, closed when t ends.
func Open(t testing.TB, b Backend, name, schema string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), b.Location(t, name), schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
