package embedded

import "sync"

// hub wakes waiting getters in this process when a commit or rollback on
// the same queue file makes messages available. Other processes are
// noticed by polling.
type hub struct {
	mu     sync.Mutex
	refs   int
	queues map[string]chan struct{}
}

var (
	hubsMu sync.Mutex
	hubs   = map[string]*hub{}
)

func acquireHub(path string) *hub {
	hubsMu.Lock()
	defer hubsMu.Unlock()
	h := hubs[path]
	if h == nil {
		h = &hub{queues: map[string]chan struct{}{}}
		hubs[path] = h
	}
	h.refs++
	return h
}

func releaseHub(path string, h *hub) {
	hubsMu.Lock()
	defer hubsMu.Unlock()
	h.refs--
	if h.refs == 0 && hubs[path] == h {
		delete(hubs, path)
	}
}

// wait returns a channel closed at the next notify of queue. Take it
// before looking for a message, so a commit in between is not missed.
func (h *hub) wait(queue string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.queues[queue]
	if ch == nil {
		ch = make(chan struct{})
		h.queues[queue] = ch
	}
	return ch
}

func (h *hub) notify(queue string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch := h.queues[queue]; ch != nil {
		close(ch)
		delete(h.queues, queue)
	}
}

func (h *hub) notifyAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for q, ch := range h.queues {
		close(ch)
		delete(h.queues, q)
	}
}
