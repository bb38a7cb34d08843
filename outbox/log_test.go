package outbox

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
)

// Every step of a posting is one JSON log line with a scope.verb event.
func TestDrainLogsOneJSONEventPerStep(t *testing.T) {
	r := newRig(t, map[string]int64{"A": 10})
	var buf bytes.Buffer
	r.ob.log = slog.New(slog.NewJSONHandler(&buf, nil))
	r.enqueue(t, post("C1", "A", Credit, 5), post("D1", "A", Debit, 500))
	if _, err := r.ob.Drain(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("not one JSON object per line: %q", line)
		}
		events = append(events, m["msg"].(string)+":"+m["ref"].(string))
	}
	want := []string{"outbox.enqueue:C1", "outbox.enqueue:D1", "outbox.claim:C1", "outbox.apply:C1",
		"outbox.claim:D1", "outbox.blocked:D1", "outbox.case_opened:D1"}
	if len(events) != len(want) {
		t.Fatalf("events %v, want %v", events, want)
	}
	for i := range want {
		if events[i] != want[i] {
			t.Fatalf("events %v, want %v", events, want)
		}
	}
}
