package readcache

import (
	"sync"

	"github.com/zcgw/zcgw/coordinator/store"
)

// Cache maps keys to values read from one or more databases.
type Cache[K comparable, V any] struct {
	mu  sync.Mutex
	per map[*store.DB]*entries[K, V]
}

type entries[K comparable, V any] struct {
	gen  uint64
	vals map[K]V
}

// New returns an empty cache.
func New[K comparable, V any]() *Cache[K, V] {
	return &Cache[K, V]{per: map[*store.DB]*entries[K, V]{}}
}

func (c *Cache[K, V]) of(db *store.DB) *entries[K, V] {
	e := c.per[db]
	if e == nil {
		e = &entries[K, V]{vals: map[K]V{}}
		c.per[db] = e
	}
	return e
}

// Get returns the cached value of k in db. It always misses on
// PostgreSQL.
func (c *Cache[K, V]) Get(db *store.DB, k K) (V, bool) {
	var zero V
	if db.Postgres() {
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.of(db).vals[k]
	if !ok {
		return zero, false
	}
	return v, true
}

// Gen is db's generation, taken before a read whose result goes to Put.
func (c *Cache[K, V]) Gen(db *store.DB) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.of(db).gen
}

// Put stores v as the value of k in db when no Invalidate of db ran since
// gen was taken (a value read from an older snapshot is not kept).
func (c *Cache[K, V]) Put(db *store.DB, k K, v V, gen uint64) {
	if db.Postgres() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.of(db)
	if e.gen == gen {
		e.vals[k] = v
	}
}

// Invalidate drops everything cached for db; a writer of the cached table
// calls it after its transaction ended (committed or not).
func (c *Cache[K, V]) Invalidate(db *store.DB) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.of(db)
	e.gen++
	clear(e.vals)
}
