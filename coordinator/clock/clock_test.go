package clock

import (
	"context"
	"testing"
	"time"
)

func TestBusinessDateIsJST(t *testing.T) {
	cases := []struct {
		utc  string
		want string
		mins int
	}{
		{"2026-12-01T14:59:59Z", "2026-12-01", 23*60 + 59},
		{"2026-12-01T15:00:00Z", "2026-12-02", 0},
		{"2026-12-31T15:00:00Z", "2027-01-01", 0},
	}
	for _, c := range cases {
		ts, err := time.Parse(time.RFC3339, c.utc)
		if err != nil {
			t.Fatal(err)
		}
		if got := BusinessDate(ts); got != c.want {
			t.Errorf("BusinessDate(%s) = %s, want %s", c.utc, got, c.want)
		}
		if got := MinutesOfDay(ts); got != c.mins {
			t.Errorf("MinutesOfDay(%s) = %d, want %d", c.utc, got, c.mins)
		}
	}
}

func TestStampRoundTripIsUTC(t *testing.T) {
	in := time.Date(2026, 12, 2, 9, 30, 0, 123, JST)
	s := Stamp(in)
	if s != "2026-12-02T00:30:00.000000123Z" {
		t.Fatalf("Stamp = %s", s)
	}
	out, err := ParseStamp(s)
	if err != nil || !out.Equal(in) {
		t.Fatalf("ParseStamp = %v, %v", out, err)
	}
}

func TestStampsSortAsStrings(t *testing.T) {
	base := time.Date(2026, 12, 2, 0, 0, 5, 0, time.UTC)
	times := []time.Time{base, base.Add(300 * time.Millisecond), base.Add(time.Second), base.Add(time.Nanosecond)}
	for i := range times {
		for j := range times {
			a, b := Stamp(times[i]), Stamp(times[j])
			if (a < b) != times[i].Before(times[j]) {
				t.Errorf("Stamp(%v)=%s vs Stamp(%v)=%s: string order disagrees with time order", times[i], a, times[j], b)
			}
		}
	}
	if got := Stamp(base); got != "2026-12-02T00:00:05.000000000Z" {
		t.Fatalf("Stamp = %s, want fixed nine-digit fraction", got)
	}
}

func TestManualAdvance(t *testing.T) {
	m := NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m.Advance(90 * time.Second)
	if got := m.Now(); !got.Equal(time.Date(2026, 1, 1, 0, 1, 30, 0, time.UTC)) {
		t.Fatalf("Now = %v", got)
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("Sleep with a live context reported an early end")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep on a cancelled context waited the full hour")
	}
}
