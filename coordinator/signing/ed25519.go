package signing

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// DefaultSkew is the accepted difference between a signature's time and
// the verifier's clock, either way (the spec leaves the value to PR-*
// governance; docs/gateway.md records this default).
const DefaultSkew = 5 * time.Minute

// NewNonce returns a random 128-bit hex nonce.
func NewNonce() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b[:])
}

// RequestSigner signs an outgoing HTTP request.
type RequestSigner interface {
	// Sign returns the headers to add to a request with this method, path
	// and body.
	Sign(method, path string, body []byte) (http.Header, error)
}

// Ed25519Signer signs ZC egress requests with a registered key
// (X-ZC-Key-Id path, spec 004).
type Ed25519Signer struct {
	KeyID      string
	PrivateKey ed25519.PrivateKey
	Clock      clock.Clock // nil: system clock
}

// Sign implements RequestSigner.
func (s Ed25519Signer) Sign(method, path string, body []byte) (http.Header, error) {
	if s.KeyID == "" || len(s.PrivateKey) != ed25519.PrivateKeySize {
		return nil, domainerr.New("ZC_SIGNING_NOT_CONFIGURED", "ZC egress signing key is not configured", nil)
	}
	clk := s.Clock
	if clk == nil {
		clk = clock.System{}
	}
	env := Envelope{Method: method, Path: path, KeyID: s.KeyID, Nonce: NewNonce(), SigTime: clock.Stamp(clk.Now()), Body: body}
	msg, _, err := env.Message()
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set(HeaderKeyID, s.KeyID)
	h.Set(HeaderNonce, env.Nonce)
	h.Set(HeaderTime, env.SigTime)
	h.Set(HeaderSignature, base64.StdEncoding.EncodeToString(ed25519.Sign(s.PrivateKey, msg)))
	return h, nil
}

// Verifier checks request signatures: Ed25519 keys from the Registry when
// the key-id header is present, otherwise the HMAC fallback.
type Verifier struct {
	Registry *Registry
	Nonces   Nonces
	Clock    clock.Clock
	// Skew is the accepted clock difference (default DefaultSkew).
	Skew time.Duration
	// OwnerType is the owner_type a key must have (OwnerZC for bank
	// ingress). A key of another owner is ZC_SIGNATURE_WRONG_OWNER.
	OwnerType string
	// HMAC is the shared secret of the fallback path; nil refuses it.
	HMAC *Rotating
}

func (v *Verifier) now() time.Time {
	if v.Clock == nil {
		return time.Now()
	}
	return v.Clock.Now()
}

func (v *Verifier) skew() time.Duration {
	if v.Skew <= 0 {
		return DefaultSkew
	}
	return v.Skew
}

// CheckTime parses an RFC3339 signing time and refuses it when it is more
// than the skew away from now (TIMESTAMP_SKEW).
func CheckTime(sigTime string, now time.Time, skew time.Duration) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, sigTime)
	if err != nil {
		return time.Time{}, domainerr.New("TIMESTAMP_SKEW", "signature time is not RFC3339", map[string]any{"sig_time": sigTime})
	}
	if d := now.Sub(t); d > skew || d < -skew {
		return time.Time{}, domainerr.New("TIMESTAMP_SKEW", "signature time is outside the accepted skew",
			map[string]any{"sig_time": sigTime, "now": clock.Stamp(now), "skew_seconds": int64(skew / time.Second)})
	}
	return t, nil
}

// VerifyRequest checks the signature headers of a request with this method,
// path and body. Key-id present: Ed25519 (KEY_NOT_FOUND, KEY_REVOKED,
// KEY_EXPIRED, ZC_SIGNATURE_WRONG_OWNER, TIMESTAMP_SKEW,
// EXTERNAL_SIGNATURE_INVALID, SIGNATURE_REPLAYED). Absent: HMAC-SHA256
// (MISSING_SIGNATURE, INVALID_HMAC, TIMESTAMP_SKEW, SIGNATURE_REPLAYED).
// The nonce is consumed only after the signature verified, so a forged
// request cannot burn a legitimate nonce.
func (v *Verifier) VerifyRequest(ctx context.Context, method, path string, h http.Header, body []byte) (keyID string, err error) {
	if err := checkHeaderIdents(h, HeaderKeyID, HeaderNonce); err != nil {
		return "", err
	}
	keyID = h.Get(HeaderKeyID)
	sig := h.Get(HeaderSignature)
	env := Envelope{Method: method, Path: path, KeyID: keyID, Nonce: h.Get(HeaderNonce), SigTime: h.Get(HeaderTime), Body: body}
	if keyID == "" {
		return "", v.verifyHMAC(ctx, env, sig)
	}
	if sig == "" || env.Nonce == "" || env.SigTime == "" {
		return keyID, domainerr.New("EXTERNAL_SIGNATURE_INVALID", "signature, nonce and signing time headers are required",
			map[string]any{"key_id": keyID})
	}
	signedAt, err := CheckTime(env.SigTime, v.now(), v.skew())
	if err != nil {
		return keyID, err
	}
	k, err := v.Registry.Get(ctx, keyID)
	if err != nil {
		return keyID, err
	}
	if v.OwnerType != "" && k.OwnerType != v.OwnerType {
		return keyID, domainerr.New("ZC_SIGNATURE_WRONG_OWNER", "key "+keyID+" is not owned by "+v.OwnerType,
			map[string]any{"key_id": keyID, "owner_type": k.OwnerType})
	}
	if err := k.CheckUsable(signedAt); err != nil {
		return keyID, err
	}
	msg, _, err := env.Message()
	if err != nil {
		return keyID, err
	}
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || !ed25519.Verify(k.PublicKey, msg, raw) {
		return keyID, domainerr.New("EXTERNAL_SIGNATURE_INVALID", "signature does not verify with key "+keyID,
			map[string]any{"key_id": keyID})
	}
	return keyID, v.Nonces.Use(ctx, keyID, env.Nonce)
}

