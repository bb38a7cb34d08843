package consume

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/segmentio/kafka-go"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/outbox/events"
)

// Event is one decoded event record.
type Event struct {
	events.Message
	Topic     string
	Partition int
	Offset    int64
}

// DecodeError says why a record is not a valid event and where: Field
// names the header ("header event_seq"), the key ("key") or the JSON field
// of the value ("value.event_seq"); Offset is the byte offset in the value
// for a JSON error (-1 otherwise).
type DecodeError struct {
	Topic     string
	Partition int
	KafkaOff  int64
	Field     string
	Offset    int64
	Reason    string
	code      string
	err       error // the cause, for a signature
}

func (e *DecodeError) Error() string {
	at := ""
	if e.Offset >= 0 {
		at = fmt.Sprintf(" at byte %d", e.Offset)
	}
	return fmt.Sprintf("consume: record %s/%d@%d: %s%s: %s", e.Topic, e.Partition, e.KafkaOff, e.Field, at, e.Reason)
}

// Unwrap gives the reason code: MISSING_FIELD or INVALID_REQUEST, or for
// a signature the verification's own error.
func (e *DecodeError) Unwrap() error {
	if e.err != nil {
		return e.err
	}
	return domainerr.New(e.code, e.Reason, map[string]any{"field": e.Field, "offset": e.Offset, "topic": e.Topic, "partition": e.Partition, "kafka_offset": e.KafkaOff})
}

// verify checks the signature of a decoded record.
func verify(m kafka.Message, ev Event, keys events.PublicKeys) error {
	if err := events.VerifySignature(ev.Message, keys); err != nil {
		var se *events.SignatureError
		reason := err.Error()
		if errors.As(err, &se) {
			reason = se.Reason
		}
		return &DecodeError{Topic: m.Topic, Partition: m.Partition, KafkaOff: m.Offset, Field: "value.signature", Offset: -1,
			Reason: reason, err: err}
	}
	return nil
}

// maxValue bounds the value Decode accepts (the publisher keeps a whole
// produce request under 1 MiB).
const maxValue = 1 << 20

// Decode checks and decodes one record: the value must be a §12.2 EVENT
// whose event_seq, name, message_id and chain_id agree with the headers
// and whose chain_id is the key. It never panics.
func Decode(m kafka.Message) (Event, error) {
	bad := func(code, field string, off int64, format string, args ...any) (Event, error) {
		return Event{}, &DecodeError{Topic: m.Topic, Partition: m.Partition, KafkaOff: m.Offset, Field: field, Offset: off, Reason: fmt.Sprintf(format, args...), code: code}
	}
	hdr := map[string]string{}
	for _, h := range m.Headers {
		if prev, dup := hdr[h.Key]; dup && prev != string(h.Value) {
			return bad("INVALID_REQUEST", "header "+h.Key, -1, "header given twice with different values")
		}
		hdr[h.Key] = string(h.Value)
	}
	for _, k := range []string{events.HeaderEventSeq, events.HeaderEventType, events.HeaderMessageID, events.HeaderChainID} {
		if hdr[k] == "" {
			return bad("MISSING_FIELD", "header "+k, -1, "required header missing or empty")
		}
	}
	seq, err := parseSeq(hdr[events.HeaderEventSeq])
	if err != nil {
		return bad("INVALID_REQUEST", "header "+events.HeaderEventSeq, -1, "%v", err)
	}
	if len(m.Value) == 0 {
		return bad("MISSING_FIELD", "value", -1, "empty value")
	}
	if len(m.Value) > maxValue {
		return bad("INVALID_REQUEST", "value", -1, "value of %d bytes exceeds %d", len(m.Value), maxValue)
	}
	var msg events.Message
	if err := json.Unmarshal(m.Value, &msg); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return bad("INVALID_REQUEST", "value", se.Offset, "not JSON: %v", se)
		case errors.As(err, &te):
			return bad("INVALID_REQUEST", "value."+te.Field, te.Offset, "%s where %s is required", te.Value, te.Type)
		default:
			return bad("INVALID_REQUEST", "value", -1, "%v", err)
		}
	}
	checks := []struct {
		field, got, want string
	}{
		{"value.message_type", msg.MessageType, events.MessageType},
		{"value.name", msg.Name, hdr[events.HeaderEventType]},
		{"value.message_id", msg.MessageID, hdr[events.HeaderMessageID]},
		{"value.chain_id", msg.ChainID, hdr[events.HeaderChainID]},
		{"key", string(m.Key), msg.ChainID},
	}
	for _, c := range checks {
		if c.got == "" {
			return bad("MISSING_FIELD", c.field, -1, "missing or empty")
		}
		if c.got != c.want {
			return bad("INVALID_REQUEST", c.field, -1, "%q does not match %q", c.got, c.want)
		}
	}
	if msg.EventSeq != seq {
		return bad("INVALID_REQUEST", "value.event_seq", -1, "%d does not match header event_seq %d", msg.EventSeq, seq)
	}
	if major, _, _ := strings.Cut(msg.SchemaVersion, "."); major != "1" {
		return bad("INVALID_REQUEST", "value.schema_version", -1, "unsupported schema_version %q (this library reads 1.x)", msg.SchemaVersion)
	}
	if len(msg.Body.Payload) > 0 && !json.Valid(msg.Body.Payload) {
		return bad("INVALID_REQUEST", "value.body.payload", -1, "payload is not JSON")
	}
	return Event{Message: msg, Topic: m.Topic, Partition: m.Partition, Offset: m.Offset}, nil
}

// parseSeq parses a positive decimal event_seq with no sign or spaces.
func parseSeq(s string) (int64, error) {
	if s == "" || len(s) > 19 {
		return 0, fmt.Errorf("event_seq %q is not a positive decimal", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("event_seq %q is not a positive decimal", s)
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("event_seq %q is not a positive decimal", s)
	}
	return n, nil
}
