package signing

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/params"
)

// DefaultSkew is PR-SIGNATURE-SKEW's default: the accepted difference
// between a signature's time and the verifier's clock, either way (the
// spec leaves the value to PR-* governance; coordinator/params).
const DefaultSkew = params.DefaultSignatureSkew

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
	// Skew is a fixed accepted clock difference. Zero reads
	// PR-SIGNATURE-SKEW from Params at each check (the parameter ledger,
	// so an operator's change applies without a restart), or DefaultSkew
	// without Params.
	Skew   time.Duration
	Params params.Source
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

// skew is the accepted clock difference in force.
func (v *Verifier) skew(ctx context.Context) (time.Duration, error) {
	switch {
	case v.Skew > 0:
		return v.Skew, nil
	case v.Params != nil:
		return v.Params.Duration(ctx, params.SignatureClockSkew)
	}
	return DefaultSkew, nil
}

// checkTime is CheckTime with the skew in force.
func (v *Verifier) checkTime(ctx context.Context, sigTime string, now time.Time) (time.Time, error) {
	skew, err := v.skew(ctx)
	if err != nil {
		return time.Time{}, err
	}
	return CheckTime(sigTime, now, skew)
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

// Pending is a request whose signature headers passed every check that
// needs no body: what the verifier knows before it reads the body. Verify
// finishes the check over the body.
type Pending struct {
	v          *Verifier
	keyID      string
	nonce      string
	sigTime    string
	receivedAt time.Time
	key        *Key   // nil on the HMAC path
	sig        []byte // Ed25519 signature or HMAC
}

// KeyID is the X-ZC-Key-Id the request named ("" on the HMAC path).
func (p Pending) KeyID() string { return p.keyID }

// CheckHeaders runs every check that needs only the headers, in the order
// of VerifyRequest, at the verifier's receive time (its clock now): header
// presence and shape (the signature must decode to an Ed25519 signature or
// an HMAC-SHA256), signing time within the skew, and on the Ed25519 path
// the key (KEY_NOT_FOUND, ZC_SIGNATURE_WRONG_OWNER, KEY_REVOKED,
// KEY_EXPIRED): the key must be usable both when the request says it was
// signed and when it is received, so a key revoked at R verifies nothing
// received after R whatever signing time the signer claims.
func (v *Verifier) CheckHeaders(ctx context.Context, h http.Header) (Pending, error) {
	if err := checkHeaderIdents(h, HeaderKeyID, HeaderNonce); err != nil {
		return Pending{}, err
	}
	p := Pending{v: v, keyID: h.Get(HeaderKeyID), nonce: h.Get(HeaderNonce), sigTime: h.Get(HeaderTime), receivedAt: v.now()}
	sig := h.Get(HeaderSignature)
	if p.keyID == "" {
		return p, v.checkHMACHeaders(ctx, &p, sig)
	}
	if sig == "" || p.nonce == "" || p.sigTime == "" {
		return p, domainerr.New("EXTERNAL_SIGNATURE_INVALID", "signature, nonce and signing time headers are required",
			map[string]any{"key_id": p.keyID})
	}
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || len(raw) != ed25519.SignatureSize {
		return p, domainerr.New("EXTERNAL_SIGNATURE_INVALID", "the signature header is not a base64 Ed25519 signature",
			map[string]any{"key_id": p.keyID})
	}
	p.sig = raw
	signedAt, err := v.checkTime(ctx, p.sigTime, p.receivedAt)
	if err != nil {
		return p, err
	}
	k, err := v.Registry.Get(ctx, p.keyID)
	if err != nil {
		return p, err
	}
	if v.OwnerType != "" && k.OwnerType != v.OwnerType {
		return p, domainerr.New("ZC_SIGNATURE_WRONG_OWNER", "key "+p.keyID+" is not owned by "+v.OwnerType,
			map[string]any{"key_id": p.keyID, "owner_type": k.OwnerType})
	}
	if err := k.CheckUsableAt(signedAt, p.receivedAt); err != nil {
		return p, err
	}
	p.key = &k
	return p, nil
}

func (v *Verifier) checkHMACHeaders(ctx context.Context, p *Pending, sig string) error {
	if sig == "" {
		return domainerr.New("MISSING_SIGNATURE", "request is not signed", nil)
	}
	if v.HMAC == nil {
		return domainerr.New("INVALID_HMAC", "the HMAC path is not configured on this verifier", nil)
	}
	if p.nonce == "" || p.sigTime == "" {
		return domainerr.New("INVALID_HMAC", "nonce and signing time headers are required", nil)
	}
	mac, err := hex.DecodeString(sig)
	if err != nil || len(mac) != sha256.Size {
		return domainerr.New("INVALID_HMAC", "signature is not a hex HMAC-SHA256", nil)
	}
	p.sig = mac
	_, err = v.checkTime(ctx, p.sigTime, p.receivedAt)
	return err
}

// Verify finishes the check of a request whose headers passed
// CheckHeaders: the signature over this method, path and body
// (EXTERNAL_SIGNATURE_INVALID / INVALID_HMAC), then the nonce is consumed
// (SIGNATURE_REPLAYED). The nonce is consumed only after the signature
// verified, so a forged request cannot burn a legitimate nonce.
func (p Pending) Verify(ctx context.Context, method, path string, body []byte) error {
	if err := p.verifySignature(method, path, body); err != nil {
		return err
	}
	if p.key == nil {
		return p.v.Nonces.Use(ctx, hmacNonceKey, p.nonce)
	}
	return p.v.Nonces.Use(ctx, p.keyID, p.nonce)
}

// verifySignature checks the signature over this method, path and body.
func (p Pending) verifySignature(method, path string, body []byte) error {
	env := Envelope{Method: method, Path: path, KeyID: p.keyID, Nonce: p.nonce, SigTime: p.sigTime, Body: body}
	msg, _, err := env.Message()
	if err != nil {
		return err
	}
	if p.key == nil {
		return p.v.HMAC.VerifyMAC(msg, p.sig, p.receivedAt)
	}
	if !ed25519.Verify(p.key.PublicKey, msg, p.sig) {
		return domainerr.New("EXTERNAL_SIGNATURE_INVALID", "signature does not verify with key "+p.keyID,
			map[string]any{"key_id": p.keyID})
	}
	return nil
}

// VerifyRequest checks the signature headers of a request with this method,
// path and body: CheckHeaders, then Pending.Verify. Key-id present: Ed25519
// (KEY_NOT_FOUND, KEY_REVOKED, KEY_EXPIRED, ZC_SIGNATURE_WRONG_OWNER,
// TIMESTAMP_SKEW, EXTERNAL_SIGNATURE_INVALID, SIGNATURE_REPLAYED). Absent:
// HMAC-SHA256 (MISSING_SIGNATURE, INVALID_HMAC, TIMESTAMP_SKEW,
// SIGNATURE_REPLAYED).
func (v *Verifier) VerifyRequest(ctx context.Context, method, path string, h http.Header, body []byte) (keyID string, err error) {
	p, err := v.CheckHeaders(ctx, h)
	if err != nil {
		return p.keyID, err
	}
	return p.keyID, p.Verify(ctx, method, path, body)
}

// hmacNonceKey is the key id under which HMAC-path nonces are consumed.
const hmacNonceKey = "HMAC"

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
	now := v.now() // the receive time: revocation and validity are judged at it too
	signedAt, err := v.checkTime(ctx, q.SigTime, now)
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
	if err := k.CheckUsableAt(signedAt, now); err != nil {
		return err
	}
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || !ed25519.Verify(k.PublicKey, q.Message(), raw) {
		return domainerr.New("EXTERNAL_SIGNATURE_INVALID", "signature does not verify with key "+keyID, map[string]any{"key_id": keyID})
	}
	return v.Nonces.Use(ctx, keyID, q.Nonce)
}
