package events

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/signing"
)

// signedRows appends three entries through an outbox signed by a fresh
// key and returns the stored messages and a key lookup that knows it.
func signedRows(t *testing.T) ([]Message, PublicKeys, ed25519.PublicKey) {
	t.Helper()
	db := openDB(t)
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	l := finality.New(clock.NewManual(t0))
	Install(l, Producer{}, &Signer{KeyID: "KEY-ZC-1", PrivateKey: priv})
	appendAll(t, db, l,
		finality.Event{TxID: "TX-1", Type: finality.PaymentInitiated, StateTo: "RECEIVED",
			Payload: map[string]any{"amount": 1200, "note": "<振込> & co", "rate": 0.5}},
		finality.Event{TxID: "TX-1", Type: finality.PreCheckPassed, StateFrom: "RECEIVED", StateTo: "PRECHECKED"},
		finality.Event{Type: finality.DnsIntradayCutoff, StateTo: "CUTOFF"},
	)
	rows, err := New(db, nil).Since(context.Background(), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var out []Message
	for _, r := range rows {
		m, err := r.Message()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	keys := func(id string, _ time.Time) (ed25519.PublicKey, error) {
		if id != "KEY-ZC-1" {
			return nil, domainerr.New("KEY_NOT_FOUND", "no key "+id, nil)
		}
		return pub, nil
	}
	return out, keys, pub
}

func TestSignedEventsVerifyAfterTheRoundTripThroughTheOutbox(t *testing.T) {
	msgs, keys, _ := signedRows(t)
	if len(msgs) != 3 {
		t.Fatalf("%d messages", len(msgs))
	}
	for _, m := range msgs {
		s := m.Signature
		if s == nil || s.Alg != "Ed25519" || s.Canonicalization != "FIXED" || s.KeyID != "KEY-ZC-1" || len(s.SignedFields) != len(SignedFields) {
			t.Fatalf("%s: signature block %+v", m.MessageID, s)
		}
		if err := VerifySignature(m, keys); err != nil {
			t.Fatalf("%s (%s): %v", m.MessageID, m.Name, err)
		}
	}
}

// Every change a forger could make to a stored event is caught: a header
// field, a body field, the payload (through entry_hash), the signed field
// list, the key id, the signature value.
func TestSignatureRefusesEveryTamperedField(t *testing.T) {
	msgs, keys, _ := signedRows(t)
	orig := msgs[0]
	clone := func() Message {
		var m Message
		b, _ := json.Marshal(orig)
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	cases := []struct {
		name   string
		change func(*Message)
		want   string // in the reason
		code   string
	}{
		{"event_seq", func(m *Message) { m.EventSeq++ }, "does not verify", "EXTERNAL_SIGNATURE_INVALID"},
		{"name", func(m *Message) { m.Name = "Settled" }, "does not verify", "EXTERNAL_SIGNATURE_INVALID"},
		{"chain_id", func(m *Message) { m.ChainID = "TX:TX-2" }, "does not verify", "EXTERNAL_SIGNATURE_INVALID"},
		{"causation_id", func(m *Message) { m.CausationID = "forged" }, "does not verify", "EXTERNAL_SIGNATURE_INVALID"},
		{"producer", func(m *Message) { m.Producer.SystemID = "elsewhere" }, "does not verify", "EXTERNAL_SIGNATURE_INVALID"},
		{"body.state_to", func(m *Message) { m.Body.StateTo = "SETTLED" }, "does not verify", "EXTERNAL_SIGNATURE_INVALID"},
		{"payload", func(m *Message) {
			m.Body.Payload = json.RawMessage(strings.Replace(string(m.Body.Payload), "1200", "9200", 1))
		}, "is not the hash of the body", "EXTERNAL_SIGNATURE_INVALID"},
		{"signed_fields", func(m *Message) { m.Signature.SignedFields = SignedFields[:3] }, "not the fixed list", "EXTERNAL_SIGNATURE_INVALID"},
		{"alg", func(m *Message) { m.Signature.Alg = "HS256" }, "alg", "EXTERNAL_SIGNATURE_INVALID"},
		{"value", func(m *Message) { m.Signature.Value = msgs[1].Signature.Value }, "does not verify", "EXTERNAL_SIGNATURE_INVALID"},
		{"key_id", func(m *Message) { m.Signature.KeyID = "KEY-ZC-2" }, "KEY-ZC-2", "KEY_NOT_FOUND"},
		{"unsigned", func(m *Message) { m.Signature = nil }, "missing", "EXTERNAL_SIGNATURE_INVALID"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := clone()
			c.change(&m)
			err := VerifySignature(m, keys)
			var se *SignatureError
			if !errors.As(err, &se) || !strings.Contains(se.Reason, c.want) || !domainerr.Has(err, c.code) {
				t.Fatalf("got %v, want a SignatureError with %q and code %s", err, c.want, c.code)
			}
		})
	}
	if err := VerifySignature(clone(), keys); err != nil {
		t.Fatalf("the untouched clone: %v", err)
	}
}

func TestRegistryKeysNeedAUsableZCKey(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	clk := clock.NewManual(t0)
	reg := signing.NewRegistry(db, clk)
	zcPub, zcPriv, _ := ed25519.GenerateKey(nil)
	bankPub, bankPriv, _ := ed25519.GenerateKey(nil)
	for _, k := range []signing.Key{
		{KeyID: "KEY-ZC", OwnerType: signing.OwnerZC, OwnerRef: "ZC", PublicKey: zcPub, ValidFrom: t0.Add(-time.Hour)},
		{KeyID: "KEY-BANK", OwnerType: signing.OwnerParticipant, OwnerRef: "001", PublicKey: bankPub, ValidFrom: t0.Add(-time.Hour)},
	} {
		if err := reg.Register(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	sign := func(id string, priv ed25519.PrivateKey) Message {
		m := NewMessage(finality.Entry{LogID: "L1", TxID: "TX-1", EventType: finality.PaymentInitiated, StateTo: "RECEIVED",
			PayloadJSON: `{"amount":1}`, EventSeq: 1, OccurredAt: clock.Stamp(t0), PrevHash: "GENESIS"}, 1, "", DefaultProducer)
		m.Body.EntryHash = finality.ComputeHash("GENESIS", finality.Entry{LogID: "L1", TxID: "TX-1", EventType: finality.PaymentInitiated,
			StateTo: "RECEIVED", PayloadJSON: `{"amount":1}`, EventSeq: 1, OccurredAt: clock.Stamp(t0)})
		if err := (Signer{KeyID: id, PrivateKey: priv}).Sign(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	keys := RegistryKeys(ctx, reg)
	if err := VerifySignature(sign("KEY-ZC", zcPriv), keys); err != nil {
		t.Fatalf("ZC key: %v", err)
	}
	if err := VerifySignature(sign("KEY-BANK", bankPriv), keys); !domainerr.Has(err, "ZC_SIGNATURE_WRONG_OWNER") {
		t.Fatalf("a participant's key: %v", err)
	}
	if err := reg.Revoke(ctx, "KEY-ZC", t0.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := VerifySignature(sign("KEY-ZC", zcPriv), keys); !domainerr.Has(err, "KEY_REVOKED") {
		t.Fatalf("revoked before the event: %v", err)
	}
}

// TestSignedBytesIsCanonical: the bytes an event signature covers are
// signing.Canonical's over the message as a document, for messages with
// and without a signature block, a causation id, a gtid instead of a
// txid, large and negative numbers, characters JSON or a query string
// would escape, and text that NFC changes (a decomposed が); an unknown
// pointer takes the document path and gives the same bytes.
func TestSignedBytesIsCanonical(t *testing.T) {
	base := NewMessage(finality.Entry{LogID: "01a23c8e-4ab0-72b4-82b5-e73b56815af3", TxID: "TX-1", EventType: finality.PaymentInitiated,
		StateTo: "RECEIVED", PayloadJSON: `{"a":1}`, EventSeq: 42, OccurredAt: "2026-12-03T15:38:07.975445774Z", PrevHash: finality.Genesis,
		EntryHash: "73fe46d933a043b196f89ae2ebdd40e7042ef6b46d42ea9ced9adeaec370b058"}, 1, "", DefaultProducer)
	signed := func(m Message) Message {
		m.Signature = &Signature{Alg: SignatureAlg, KeyID: "KEY-ZC-<&>|", Canonicalization: Canonicalization, SignedFields: SignedFields}
		return m
	}
	cases := map[string]Message{"unsigned": base, "signed": signed(base)}
	m := signed(base)
	m.CausationID, m.EventSeq, m.Body.FinalitySeq = "prev-id", 1<<62, -7
	cases["causation, big and negative numbers"] = m
	m = signed(base)
	m.Body.TxID, m.Body.GTID, m.ChainID, m.Aggregate = "", "GT-1", "GT-1", "GT:GT-1"
	cases["gtid chain"] = m
	m = signed(base)
	m.Producer = Producer{OrgID: "か\u3099", SystemID: "a|b,c&d=e<f>\"g\\h"}
	m.Body.StateFrom, m.Name = "\u00e9", "e\u0301"
	cases["NFC and escapes"] = m
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := signedBytes(m)
			if err != nil {
				t.Fatal(err)
			}
			want, err := signing.Canonical(canonicalDoc(m), SignedFields)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("signedBytes\n%s\nwant signing.Canonical\n%s", got, want)
			}
		})
	}
	if got, _ := signedBytes(cases["NFC and escapes"]); !strings.Contains(string(got), "|が|") {
		t.Fatalf("org_id not in NFC: %s", got)
	}
	saved := SignedFields
	t.Cleanup(func() { SignedFields = saved })
	SignedFields = append(slices.Clone(saved), "/no/such/member")
	m = signed(base)
	got, err := signedBytes(m)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := signing.Canonical(canonicalDoc(m), SignedFields)
	if string(got) != string(want) || !strings.HasSuffix(string(got), "|") {
		t.Fatalf("unknown pointer: %s, want %s", got, want)
	}
}
