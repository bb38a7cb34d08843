package coresim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
)

// Window is a span of the JST day, in minutes since midnight, in which the
// core is online. From > To wraps past midnight; From == To is empty.
type Window struct{ From, To int }

// Contains reports whether minute-of-day m lies in the window [From, To).
func (w Window) Contains(m int) bool {
	if w.From <= w.To {
		return m >= w.From && m < w.To
	}
	return m >= w.From || m < w.To
}

func (w Window) String() string {
	return fmt.Sprintf("%02d:%02d-%02d:%02d", w.From/60, w.From%60, w.To/60, w.To%60)
}

// ParseWindows parses "HH:MM-HH:MM[,HH:MM-HH:MM...]" (JST).
func ParseWindows(s string) ([]Window, error) {
	var out []Window
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for i, part := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(part), "-")
		if !ok {
			return nil, fmt.Errorf("coresim: window %d %q: want HH:MM-HH:MM", i+1, part)
		}
		from, err := parseHM(a)
		if err != nil {
			return nil, fmt.Errorf("coresim: window %d %q: %w", i+1, part, err)
		}
		to, err := parseHM(b)
		if err != nil {
			return nil, fmt.Errorf("coresim: window %d %q: %w", i+1, part, err)
		}
		out = append(out, Window{From: from, To: to})
	}
	return out, nil
}

func parseHM(s string) (int, error) {
	h, m, ok := strings.Cut(s, ":")
	if !ok || len(h) != 2 || len(m) != 2 {
		return 0, fmt.Errorf("time %q: want HH:MM", s)
	}
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil || hh < 0 || hh > 24 || mm < 0 || mm > 59 || (hh == 24 && mm != 0) {
		return 0, fmt.Errorf("time %q out of range", s)
	}
	return hh*60 + mm, nil
}

// Online reports whether the core serves its queue at t: not taken
// offline by SetOffline, and inside one of its windows (or it has none).
func (c *Core) Online(t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forcedOff {
		return false
	}
	if len(c.windows) == 0 {
		return true
	}
	m := clock.MinutesOfDay(t)
	for _, w := range c.windows {
		if w.Contains(m) {
			return true
		}
	}
	return false
}

// SetWindows replaces the online windows (empty: always online).
func (c *Core) SetWindows(ws []Window) {
	c.mu.Lock()
	c.windows = append([]Window(nil), ws...)
	c.mu.Unlock()
}

// SetOffline takes the core offline (true) regardless of its windows, as
// an operator does for an unplanned batch run, or back (false). Taking it
// offline returns once the serving loop has finished the request it was
// taking or processing, so nothing put afterwards is taken.
func (c *Core) SetOffline(off bool) {
	c.mu.Lock()
	c.forcedOff = off
	if off && c.stopWait != nil {
		c.stopWait() // an idle wait for requests ends now
	}
	if !off {
		close(c.onlineCh) // an offline wait ends now
		c.onlineCh = make(chan struct{})
	}
	c.mu.Unlock()
	if off {
		c.serving.Lock()
		c.serving.Unlock() //nolint:staticcheck // a barrier: wait for the loop's current turn
	}
	c.log.Info("coresim.online", "bank", c.bank, "offline", off)
}
