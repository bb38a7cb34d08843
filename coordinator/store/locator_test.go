package store_test

import (
	"context"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

// locatorOn is a Locator on backend b whose databases are fresh: a
// temporary folder, or schemas under a fresh prefix of the test database.
func locatorOn(t *testing.T, b storetest.Backend) store.Locator {
	loc := b.Location(t, "loc")
	if !store.IsPostgres(loc) {
		return store.Locator{Kind: store.SQLite, Dir: filepath.Dir(loc)}
	}
	u, _ := url.Parse(loc)
	q := u.Query()
	prefix := q.Get("search_path") + "_"
	q.Del("search_path")
	u.RawQuery = q.Encode()
	l := store.Locator{Kind: store.Postgres, URL: u.String(), Prefix: prefix}
	t.Cleanup(func() { l.Drop(context.Background(), store.CoordinatorDB) })
	return l
}

// A component's database does not exist until opened, exists after, and
// is gone after Drop, whose second call is no error; each component has
// a database of its own.
func TestLocatorExistsAndDrop(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		l := locatorOn(t, b)
		if ok, err := l.Exists(ctx, store.CoordinatorDB); ok || err != nil {
			t.Fatalf("before open: %v %v", ok, err)
		}
		db, err := store.Open(ctx, l.Location(store.CoordinatorDB), "CREATE TABLE IF NOT EXISTS t (v INTEGER NOT NULL);")
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Write(ctx, func(tx *store.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO t (v) VALUES (7)")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if ok, err := l.Exists(ctx, store.CoordinatorDB); !ok || err != nil {
			t.Fatalf("after open: %v %v", ok, err)
		}
		if ok, err := l.Exists(ctx, store.AdapterDB("001")); ok || err != nil {
			t.Fatalf("another component: %v %v", ok, err)
		}
		if err := l.Drop(ctx, store.CoordinatorDB); err != nil {
			t.Fatal(err)
		}
		if ok, err := l.Exists(ctx, store.CoordinatorDB); ok || err != nil {
			t.Fatalf("after drop: %v %v", ok, err)
		}
		if err := l.Drop(ctx, store.CoordinatorDB); err != nil {
			t.Fatalf("second drop: %v", err)
		}
		db, err = store.Open(ctx, l.Location(store.CoordinatorDB), "CREATE TABLE IF NOT EXISTS t (v INTEGER NOT NULL);")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.Read(ctx, func(tx *store.Tx) error { return tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&n) }); err != nil || n != 0 {
			t.Fatalf("reopened after drop: %d rows, %v", n, err)
		}
	})
}

// Checks of the store block's values.
func TestCheckPostgresURL(t *testing.T) {
	for raw, want := range map[string]string{
		"":                                  "missing",
		"postgres://u:p@h:5432/db":          "",
		"postgresql://h/db?sslmode=disable": "",
		"postgres:///db?host=/run/pg":       "",
		"mysql://h/db":                      "not a postgres:// or postgresql:// URL",
		"postgres://h":                      "names no database (postgres://host:port/DATABASE)",
		"postgres:///db":                    "names no host",
		"postgres://h/db?search_path=x":     "sets search_path: zcgw puts each component in its own schema (use store.schema_prefix to share a database)",
	} {
		if got := store.CheckPostgresURL(raw); got != want {
			t.Errorf("%q: %q, want %q", raw, got, want)
		}
	}
	for p, ok := range map[string]bool{"": true, "east_": true, "a1_": true, "1a": false, "A": false, "a-b": false} {
		if got := store.CheckSchemaPrefix(p) == ""; got != ok {
			t.Errorf("prefix %q: ok %v, want %v", p, got, ok)
		}
	}
}
