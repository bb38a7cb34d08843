package storetest

import (
	"context"
	"database/sql"
	"net/url"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/store"
)

// Locator returns a store.Locator on b whose every component database is
// fresh: SQLite files in dir, or PostgreSQL schemas under a fresh prefix
// of the test database, all dropped when t ends. It is how a test runs a
// whole node (node.json's store block) on a backend.
func Locator(t testing.TB, b Backend, dir string) store.Locator {
	t.Helper()
	loc := b.Location(t, "n")
	if !store.IsPostgres(loc) {
		return store.Locator{Kind: store.SQLite, Dir: dir}
	}
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	prefix := q.Get("search_path") + "_"
	q.Del("search_path")
	u.RawQuery = q.Encode()
	l := store.Locator{Kind: store.Postgres, URL: u.String(), Prefix: prefix}
	t.Cleanup(func() { dropPrefixed(t, l.URL, prefix) })
	return l
}

// dropPrefixed drops every schema whose name starts with prefix.
func dropPrefixed(t testing.TB, dbURL, prefix string) {
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Logf("drop schemas %s*: %v", prefix, err)
		return
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, "SELECT nspname FROM pg_namespace WHERE left(nspname, length($1)) = $1", prefix)
	if err != nil {
		t.Logf("drop schemas %s*: %v", prefix, err)
		return
	}
	var names []string
	for rows.Next() {
		var n string
		if rows.Scan(&n) == nil {
			names = append(names, n)
		}
	}
	rows.Close()
	for _, n := range names {
		if _, err := db.ExecContext(ctx, `DROP SCHEMA IF EXISTS "`+n+`" CASCADE`); err != nil {
			t.Logf("drop schema %s: %v", n, err)
		}
	}
}
