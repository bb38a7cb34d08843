package events

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// appendMessage appends m's JSON as encode writes it (encoding/json, no
// HTML escaping, body.payload compacted), written field by field without
// reflection, and reports true; when a string of m would need escaping
// (a quote, a backslash, a control or non-ASCII character) or the payload
// is empty, it reports false and encode takes encoding/json.
// TestAppendMessageIsEncodingJSON holds the two equal.
func appendMessage(b []byte, m *Message) ([]byte, bool) {
	if len(m.Body.Payload) == 0 {
		return b, false
	}
	w := jsonWriter{b: b, ok: true}
	w.fields(m)
	return w.b, w.ok
}

// jsonWriter appends JSON members to b; ok turns false at the first
// string that is not plain.
type jsonWriter struct {
	b  []byte
	ok bool
}

func (w *jsonWriter) str(key, v string) {
	w.b = append(w.b, key...)
	if !plain(v) {
		w.ok = false
		return
	}
	w.b = append(w.b, '"')
	w.b = append(w.b, v...)
	w.b = append(w.b, '"')
}

func (w *jsonWriter) fields(m *Message) {
	str := w.str
	str(`{"schema_version":`, m.SchemaVersion)
	str(`,"message_type":`, m.MessageType)
	str(`,"name":`, m.Name)
	str(`,"message_id":`, m.MessageID)
	str(`,"occurred_at":`, m.OccurredAt)
	str(`,"idempotency_key":`, m.IdempotencyKey)
	w.b = strconv.AppendInt(append(w.b, `,"event_seq":`...), m.EventSeq, 10)
	str(`,"correlation_id":`, m.CorrelationID)
	if m.CausationID != "" {
		str(`,"causation_id":`, m.CausationID)
	}
	str(`,"producer":{"org_id":`, m.Producer.OrgID)
	str(`,"system_id":`, m.Producer.SystemID)
	str(`},"chain_id":`, m.ChainID)
	str(`,"aggregate":`, m.Aggregate)
	w.b = append(w.b, `,"body":{`...)
	sep := ""
	for _, f := range []struct{ key, v string }{{`"txid":`, m.Body.TxID}, {`"gtid":`, m.Body.GTID}, {`"state_from":`, m.Body.StateFrom}} {
		if f.v != "" {
			str(sep+f.key, f.v)
			sep = ","
		}
	}
	str(sep+`"state_to":`, m.Body.StateTo)
	buf := bytes.NewBuffer(append(w.b, `,"payload":`...))
	if err := json.Compact(buf, m.Body.Payload); err != nil {
		w.ok = false
		return
	}
	w.b = buf.Bytes()
	w.b = strconv.AppendInt(append(w.b, `,"finality_event_seq":`...), m.Body.FinalitySeq, 10)
	str(`,"log_id":`, m.Body.LogID)
	str(`,"prev_hash":`, m.Body.PrevHash)
	str(`,"entry_hash":`, m.Body.EntryHash)
	w.b = append(w.b, '}')
	if s := m.Signature; s != nil {
		str(`,"signature":{"alg":`, s.Alg)
		str(`,"key_id":`, s.KeyID)
		str(`,"canonicalization":`, s.Canonicalization)
		if s.SignedFields == nil {
			w.b = append(w.b, `,"signed_fields":null`...)
		} else {
			w.b = append(w.b, `,"signed_fields":[`...)
			for i, f := range s.SignedFields {
				pre := ""
				if i > 0 {
					pre = ","
				}
				str(pre, f)
			}
			w.b = append(w.b, ']')
		}
		str(`,"value":`, s.Value)
		w.b = append(w.b, '}')
	}
	w.b = append(w.b, '}')
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
