package consume

import (
	"testing"

	"github.com/segmentio/kafka-go"
)

// FuzzDecode feeds arbitrary values, event_seq headers and keys to Decode:
// it never panics, and what it accepts is self-consistent.
func FuzzDecode(f *testing.F) {
	ok := record("TX-1", 3)
	f.Add(ok.Value, "3", "TX-1")
	f.Add(ok.Value, "4", "TX-1")
	f.Add(ok.Value[:57], "3", "TX-1")
	f.Add([]byte(`{}`), "1", "")
	f.Add([]byte(`{"event_seq":1e400}`), "1", "X")
	f.Add([]byte(`[`), "-1", "GLOBAL")
	f.Fuzz(func(t *testing.T, value []byte, seq, key string) {
		m := withHeader(ok, "event_seq", seq)
		m.Value, m.Key = value, []byte(key)
		ev, err := Decode(m)
		if err != nil {
			return
		}
		if ev.EventSeq <= 0 || ev.ChainID != key || ev.MessageType != "EVENT" || ev.Name == "" {
			t.Fatalf("accepted an inconsistent record: %+v", ev)
		}
		_ = kafka.Message{}
	})
}
