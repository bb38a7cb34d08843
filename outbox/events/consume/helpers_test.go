package consume

import (
	"encoding/json"
	"fmt"

	"github.com/segmentio/kafka-go"

	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/outbox/events"
)

// record builds the record kafkapub would publish for event seq of chain
// TX-<chain> (message id "<chain>-<seq>").
func record(chain string, seq int64) kafka.Message {
	e := finality.Entry{LogID: fmt.Sprintf("%s-%d", chain, seq), TxID: chain, EventType: finality.HReserved, StateTo: "RESERVED",
		PayloadJSON: `{"amount":1200}`, EventSeq: 100 + seq, OccurredAt: "2026-04-01T01:00:00Z", PrevHash: "GENESIS", EntryHash: "ab"}
	m := events.NewMessage(e, seq, "", events.DefaultProducer)
	b, _ := json.Marshal(m)
	km := kafka.Message{Topic: "zc.events", Partition: 2, Offset: seq, Key: []byte(chain), Value: b}
	for _, h := range m.Headers() {
		km.Headers = append(km.Headers, kafka.Header{Key: h.Key, Value: []byte(h.Value)})
	}
	return km
}

func withHeader(m kafka.Message, key, value string) kafka.Message {
	out := m
	out.Headers = nil
	found := false
	for _, h := range m.Headers {
		if h.Key == key {
			found = true
			if value == "\x00drop" {
				continue
			}
			h = kafka.Header{Key: key, Value: []byte(value)}
		}
		out.Headers = append(out.Headers, h)
	}
	if !found && value != "\x00drop" {
		out.Headers = append(out.Headers, kafka.Header{Key: key, Value: []byte(value)})
	}
	return out
}

func event(chain string, seq int64) Event {
	ev, err := Decode(record(chain, seq))
	if err != nil {
		panic(err)
	}
	return ev
}
