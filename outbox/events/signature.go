package events

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/signing"
)

// The §12.2 signature block of every signed event.
const (
	SignatureAlg     = "Ed25519"
	Canonicalization = "FIXED" // spec 002 §12.6.2 (signing.Canonical)
)

// SignedFields are the JSON Pointers into the message that an event
// signature covers, in the order they are canonicalized: every header
// member, every scalar of the body, and the signature block's own members
// but its value. body.payload is not listed leaf by leaf: body.entry_hash
// covers it (finality.ComputeHash over prev_hash, log_id, txid, gtid,
// event_type, state_from, state_to, payload, the global seq and
// occurred_at), and VerifySignature recomputes that hash from the message.
// So the payload is signed through the hash chain, and a payload number
// that is not an integer (which FIXED refuses to sign) cannot stop an
// append.
var SignedFields = []string{
	"/aggregate", "/body/entry_hash", "/body/finality_event_seq", "/body/gtid", "/body/log_id",
	"/body/prev_hash", "/body/state_from", "/body/state_to", "/body/txid", "/causation_id",
	"/chain_id", "/correlation_id", "/event_seq", "/idempotency_key", "/message_id",
	"/message_type", "/name", "/occurred_at", "/producer/org_id", "/producer/system_id",
	"/schema_version", "/signature/alg", "/signature/canonicalization", "/signature/key_id",
	"/signature/signed_fields",
}

// Signature is the §12.2 signature block. key_id names the KeyRegistry
// key (owner ZC) whose public half verifies it.
type Signature struct {
	Alg              string   `json:"alg"`
	KeyID            string   `json:"key_id"`
	Canonicalization string   `json:"canonicalization"`
	SignedFields     []string `json:"signed_fields"`
	Value            string   `json:"value"` // base64 (standard, padded)
}

// Signer signs event messages with ZC's Ed25519 key.
type Signer struct {
	KeyID      string
	PrivateKey ed25519.PrivateKey
}

// Sign sets m.Signature.
func (s Signer) Sign(m *Message) error {
	m.Signature = &Signature{Alg: SignatureAlg, KeyID: s.KeyID, Canonicalization: Canonicalization,
		SignedFields: SignedFields}
	msg, err := signedBytes(*m)
	if err != nil {
		m.Signature = nil
		return fmt.Errorf("events: sign %s: %w", m.MessageID, err)
	}
	m.Signature.Value = base64.StdEncoding.EncodeToString(ed25519.Sign(s.PrivateKey, msg))
	return nil
}

// signedBytes is the FIXED canonicalization of m's SignedFields: the bytes
// signing.Canonical gives for the message as a document (canonicalDoc),
// written field by field without building that document (every
// FinalityLog append signs one event: the maps and the pointer walk cost
// more than the signature's hashing). A pointer it does not know takes
// the whole message through signing.Canonical.
// TestSignedBytesIsCanonical holds the two equal.
func signedBytes(m Message) ([]byte, error) {
	b := make([]byte, 0, 1024)
	for i, p := range SignedFields {
		if i > 0 {
			b = append(b, '|')
		}
		var ok bool
		if b, ok = appendSigned(b, &m, p); !ok {
			return signing.Canonical(canonicalDoc(m), SignedFields)
		}
	}
	return b, nil
}

// appendSigned appends the FIXED string of the member at pointer p of m
// (strings NFC, integers in decimal, an absent member ""), or reports
// false for a pointer it does not know.
func appendSigned(b []byte, m *Message, p string) ([]byte, bool) {
	var s string
	switch p {
	case "/aggregate":
		s = m.Aggregate
	case "/body/entry_hash":
		s = m.Body.EntryHash
	case "/body/finality_event_seq":
		return strconv.AppendInt(b, m.Body.FinalitySeq, 10), true
	case "/body/gtid":
		s = m.Body.GTID
	case "/body/log_id":
		s = m.Body.LogID
	case "/body/prev_hash":
		s = m.Body.PrevHash
	case "/body/state_from":
		s = m.Body.StateFrom
	case "/body/state_to":
		s = m.Body.StateTo
	case "/body/txid":
		s = m.Body.TxID
	case "/causation_id":
		s = m.CausationID
	case "/chain_id":
		s = m.ChainID
	case "/correlation_id":
		s = m.CorrelationID
	case "/event_seq":
		return strconv.AppendInt(b, m.EventSeq, 10), true
	case "/idempotency_key":
		s = m.IdempotencyKey
	case "/message_id":
		s = m.MessageID
	case "/message_type":
		s = m.MessageType
	case "/name":
		s = m.Name
	case "/occurred_at":
		s = m.OccurredAt
	case "/producer/org_id":
		s = m.Producer.OrgID
	case "/producer/system_id":
		s = m.Producer.SystemID
	case "/schema_version":
		s = m.SchemaVersion
	case "/signature/alg", "/signature/canonicalization", "/signature/key_id", "/signature/signed_fields":
		if m.Signature == nil {
			return b, true // absent
		}
		switch p {
		case "/signature/alg":
			s = m.Signature.Alg
		case "/signature/canonicalization":
			s = m.Signature.Canonicalization
		case "/signature/key_id":
			s = m.Signature.KeyID
		default:
			for i, f := range m.Signature.SignedFields {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendNFC(b, f)
			}
			return b, true
		}
	default:
		return b, false
	}
	return appendNFC(b, s), true
}

// appendNFC appends s in Unicode NFC (ASCII is NFC as it is).
func appendNFC(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return append(b, norm.NFC.String(s)...)
		}
	}
	return append(b, s...)
}

