package events

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/zcgw/zcgw/coordinator/finality"
)

// encodingJSON is encode's reference: encoding/json without HTML escaping.
func encodingJSON(t *testing.T, m Message) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// TestMessageStringIsEncodingJSON: encodeString writes the bytes encoding/json
// writes for signed and unsigned messages, with and without causation,
// txid, gtid and state_from, a payload with spaces, HTML characters and
// non-ASCII text, and strings that need escaping (which take
// encoding/json itself).
func TestMessageStringIsEncodingJSON(t *testing.T) {
	base := NewMessage(finality.Entry{LogID: "01a23c8e-4ab0-72b4-82b5-e73b56815af3", TxID: "TX-1", EventType: finality.PaymentInitiated,
		StateTo: "RECEIVED", PayloadJSON: `{"request":{"client_ref":"<a&b>","name":"ﾔﾏﾀﾞ"},"n":[1, 2 ,3]}`, EventSeq: 42,
		OccurredAt: "2026-12-03T15:38:07.975445774Z", PrevHash: finality.Genesis,
		EntryHash: "73fe46d933a043b196f89ae2ebdd40e7042ef6b46d42ea9ced9adeaec370b058"}, 1, "", DefaultProducer)
	signed := func(m Message) Message {
		m.Signature = &Signature{Alg: SignatureAlg, KeyID: "KEY-ZC-<&>", Canonicalization: Canonicalization, SignedFields: SignedFields, Value: "ab+/=="}
		return m
	}
	cases := map[string]struct {
		m    Message
		fast bool // written by messageString, not by encoding/json
	}{"unsigned": {base, true}, "signed": {signed(base), true}}
	m := signed(base)
	m.CausationID, m.Body.StateFrom, m.EventSeq, m.Body.FinalitySeq = "prev", "RECEIVED", 1<<62, -3
	cases["causation and state_from"] = struct {
		m    Message
		fast bool
	}{m, true}
	m = signed(base)
	m.Body.TxID, m.Body.GTID, m.ChainID, m.Aggregate = "", "GT-1", "GT-1", "GT:GT-1"
	cases["gtid chain"] = struct {
		m    Message
		fast bool
	}{m, true}
	m = signed(base)
	m.Signature.SignedFields = nil
	cases["no signed fields"] = struct {
		m    Message
		fast bool
	}{m, true}
	for name, odd := range map[string]string{"quote": `a"b`, "backslash": `a\b`, "newline": "a\nb", "non-ASCII": "か", "DEL": "\x7f"} {
		m = signed(base)
		m.Producer.SystemID = odd
		cases["escaped "+name] = struct {
			m    Message
			fast bool
		}{m, false}
	}
	m = base
	m.Body.Payload = nil
	cases["no payload"] = struct {
		m    Message
		fast bool
	}{m, false}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := c.m.encodeString()
			if err != nil {
				t.Fatal(err)
			}
			if want := encodingJSON(t, c.m); got != string(want) {
				t.Fatalf("encode\n%s\nwant encoding/json\n%s", got, want)
			}
			if _, fast := messageString(&c.m); fast != c.fast {
				t.Fatalf("messageString took it %v, want %v", fast, c.fast)
			}
		})
	}
}