// hmacNonceKey is the key id under which HMAC-path nonces are consumed.
const hmacNonceKey = "HMAC"

func (v *Verifier) verifyHMAC(ctx context.Context, env Envelope, sig string) error {
	if sig == "" {
		return domainerr.New("MISSING_SIGNATURE", "request is not signed", nil)
	}
	if v.HMAC == nil {
		return domainerr.New("INVALID_HMAC", "the HMAC path is not configured on this verifier", nil)
	}
	if env.Nonce == "" || env.SigTime == "" {
		return domainerr.New("INVALID_HMAC", "nonce and signing time headers are required", nil)
	}
	if _, err := CheckTime(env.SigTime, v.now(), v.skew()); err != nil {
		return err
	}
	msg, _, err := env.Message()
	if err != nil {
		return err
	}
	mac, err := hex.DecodeString(sig)
	if err != nil {
		return domainerr.New("INVALID_HMAC", "signature is not hex", nil)
	}
	if err := v.HMAC.VerifyMAC(msg, mac, v.now()); err != nil {
		return err
	}
	return v.Nonces.Use(ctx, hmacNonceKey, env.Nonce)
}

// HMACSigner signs with the current shared secret only (spec 002 §12.6.4:
// never with the previous one).
type HMACSigner struct {
	Secret *Rotating
	Clock  clock.Clock
}

// Sign implements RequestSigner (HMAC path: no key-id header).
func (s HMACSigner) Sign(method, path string, body []byte) (http.Header, error) {
	clk := s.Clock
	if clk == nil {
		clk = clock.System{}
	}
	env := Envelope{Method: method, Path: path, Nonce: NewNonce(), SigTime: clock.Stamp(clk.Now()), Body: body}
	msg, _, err := env.Message()
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set(HeaderNonce, env.Nonce)
	h.Set(HeaderTime, env.SigTime)
	h.Set(HeaderSignature, hex.EncodeToString(s.Secret.MAC(msg)))
	return h, nil
}

// SignQuery returns the participant signature headers for a query.
func SignQuery(keyID string, priv ed25519.PrivateKey, now time.Time, method, path, bankID, purpose string) http.Header {
	q := QueryPayload{Method: method, Path: path, BankID: bankID, PurposeCode: purpose, Nonce: NewNonce(), SigTime: clock.Stamp(now)}
	h := http.Header{}
	h.Set(HeaderParticipantKeyID, keyID)
	h.Set(HeaderParticipantNonce, q.Nonce)
	h.Set(HeaderParticipantTime, q.SigTime)
	h.Set(HeaderParticipantSignature, base64.StdEncoding.EncodeToString(ed25519.Sign(priv, q.Message())))
	return h
}

// VerifyQuery checks a participant's query signature: the key must be a
// usable PARTICIPANT key owned by bankID, the time within the skew, the
// signature valid over the 4-field payload, and the nonce unused. Every
// failure is returned with its specific code (the gateway answers 403
// PARTICIPANT_SIGNATURE_INVALID with it as the cause).
func (v *Verifier) VerifyQuery(ctx context.Context, h http.Header, method, path, bankID, purpose string) error {
	if err := checkHeaderIdents(h, HeaderParticipantKeyID, HeaderParticipantNonce); err != nil {
		return err
	}
	keyID := h.Get(HeaderParticipantKeyID)
	q := QueryPayload{Method: method, Path: path, BankID: bankID, PurposeCode: purpose,
		Nonce: h.Get(HeaderParticipantNonce), SigTime: h.Get(HeaderParticipantTime)}
	sig := h.Get(HeaderParticipantSignature)
	if keyID == "" || sig == "" || q.Nonce == "" || q.SigTime == "" {
		return domainerr.New("EXTERNAL_SIGNATURE_INVALID", "participant signature headers are incomplete", map[string]any{"key_id": keyID})
	}
	signedAt, err := CheckTime(q.SigTime, v.now(), v.skew())
	if err != nil {
		return err
	}
	k, err := v.Registry.Get(ctx, keyID)
	if err != nil {
		return err
	}
	if k.OwnerType != OwnerParticipant || k.OwnerRef != bankID {
		return domainerr.New("EXTERNAL_SIGNATURE_INVALID", "key "+keyID+" is not a PARTICIPANT key of bank "+bankID,
			map[string]any{"key_id": keyID, "owner_type": k.OwnerType, "owner_ref": k.OwnerRef})
	}
	if err := k.CheckUsable(signedAt); err != nil {
		return err
	}
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || !ed25519.Verify(k.PublicKey, q.Message(), raw) {
		return domainerr.New("EXTERNAL_SIGNATURE_INVALID", "signature does not verify with key "+keyID, map[string]any{"key_id": keyID})
	}
	return v.Nonces.Use(ctx, keyID, q.Nonce)
}