// canonicalDoc is m as the document its SignedFields point into.
func canonicalDoc(m Message) map[string]any {
	sig := map[string]any{}
	if m.Signature != nil {
		sig = map[string]any{"alg": m.Signature.Alg, "key_id": m.Signature.KeyID,
			"canonicalization": m.Signature.Canonicalization, "signed_fields": m.Signature.SignedFields}
	}
	return map[string]any{
		"schema_version": m.SchemaVersion, "message_type": m.MessageType, "name": m.Name,
		"message_id": m.MessageID, "occurred_at": m.OccurredAt, "idempotency_key": m.IdempotencyKey,
		"event_seq": m.EventSeq, "correlation_id": m.CorrelationID, "causation_id": m.CausationID,
		"producer": map[string]any{"org_id": m.Producer.OrgID, "system_id": m.Producer.SystemID},
		"chain_id": m.ChainID, "aggregate": m.Aggregate,
		"body": map[string]any{"txid": m.Body.TxID, "gtid": m.Body.GTID, "state_from": m.Body.StateFrom,
			"state_to": m.Body.StateTo, "finality_event_seq": m.Body.FinalitySeq, "log_id": m.Body.LogID,
			"prev_hash": m.Body.PrevHash, "entry_hash": m.Body.EntryHash},
		"signature": sig,
	}
}

// SignatureError says why an event's signature does not hold. It unwraps
// to EXTERNAL_SIGNATURE_INVALID, or to the key lookup's own error (for
// example KEY_NOT_FOUND, KEY_REVOKED, ZC_SIGNATURE_WRONG_OWNER).
type SignatureError struct {
	MessageID string
	Reason    string
	Err       error
}

func (e *SignatureError) Error() string {
	return fmt.Sprintf("events: message %s: signature: %s", e.MessageID, e.Reason)
}

// Unwrap returns the cause.
func (e *SignatureError) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	return domainerr.New("EXTERNAL_SIGNATURE_INVALID", e.Reason, map[string]any{"message_id": e.MessageID})
}

// PublicKeys returns the public key of a ZC signing key id that was usable
// at signedAt (the event's occurred_at), or an error.
type PublicKeys func(keyID string, signedAt time.Time) (ed25519.PublicKey, error)

// RegistryKeys looks keys up in the coordinator's KeyRegistry: the key
// must be owned by ZC and usable (active, in its validity, not revoked)
// when the event was signed.
func RegistryKeys(ctx context.Context, reg *signing.Registry) PublicKeys {
	return func(keyID string, signedAt time.Time) (ed25519.PublicKey, error) {
		k, err := reg.Get(ctx, keyID)
		if err != nil {
			return nil, err
		}
		if k.OwnerType != signing.OwnerZC {
			return nil, domainerr.New("ZC_SIGNATURE_WRONG_OWNER", "key "+keyID+" is not owned by ZC",
				map[string]any{"key_id": keyID, "owner_type": k.OwnerType})
		}
		if err := k.CheckUsable(signedAt); err != nil {
			return nil, err
		}
		return k.PublicKey, nil
	}
}

// VerifySignature checks m's signature block against keys: algorithm and
// canonicalization as fixed above, exactly SignedFields, a valid Ed25519
// signature, and a body.entry_hash that is the hash of the body (so the
// payload is covered too). Any failure is a *SignatureError.
func VerifySignature(m Message, keys PublicKeys) error {
	bad := func(format string, args ...any) error {
		return &SignatureError{MessageID: m.MessageID, Reason: fmt.Sprintf(format, args...)}
	}
	s := m.Signature
	switch {
	case s == nil:
		return bad("missing")
	case s.Alg != SignatureAlg:
		return bad("alg %q, want %q", s.Alg, SignatureAlg)
	case s.Canonicalization != Canonicalization:
		return bad("canonicalization %q, want %q", s.Canonicalization, Canonicalization)
	case !slices.Equal(s.SignedFields, SignedFields):
		return bad("signed_fields %v are not the fixed list", s.SignedFields)
	}
	signedAt, err := clock.ParseStamp(m.OccurredAt)
	if err != nil {
		return bad("occurred_at %q: %v", m.OccurredAt, err)
	}
	pub, err := keys(s.KeyID, signedAt)
	if err != nil {
		return &SignatureError{MessageID: m.MessageID, Reason: fmt.Sprintf("key %s: %v", s.KeyID, err), Err: err}
	}
	if len(pub) != ed25519.PublicKeySize {
		return bad("key %s is not an Ed25519 public key", s.KeyID)
	}
	raw, err := base64.StdEncoding.DecodeString(s.Value)
	if err != nil {
		return bad("value is not base64: %v", err)
	}
	msg, err := signedBytes(m)
	if err != nil {
		return bad("%v", err)
	}
	if !ed25519.Verify(pub, msg, raw) {
		return bad("does not verify with key %s", s.KeyID)
	}
	e := finality.Entry{LogID: m.Body.LogID, TxID: m.Body.TxID, GTID: m.Body.GTID, EventType: finality.EventType(m.Name),
		StateFrom: m.Body.StateFrom, StateTo: m.Body.StateTo, PayloadJSON: string(m.Body.Payload),
		EventSeq: m.Body.FinalitySeq, OccurredAt: m.OccurredAt}
	if got := finality.ComputeHash(m.Body.PrevHash, e); got != m.Body.EntryHash {
		return bad("body.entry_hash %s is not the hash of the body (%s): payload or a field was changed", m.Body.EntryHash, got)
	}
	return nil
}
