package signing

import (
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// A key revoked at R verifies nothing received after R, even when the
// signer sets its signing time back before R (inside the skew window):
// revocation is judged at the verifier's receive time (its clock), on the
// ingress and on participant queries alike.
func TestRevocationJudgedAtReceiveTime(t *testing.T) {
	f := newFixture(t)
	revokedAt := t0.Add(time.Minute)
	if err := f.reg.Revoke(f.ctx, "KEY-ZC-1", revokedAt); err != nil {
		t.Fatal(err)
	}
	// Received before R, signed before R: valid (revocation is not retroactive).
	if _, err := f.v.VerifyRequest(f.ctx, "POST", path, f.sign(t, "KEY-ZC-1", f.priv, t0), body); err != nil {
		t.Fatalf("signed and received before revocation: %v", err)
	}
	// Received after R, signing time set back before R (4 minutes, within the 5-minute skew).
	f.clk.Set(revokedAt.Add(time.Second))
	backdated := f.sign(t, "KEY-ZC-1", f.priv, revokedAt.Add(-3*time.Minute))
	if _, err := f.v.VerifyRequest(f.ctx, "POST", path, backdated, body); domainerr.Code(err) != "KEY_REVOKED" {
		t.Fatalf("backdated signature received after revocation: %v", err)
	}
	// Received exactly at R.
	f.clk.Set(revokedAt)
	if _, err := f.v.VerifyRequest(f.ctx, "POST", path, f.sign(t, "KEY-ZC-1", f.priv, t0), body); domainerr.Code(err) != "KEY_REVOKED" {
		t.Fatalf("received at the revocation instant: %v", err)
	}

	// Participant query keys follow the same rule.
	pub, priv, _ := ed25519.GenerateKey(nil)
	if err := f.reg.Register(f.ctx, Key{KeyID: "KEY-001", OwnerType: OwnerParticipant, OwnerRef: "001", PublicKey: pub, ValidFrom: t0.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.Revoke(f.ctx, "KEY-001", revokedAt.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	f.clk.Set(revokedAt.Add(2 * time.Minute))
	h := SignQuery("KEY-001", priv, revokedAt, "GET", "/api/transactions/TX-1", "001", "P01")
	if err := f.v.VerifyQuery(f.ctx, h, "GET", "/api/transactions/TX-1", "001", "P01"); domainerr.Code(err) != "KEY_REVOKED" {
		t.Fatalf("backdated query signature after revocation: %v", err)
	}

	// Expiry (valid_to) likewise: a key that expired is not revived by a backdated signing time.
	pub2, priv2, _ := ed25519.GenerateKey(nil)
	until := f.clk.Now().Add(time.Minute)
	if err := f.reg.Register(f.ctx, Key{KeyID: "KEY-ZC-2", OwnerType: OwnerZC, OwnerRef: "ZC", PublicKey: pub2, ValidFrom: t0.Add(-time.Hour), ValidTo: &until}); err != nil {
		t.Fatal(err)
	}
	f.clk.Set(until.Add(time.Second))
	if _, err := f.v.VerifyRequest(f.ctx, "POST", path, f.sign(t, "KEY-ZC-2", priv2, until.Add(-2*time.Minute)), body); domainerr.Code(err) != "KEY_EXPIRED" {
		t.Fatalf("backdated signature after valid_to: %v", err)
	}
}

// CheckHeaders refuses, without a body, what the headers alone show to be
// wrong; nothing it refuses consumes a nonce.
func TestCheckHeadersBeforeBody(t *testing.T) {
	f := newFixture(t)
	good := f.sign(t, "KEY-ZC-1", f.priv, t0)
	with := func(k, v string) http.Header {
		h := good.Clone()
		h.Set(k, v)
		return h
	}
	long := make([]byte, 200)
	for i := range long {
		long[i] = 'n'
	}
	hmacPath := http.Header{}
	hmacPath.Set(HeaderSignature, "zz")
	hmacPath.Set(HeaderNonce, "n")
	hmacPath.Set(HeaderTime, "2026-12-02T01:00:00Z")
	cases := []struct {
		name string
		h    http.Header
		code string
	}{
		{"well-formed", good, ""},
		{"signature not base64", with(HeaderSignature, "!!!"), "EXTERNAL_SIGNATURE_INVALID"},
		{"signature of the wrong length", with(HeaderSignature, base64.StdEncoding.EncodeToString([]byte("short"))), "EXTERNAL_SIGNATURE_INVALID"},
		{"nonce too long (identifier grammar)", with(HeaderNonce, string(long)), "INVALID_REQUEST"},
		{"unknown key", with(HeaderKeyID, "KEY-NOPE"), "KEY_NOT_FOUND"},
		{"time not RFC3339", with(HeaderTime, "yesterday"), "TIMESTAMP_SKEW"},
		{"HMAC path: not hex", hmacPath, "INVALID_HMAC"},
	}
	f.v.HMAC = &Rotating{Current: []byte("s")}
	for _, c := range cases {
		p, err := f.v.CheckHeaders(f.ctx, c.h)
		if got := domainerr.Code(err); got != c.code {
			t.Errorf("%s: %q (%v), want %q", c.name, got, err, c.code)
		}
		if c.code == "" {
			if err := p.Verify(f.ctx, "POST", path, body); err != nil {
				t.Errorf("%s: Verify: %v", c.name, err)
			}
		}
	}
	var n int
	f.db.Read(f.ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(f.ctx, `SELECT COUNT(*) FROM IdempotencyKeys WHERE key LIKE 'sig:%'`).Scan(&n)
	})
	if n != 1 {
		t.Errorf("%d nonces consumed, want 1", n)
	}
}

// A signed body has one reading: a repeated key or invalid UTF-8 is
// refused before any signature is checked.
func TestSignedBodyIsStrict(t *testing.T) {
	for _, b := range []string{`{"a":1,"a":2}`, "{\"a\":\"\xff\"}", `{"a":{"b":1,"b":1}}`} {
		if _, _, err := (Envelope{Method: "POST", Path: path, Body: []byte(b)}).Message(); domainerr.Code(err) != "INVALID_REQUEST" {
			t.Errorf("%q: %v", b, err)
		}
	}
}
