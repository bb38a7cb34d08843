package store_test

import (
	"context"
	"testing"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

// A component's database does not exist until opened, exists after, and
// is gone after Drop, whose second call is no error; each component has
// a database of its own.
func TestLocatorExistsAndDrop(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		l := storetest.Locator(t, b, t.TempDir())
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
