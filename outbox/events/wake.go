package events

import (
	"sync"

	"github.com/zcgw/zcgw/coordinator/finality"
)

// Wake tells a publisher that outbox rows were committed, so it reads the
// outbox when there is something to read instead of polling it. Install
// notifies the Wake of its Log after every commit that inserted a row
// (store.Tx.AfterCommit: never before the rows are visible).
//
// A waiter takes Wait's channel before it looks at the outbox; the channel
// closes at the next Notify, so a commit between the look and the wait is
// never missed. Every waiter is woken (a broadcast).
type Wake struct {
	mu sync.Mutex
	ch chan struct{}
}

// Notify wakes every waiter.
func (w *Wake) Notify() {
	w.mu.Lock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
	w.mu.Unlock()
}

// Wait returns a channel closed by the next Notify.
func (w *Wake) Wait() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.ch
}

var wakes sync.Map // *finality.Log -> *Wake

// WakeOf returns the Wake that Install notifies for l's appends.
func WakeOf(l *finality.Log) *Wake {
	w, _ := wakes.LoadOrStore(l, &Wake{})
	return w.(*Wake)
}
