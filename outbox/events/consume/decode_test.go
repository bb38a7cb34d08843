package consume

import (
	"errors"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

func TestDecodeValid(t *testing.T) {
	ev, err := Decode(record("TX-1", 3))
	if err != nil {
		t.Fatal(err)
	}
	if ev.ChainID != "TX-1" || ev.EventSeq != 3 || ev.Name != "HReserved" || ev.MessageID != "TX-1-3" || ev.Aggregate != "TX:TX-1" ||
		ev.Topic != "zc.events" || ev.Partition != 2 || ev.Offset != 3 || ev.Body.FinalitySeq != 103 || string(ev.Body.Payload) != `{"amount":1200}` {
		t.Fatalf("decoded %+v", ev)
	}
}

func TestDecodeRefuses(t *testing.T) {
	ok := record("TX-1", 3)
	setValue := func(v string) kafka.Message { m := ok; m.Value = []byte(v); return m }
	setKey := func(k string) kafka.Message { m := ok; m.Key = []byte(k); return m }
	replace := func(old, new string) kafka.Message { return setValue(strings.Replace(string(ok.Value), old, new, 1)) }
	dupHeader := ok
	dupHeader.Headers = append(append([]kafka.Header{}, ok.Headers...), kafka.Header{Key: "event_seq", Value: []byte("4")})
	for _, tc := range []struct {
		name   string
		m      kafka.Message
		code   string
		field  string
		offset int64
	}{
		{"no event_seq header", withHeader(ok, "event_seq", "\x00drop"), "MISSING_FIELD", "header event_seq", -1},
		{"no chain_id header", withHeader(ok, "chain_id", "\x00drop"), "MISSING_FIELD", "header chain_id", -1},
		{"signed seq", withHeader(ok, "event_seq", "+3"), "INVALID_REQUEST", "header event_seq", -1},
		{"zero seq", withHeader(ok, "event_seq", "0"), "INVALID_REQUEST", "header event_seq", -1},
		{"huge seq", withHeader(ok, "event_seq", "99999999999999999999"), "INVALID_REQUEST", "header event_seq", -1},
		{"header seq differs", withHeader(ok, "event_seq", "4"), "INVALID_REQUEST", "value.event_seq", -1},
		{"conflicting duplicate header", dupHeader, "INVALID_REQUEST", "header event_seq", -1},
		{"event_type differs", withHeader(ok, "event_type", "Settled"), "INVALID_REQUEST", "value.name", -1},
		{"message_id differs", withHeader(ok, "message_id", "other"), "INVALID_REQUEST", "value.message_id", -1},
		{"key differs", setKey("TX-2"), "INVALID_REQUEST", "key", -1},
		{"no key", setKey(""), "MISSING_FIELD", "key", -1},
		{"empty value", setValue(""), "MISSING_FIELD", "value", -1},
		{"truncated JSON", setValue(string(ok.Value[:40])), "INVALID_REQUEST", "value", 40},
		{"not JSON", setValue(`{"schema_version": x}`), "INVALID_REQUEST", "value", 20},
		{"seq is a string", replace(`"event_seq":3`, `"event_seq":"3"`), "INVALID_REQUEST", "value.event_seq", -2},
		{"a COMMAND", replace(`"message_type":"EVENT"`, `"message_type":"COMMAND"`), "INVALID_REQUEST", "value.message_type", -1},
		{"schema 2.0", replace(`"schema_version":"1.0"`, `"schema_version":"2.0"`), "INVALID_REQUEST", "value.schema_version", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.m)
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err %v, want *DecodeError", err)
			}
			if got := domainerr.Code(err); got != tc.code || de.Field != tc.field {
				t.Errorf("code %s field %q, want %s %q (%v)", got, de.Field, tc.code, tc.field, err)
			}
			if tc.offset != -2 && de.Offset != tc.offset {
				t.Errorf("offset %d, want %d (%v)", de.Offset, tc.offset, err)
			}
			if de.Offset >= 0 && !strings.Contains(err.Error(), "at byte") {
				t.Errorf("message does not say where: %v", err)
			}
		})
	}
}
