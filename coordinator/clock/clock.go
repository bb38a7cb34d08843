// Package clock is the one way zcgw reads the time. Every component takes a
// Clock, so tests can fix or advance time, and every business-date decision
// is made in JST (Asia/Tokyo) through the helpers here.
//
// It must not import any other zcgw package.
package clock

import (
	"context"
	"sync"
	"time"
)

// JST is the business time zone of the coordinator (Asia/Tokyo, UTC+09:00).
// Japan has no daylight saving time, so a fixed zone is exact and needs no
// tzdata on the host.
var JST = time.FixedZone("JST", 9*60*60)

// Clock reads the current instant.
type Clock interface {
	Now() time.Time
}

// System is the wall clock.
type System struct{}

// Now returns the current time.
func (System) Now() time.Time { return time.Now() }

// Manual is a clock for tests and simulations: it returns a set instant and
// moves only when told to. It is safe for concurrent use.
type Manual struct {
	mu  sync.Mutex
	now time.Time
}

// NewManual returns a Manual clock set to t.
func NewManual(t time.Time) *Manual { return &Manual{now: t} }

// Now returns the clock's instant.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Set moves the clock to t.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	m.now = t
	m.mu.Unlock()
}

// Advance moves the clock forward by d and returns the new instant.
func (m *Manual) Advance(d time.Duration) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
	return m.now
}

// StampLayout is how zcgw stores every instant: RFC3339 in UTC with a
// fixed nine-digit fraction. The fixed width matters: RFC3339Nano trims
// trailing zeros, so "…:05Z" would sort after "…:05.3Z" and SQL comparisons
// of stored instants would be wrong within a second.
const StampLayout = "2006-01-02T15:04:05.000000000Z07:00"

// Stamp formats an instant for storage (StampLayout); stored values sort
// as strings in time order.
func Stamp(t time.Time) string { return t.UTC().Format(StampLayout) }

// ParseStamp parses a stored instant (any RFC3339 form is accepted).
func ParseStamp(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

// BusinessDate returns the JST business date of t as YYYY-MM-DD.
func BusinessDate(t time.Time) string { return t.In(JST).Format(time.DateOnly) }

// MinutesOfDay returns the JST minutes since midnight of t (0..1439), used
// for operating windows.
func MinutesOfDay(t time.Time) int {
	j := t.In(JST)
	return j.Hour()*60 + j.Minute()
}

// ParseBusinessDate parses YYYY-MM-DD as midnight JST of that date.
func ParseBusinessDate(s string) (time.Time, error) {
	return time.ParseInLocation(time.DateOnly, s, JST)
}

// Sleep waits for d of real time or until ctx is done, and reports whether
// the full d passed. Loops use it for their idle and back-off pauses.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
