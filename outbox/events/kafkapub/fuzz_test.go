package kafkapub

import (
	"testing"

	"github.com/zcgw/zcgw/outbox/events"
)

// FuzzKafkaHeaders: the publisher's headers decoder never panics, and
// agrees with events.DecodeHeaders (keys, values, order) whenever both
// accept the column; a column events.EncodeHeaders wrote always decodes.
func FuzzKafkaHeaders(f *testing.F) {
	f.Add(events.EncodeHeaders([]events.Header{{Key: "event_seq", Value: "3"}, {Key: "chain_id", Value: "TX 1&2=3%"}, {Key: "causation_id", Value: ""}}))
	f.Add("a=b&c=d")
	f.Add("a=%zz")
	f.Add("&")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := kafkaHeaders(s)
		want, werr := events.DecodeHeaders(s)
		if err != nil || werr != nil {
			if werr == nil {
				t.Fatalf("%q: kafkaHeaders refused what DecodeHeaders reads: %v", s, err)
			}
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d headers, DecodeHeaders %d", s, len(got), len(want))
		}
		for i := range got {
			if got[i].Key != want[i].Key || string(got[i].Value) != want[i].Value {
				t.Fatalf("%q: header %d = %q=%q, DecodeHeaders %q=%q", s, i, got[i].Key, got[i].Value, want[i].Key, want[i].Value)
			}
		}
		enc := events.EncodeHeaders(want)
		if again, err := kafkaHeaders(enc); err != nil || len(again) != len(want) {
			t.Fatalf("re-encoded %q: %v", enc, err)
		}
	})
}
