package readcache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/zcgw/zcgw/coordinator/store"
)

func openDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "c.db"), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestPutAfterInvalidateIsDropped: a value read before an Invalidate is
// not stored after it; one read after it is; databases are apart.
func TestPutAfterInvalidateIsDropped(t *testing.T) {
	a, b := openDB(t), openDB(t)
	c := New[string, int]()
	gen := c.Gen(a)
	c.Invalidate(a) // a writer committed between the read's start and its Put
	c.Put(a, "k", 1, gen)
	if _, ok := c.Get(a, "k"); ok {
		t.Fatal("a value read before the invalidation was kept")
	}
	c.Put(a, "k", 2, c.Gen(a))
	c.Put(b, "k", 3, c.Gen(b))
	if v, ok := c.Get(a, "k"); !ok || v != 2 {
		t.Fatalf("a: %d %v", v, ok)
	}
	c.Invalidate(a)
	if _, ok := c.Get(a, "k"); ok {
		t.Fatal("Invalidate kept a value")
	}
	if v, ok := c.Get(b, "k"); !ok || v != 3 {
		t.Fatalf("invalidating a dropped b's value: %d %v", v, ok)
	}
}

func ExampleCache() {
	dir, _ := os.MkdirTemp("", "readcache")
	defer os.RemoveAll(dir)
	db, _ := store.Open(context.Background(), filepath.Join(dir, "c.db"), "")
	defer db.Close()
	c := New[string, string]()
	if _, ok := c.Get(db, "skew"); !ok {
		gen := c.Gen(db)
		v := "300s" // read from the database
		c.Put(db, "skew", v, gen)
	}
	v, _ := c.Get(db, "skew")
	fmt.Println(v)
	c.Invalidate(db) // after a write to the table
	_, ok := c.Get(db, "skew")
	fmt.Println(ok)
	// Output:
	// 300s
	// false
}
