package params

import (
	"fmt"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
)

func TestParseSchedule(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    string // FormatSchedule of the value
		element int    // the refused element (0: accepted)
	}{
		{"09:00,12:00,15:00", "09:00,12:00,15:00", 0},
		{" 00:00 , 23:30 ", "00:00,23:30", 0},
		{"none", "none", 0},
		{"1", "00:00", 0}, // the stored integer (an --old read back)
		{"09:00,12:15", "", 2},
		{"09:00,9:30", "", 2},
		{"24:00", "", 1},
		{"12:00,09:00", "", 2},
		{"12:00,12:00", "", 2},
		{"09:00,,15:00", "", 2},
		{"noon", "", 1},
	} {
		v, err := ParseSchedule(c.in)
		if c.element == 0 {
			if err != nil || FormatSchedule(v) != c.want {
				t.Errorf("%q: %q %v, want %q", c.in, FormatSchedule(v), err, c.want)
			}
			continue
		}
		de, ok := domainerr.As(err)
		if !ok || de.Code != "INVALID_REQUEST" || de.Details["element"] != c.element || de.Details["parameter"] != string(RtpAttemptSchedule) {
			t.Errorf("%q: %v, want INVALID_REQUEST naming element %d", c.in, err, c.element)
		}
	}
	for _, in := range []string{"-1", fmt.Sprint(allSlots + 1)} {
		if _, err := ParseSchedule(in); domainerr.Code(err) != "INVALID_REQUEST" {
			t.Errorf("%q: %v", in, err)
		}
	}
	d, _ := Lookup(RtpAttemptSchedule)
	if err := d.Check(allSlots + 1); domainerr.Code(err) != "INVALID_REQUEST" {
		t.Errorf("Check beyond 23:30: %v", err)
	}
}

func TestNextSlot(t *testing.T) {
	sched, err := ParseSchedule("09:00,12:00,15:00")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04:05", s, clock.JST)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, c := range []struct{ now, want string }{
		{"2026-12-02 10:30:00", "2026-12-02 12:00:00"},
		{"2026-12-02 08:59:59", "2026-12-02 09:00:00"},
		{"2026-12-02 12:00:00", "2026-12-02 15:00:00"}, // strictly after now
		{"2026-12-02 15:00:00", ""},                    // none left today
		{"2026-12-02 23:59:59", ""},
	} {
		got, ok := NextSlot(sched, at(c.now).UTC())
		if c.want == "" {
			if ok {
				t.Errorf("%s: %s, want none", c.now, got)
			}
			continue
		}
		if !ok || !got.Equal(at(c.want)) {
			t.Errorf("%s: %s %v, want %s", c.now, got, ok, c.want)
		}
	}
	if _, ok := NextSlot(0, at("2026-12-02 00:00:00")); ok {
		t.Error("an empty schedule has a slot")
	}
}
