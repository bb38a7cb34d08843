package params

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// A schedule parameter (KindSchedule, PR-RTP-ATTEMPT-SCHEDULE) is a set of
// JST wall-clock times on the hour or the half hour, stored like every
// parameter as one integer: bit i is the time i*30 minutes after JST
// midnight (00:00 is bit 0, 23:30 bit 47). 0 is no time at all ("none").
const (
	slotMinutes = 30
	slotsPerDay = 24 * 60 / slotMinutes
	allSlots    = int64(1)<<slotsPerDay - 1
)

// FormatSchedule writes a schedule as an operator types it:
// "09:00,12:00,15:00", or "none".
func FormatSchedule(v int64) string {
	if v == 0 {
		return "none"
	}
	var parts []string
	for i := 0; i < slotsPerDay; i++ {
		if v&(1<<i) != 0 {
			m := i * slotMinutes
			parts = append(parts, fmt.Sprintf("%02d:%02d", m/60, m%60))
		}
	}
	if v&^allSlots != 0 {
		parts = append(parts, "(bits beyond 23:30)") // only in a refusal: Check bounds it
	}
	return strings.Join(parts, ",")
}

// ParseSchedule reads JST times separated by commas, each HH:MM on the
// hour or the half hour, in ascending order without repeats ("none": no
// time). A bad element is INVALID_REQUEST naming the element (1-based),
// its text and why.
func ParseSchedule(s string) (int64, error) { return parseSchedule(RtpAttemptSchedule, s) }

func parseSchedule(name Name, s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "none" {
		return 0, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil { // the stored integer (an --old read back)
		if n < 0 || n > allSlots {
			return 0, domainerr.New("INVALID_REQUEST", fmt.Sprintf("%s: %q is not a stored schedule (0 .. %d); write JST times such as \"09:00,12:00,15:00\"", name, s, allSlots),
				map[string]any{"field": "value", "parameter": string(name), "value": s})
		}
		return n, nil
	}
	var v int64
	last := -1
	for i, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		bad := func(why string) error {
			return domainerr.New("INVALID_REQUEST", fmt.Sprintf("%s: element %d %q: %s", name, i+1, e, why),
				map[string]any{"field": "value", "parameter": string(name), "value": s, "element": i + 1, "element_value": e, "why": why})
		}
		if e == "" {
			return 0, bad(`empty: want HH:MM times separated by commas, e.g. "09:00,12:00,15:00" (or "none")`)
		}
		t, err := time.Parse("15:04", e)
		if err != nil || len(e) != 5 {
			return 0, bad("not a time HH:MM (00:00 to 23:30)")
		}
		m := t.Hour()*60 + t.Minute()
		if m%slotMinutes != 0 {
			return 0, bad("minutes must be 00 or 30")
		}
		slot := m / slotMinutes
		if slot <= last {
			return 0, bad("not after the time before it (list the times once, in ascending order)")
		}
		last = slot
		v |= 1 << slot
	}
	return v, nil
}

// NextSlot is the first time of schedule v strictly after now on now's JST
// date (false: none remains that day).
func NextSlot(v int64, now time.Time) (time.Time, bool) {
	j := now.In(clock.JST)
	midnight := time.Date(j.Year(), j.Month(), j.Day(), 0, 0, 0, 0, clock.JST)
	for i := 0; i < slotsPerDay; i++ {
		if v&(1<<i) == 0 {
			continue
		}
		if t := midnight.Add(time.Duration(i*slotMinutes) * time.Minute); t.After(now) {
			return t, true
		}
	}
	return time.Time{}, false
}
