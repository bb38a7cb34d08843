package orchestrator

import (
	"runtime"
	"sync"
	"weak"

	"github.com/zcgw/zcgw/coordinator/store"
)

// waker is the in-process signal that work items became due: every
// enqueue pokes the waker of its database, and every Run loop on that
// database (there may be several Orchestrators on one *store.DB) wakes
// up and claims. A poke closes the current generation channel, so all
// waiters see it and a poke is never lost between a waiter's claim and
// its sleep (the waiter takes the channel before it claims).
//
// A poke is sent from inside the write transaction that enqueues, before
// its commit. That is safe because every store.DB.Write runs on the
// database's one writer in arrival order: the claim a poked loop starts
// afterwards is queued behind the enqueuing transaction and sees its
// commit (or its rollback, and then claims nothing).
type waker struct {
	mu  sync.Mutex
	gen chan struct{}
}

func newWaker() *waker { return &waker{gen: make(chan struct{})} }

// wait returns the channel the next poke closes.
func (w *waker) wait() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gen
}

// poke wakes every waiter.
func (w *waker) poke() {
	w.mu.Lock()
	close(w.gen)
	w.gen = make(chan struct{})
	w.mu.Unlock()
}

// wakers holds one waker per open database. The key is a weak pointer, so
// the registry does not keep a closed database alive; the entry is removed
// once the database is collected.
var wakers sync.Map // weak.Pointer[store.DB] -> *waker

func wakerFor(db *store.DB) *waker {
	k := weak.Make(db)
	if w, ok := wakers.Load(k); ok {
		return w.(*waker)
	}
	w, loaded := wakers.LoadOrStore(k, newWaker())
	if !loaded {
		runtime.AddCleanup(db, func(k weak.Pointer[store.DB]) { wakers.Delete(k) }, k)
	}
	return w.(*waker)
}
