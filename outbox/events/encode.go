package events

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// messageString is m's JSON as encode writes it (encoding/json, no HTML
// escaping, body.payload compacted), written field by field without
// reflection into a string (an outbox row keeps its message as one: no
// copy of the bytes), and true; when a string of m would need escaping
// (a quote, a backslash, a control or non-ASCII character) or the
// payload is empty, it reports false and encodeString takes
// encoding/json. TestMessageStringIsEncodingJSON holds the two equal.
func messageString(m *Message) (string, bool) {
	if len(m.Body.Payload) == 0 {
		return "", false
	}
	w := jsonWriter{ok: true}
	w.b.Grow(2048 + len(m.Body.Payload))
	w.fields(m)
	return w.b.String(), w.ok
}

// jsonWriter writes JSON members into b; ok turns false at the first
// string that is not plain.
type jsonWriter struct {
	b       strings.Builder
	payload bytes.Buffer
	ok      bool
}

func (w *jsonWriter) str(key, v string) {
	w.b.WriteString(key)
	if !plain(v) {
		w.ok = false
		return
	}
	w.b.WriteByte('"')
	w.b.WriteString(v)
	w.b.WriteByte('"')
}

func (w *jsonWriter) raw(s string) { w.b.WriteString(s) }

func (w *jsonWriter) int(key string, n int64) {
	w.b.WriteString(key)
	var d [20]byte
	w.b.Write(strconv.AppendInt(d[:0], n, 10))
}

func (w *jsonWriter) fields(m *Message) {
	str := w.str
	str(`{"schema_version":`, m.SchemaVersion)
	str(`,"message_type":`, m.MessageType)
	str(`,"name":`, m.Name)
	str(`,"message_id":`, m.MessageID)
	str(`,"occurred_at":`, m.OccurredAt)
	str(`,"idempotency_key":`, m.IdempotencyKey)
	w.int(`,"event_seq":`, m.EventSeq)
	str(`,"correlation_id":`, m.CorrelationID)
	if m.CausationID != "" {
		str(`,"causation_id":`, m.CausationID)
	}
	str(`,"producer":{"org_id":`, m.Producer.OrgID)
	str(`,"system_id":`, m.Producer.SystemID)
	str(`},"chain_id":`, m.ChainID)
	str(`,"aggregate":`, m.Aggregate)
	w.raw(`,"body":{`)
	sep := ""
	for _, f := range []struct{ key, v string }{{`"txid":`, m.Body.TxID}, {`"gtid":`, m.Body.GTID}, {`"state_from":`, m.Body.StateFrom}} {
		if f.v != "" {
			str(sep+f.key, f.v)
			sep = ","
		}
	}
	str(sep+`"state_to":`, m.Body.StateTo)
	w.raw(`,"payload":`)
	if err := json.Compact(&w.payload, m.Body.Payload); err != nil {
		w.ok = false
		return
	}
	w.b.Write(w.payload.Bytes())
	w.int(`,"finality_event_seq":`, m.Body.FinalitySeq)
	str(`,"log_id":`, m.Body.LogID)
	str(`,"prev_hash":`, m.Body.PrevHash)
	str(`,"entry_hash":`, m.Body.EntryHash)
	w.b.WriteByte('}')
	if s := m.Signature; s != nil {
		str(`,"signature":{"alg":`, s.Alg)
		str(`,"key_id":`, s.KeyID)
		str(`,"canonicalization":`, s.Canonicalization)
		if s.SignedFields == nil {
			w.raw(`,"signed_fields":null`)
		} else {
			w.raw(`,"signed_fields":[`)
			for i, f := range s.SignedFields {
				pre := ""
				if i > 0 {
					pre = ","
				}
				str(pre, f)
			}
			w.b.WriteByte(']')
		}
		str(`,"value":`, s.Value)
		w.b.WriteByte('}')
	}
	w.b.WriteByte('}')
}

// plain reports whether encoding/json writes s as it is between quotes
// (HTML escaping off): printable ASCII without '"' and '\'.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
