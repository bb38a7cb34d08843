package signing

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

var t0 = time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)

func TestCanonicalFixed(t *testing.T) {
	doc, err := Decode([]byte(`{"txid":"TX-1","amount":{"value":1200,"currency":"JPY"},"flag":true,"none":null,
		"list":[1,"a",{"b":2,"a":"x"}],"name":"ｶﾞ","e":{},"neg":-7}`))
	if err != nil {
		t.Fatal(err)
	}
	ptrs := LeafPointers(doc)
	want := []string{"/amount/currency", "/amount/value", "/e", "/flag", "/list", "/name", "/neg", "/none", "/txid"}
	if fmt.Sprint(ptrs) != fmt.Sprint(want) {
		t.Fatalf("pointers = %v, want %v", ptrs, want)
	}
	got, err := Canonical(doc, append(ptrs, "/absent"))
	if err != nil {
		t.Fatal(err)
	}
	// "ｶﾞ" (half-width) is already NFC: NFC does not fold width.
	if w := "JPY|1200||true|1,a,x,2|ｶﾞ|-7||TX-1|"; string(got) != w {
		t.Fatalf("canonical = %q, want %q", got, w)
	}
	// NFC: a decomposed が signs like the composed one.
	a, _ := Canonical(map[string]any{"n": "か\u3099"}, []string{"/n"})
	b, _ := Canonical(map[string]any{"n": "が"}, []string{"/n"})
	if string(a) != string(b) {
		t.Fatalf("NFC not applied: %q vs %q", a, b)
	}
	// Floating point is never signed.
	f, _ := Decode([]byte(`{"rate":1.5}`))
	if _, err := Canonical(f, []string{"/rate"}); domainerr.Code(err) != "INVALID_REQUEST" {
		t.Fatalf("float canonicalized: %v", err)
	}
}

func TestEnvelopeBindsEveryBodyField(t *testing.T) {
	base := Envelope{Method: "POST", Path: "/bank/001/zc-ingress/reserve-funds", KeyID: "K", Nonce: "n", SigTime: "2026-12-02T01:00:00Z",
		Body: []byte(`{"request_id":"r","amount":{"value":100,"currency":"JPY"}}`)}
	m0, fields, err := base.Message()
	if err != nil {
		t.Fatal(err)
	}
	if fields[0] != "/body/amount/currency" || fields[len(fields)-1] != "/signed_fields" {
		t.Fatalf("fields = %v", fields)
	}
	for name, body := range map[string]string{
		"value changed":        `{"request_id":"r","amount":{"value":101,"currency":"JPY"}}`,
		"field added":          `{"request_id":"r","amount":{"value":100,"currency":"JPY"},"lane":"EXPRESS"}`,
		"field renamed":        `{"request_id":"r","amount":{"value":100,"ccy":"JPY"}}`,
		"key order/whitespace": `{ "amount" : {"currency":"JPY","value":100}, "request_id":"r" }`,
	} {
		e := base
		e.Body = []byte(body)
		m, _, err := e.Message()
		if err != nil {
			t.Fatal(err)
		}
		same := string(m) == string(m0)
		if same != (name == "key order/whitespace") {
			t.Errorf("%s: same message = %v", name, same)
		}
	}
}

type fixture struct {
	ctx  context.Context
	clk  *clock.Manual
	db   *store.DB
	reg  *Registry
	v    *Verifier
	priv ed25519.PrivateKey
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "zc.db"), store.Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clk := clock.NewManual(t0)
	reg := NewRegistry(db, clk)
	pub, priv, _ := ed25519.GenerateKey(nil)
	if err := reg.Register(ctx, Key{KeyID: "KEY-ZC-1", OwnerType: OwnerZC, OwnerRef: "ZC", PublicKey: pub, ValidFrom: t0.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	return &fixture{ctx: ctx, clk: clk, db: db, reg: reg, priv: priv,
		v: &Verifier{Registry: reg, Nonces: NewDBNonces(db, clk), Clock: clk, OwnerType: OwnerZC}}
}

const path = "/bank/001/zc-ingress/reserve-funds"

var body = []byte(`{"request_id":"r1","txid":"TX-1","amount":{"value":1200,"currency":"JPY"},"account_hash":"h:a"}`)

func (f *fixture) sign(t *testing.T, keyID string, priv ed25519.PrivateKey, at time.Time) http.Header {
	t.Helper()
	h, err := Ed25519Signer{KeyID: keyID, PrivateKey: priv, Clock: clock.NewManual(at)}.Sign("POST", path, body)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestEd25519Failures(t *testing.T) {
	f := newFixture(t)
	_, otherPriv, _ := ed25519.GenerateKey(nil)
	otherPub := otherPriv.Public().(ed25519.PublicKey)
	if err := f.reg.Register(f.ctx, Key{KeyID: "KEY-REVOKED", OwnerType: OwnerZC, OwnerRef: "ZC", PublicKey: otherPub, ValidFrom: t0.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.Revoke(f.ctx, "KEY-REVOKED", t0.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.Register(f.ctx, Key{KeyID: "KEY-P-001", OwnerType: OwnerParticipant, OwnerRef: "001", PublicKey: otherPub, ValidFrom: t0.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	ok := f.sign(t, "KEY-ZC-1", f.priv, t0)
	cases := []struct {
		name string
		h    http.Header
		body []byte
		code string
	}{
		{"valid", ok, body, ""},
		{"replay of the same key and nonce", ok, body, "SIGNATURE_REPLAYED"},
		{"bad signature (other private key)", f.sign(t, "KEY-ZC-1", otherPriv, t0), body, "EXTERNAL_SIGNATURE_INVALID"},
		{"tampered body", f.sign(t, "KEY-ZC-1", f.priv, t0), []byte(`{"request_id":"r1","txid":"TX-1","amount":{"value":9999,"currency":"JPY"},"account_hash":"h:a"}`), "EXTERNAL_SIGNATURE_INVALID"},
		{"unknown key", f.sign(t, "KEY-NOPE", f.priv, t0), body, "KEY_NOT_FOUND"},
		{"revoked key", f.sign(t, "KEY-REVOKED", otherPriv, t0), body, "KEY_REVOKED"},
		{"participant key on ZC ingress", f.sign(t, "KEY-P-001", otherPriv, t0), body, "ZC_SIGNATURE_WRONG_OWNER"},
		{"skew: 6 minutes old", f.sign(t, "KEY-ZC-1", f.priv, t0.Add(-6*time.Minute)), body, "TIMESTAMP_SKEW"},
		{"skew: 6 minutes ahead", f.sign(t, "KEY-ZC-1", f.priv, t0.Add(6*time.Minute)), body, "TIMESTAMP_SKEW"},
		{"within skew", f.sign(t, "KEY-ZC-1", f.priv, t0.Add(-4*time.Minute)), body, ""},
	}
	for _, c := range cases {
		_, err := f.v.VerifyRequest(f.ctx, "POST", path, c.h, c.body)
		if got := domainerr.Code(err); got != c.code {
			t.Errorf("%s: code %q (%v), want %q", c.name, got, err, c.code)
		}
	}
	// Revocation is not retroactive: signed before revoked_at is valid.
	if err := f.reg.Revoke(f.ctx, "KEY-ZC-1", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.v.VerifyRequest(f.ctx, "POST", path, f.sign(t, "KEY-ZC-1", f.priv, t0), body); err != nil {
		t.Errorf("signature before revocation refused: %v", err)
	}
	f.clk.Set(t0.Add(2 * time.Minute))
	if _, err := f.v.VerifyRequest(f.ctx, "POST", path, f.sign(t, "KEY-ZC-1", f.priv, t0.Add(2*time.Minute)), body); domainerr.Code(err) != "KEY_REVOKED" {
		t.Errorf("signature after revocation: %v", err)
	}
	var n int
	f.db.Read(f.ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(f.ctx, `SELECT COUNT(*) FROM IdempotencyKeys WHERE key LIKE 'sig:%'`).Scan(&n)
	})
	if n != 3 { // the three accepted signatures consumed their nonces; refused ones did not
		t.Errorf("%d nonces stored, want 3", n)
	}
}

func TestHMACRotationWindow(t *testing.T) {
	f := newFixture(t)
	old, cur := []byte("old-secret"), []byte("new-secret")
	signOld := HMACSigner{Secret: &Rotating{Current: old}, Clock: f.clk}
	signCur := HMACSigner{Secret: &Rotating{Current: cur}, Clock: f.clk}
	cases := []struct {
		name   string
		secret Rotating
		signer HMACSigner
		at     time.Time
		code   string
	}{
		{"current", Rotating{Current: cur, Previous: old, PreviousUntil: "2026-12-02T02:00:00Z"}, signCur, t0, ""},
		{"previous inside window", Rotating{Current: cur, Previous: old, PreviousUntil: "2026-12-02T02:00:00Z"}, signOld, t0, ""},
		{"previous after window", Rotating{Current: cur, Previous: old, PreviousUntil: "2026-12-02T00:59:59Z"}, signOld, t0, "INVALID_HMAC"},
		{"previous at deadline (window is [.., until))", Rotating{Current: cur, Previous: old, PreviousUntil: "2026-12-02T01:00:00Z"}, signOld, t0, "INVALID_HMAC"},
		{"previous without deadline", Rotating{Current: cur, Previous: old}, signOld, t0, "INVALID_HMAC"},
		{"previous with unreadable deadline", Rotating{Current: cur, Previous: old, PreviousUntil: "tomorrow"}, signOld, t0, "INVALID_HMAC"},
		{"unknown secret", Rotating{Current: cur}, HMACSigner{Secret: &Rotating{Current: []byte("x")}, Clock: f.clk}, t0, "INVALID_HMAC"},
	}
	for _, c := range cases {
		f.v.HMAC = &c.secret
		h, err := c.signer.Sign("POST", path, body)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.v.VerifyRequest(f.ctx, "POST", path, h, body)
		if got := domainerr.Code(err); got != c.code {
			t.Errorf("%s: %q (%v), want %q", c.name, got, err, c.code)
		}
	}
	f.v.HMAC = &Rotating{Current: cur}
	if _, err := f.v.VerifyRequest(f.ctx, "POST", path, http.Header{}, body); domainerr.Code(err) != "MISSING_SIGNATURE" {
		t.Errorf("unsigned: %v", err)
	}
	h, _ := signCur.Sign("POST", path, body)
	f.v.VerifyRequest(f.ctx, "POST", path, h, body)
	if _, err := f.v.VerifyRequest(f.ctx, "POST", path, h, body); domainerr.Code(err) != "SIGNATURE_REPLAYED" {
		t.Errorf("HMAC replay: %v", err)
	}
	f.v.HMAC = nil
	h, _ = signCur.Sign("POST", path, body)
	if _, err := f.v.VerifyRequest(f.ctx, "POST", path, h, body); domainerr.Code(err) != "INVALID_HMAC" {
		t.Errorf("HMAC not configured: %v", err)
	}
}

func TestAPIKeyRotation(t *testing.T) {
	keys := APIKeys{Keys: []APIKey{
		{Principal: Principal{Scope: ScopeParticipant, BankID: "001"}, Secret: &Rotating{Current: []byte("k1-new"), Previous: []byte("k1-old"), PreviousUntil: "2026-12-02T02:00:00Z"}},
		{Principal: Principal{Scope: ScopeParticipant, BankID: "002"}, Secret: &Rotating{Current: []byte("k2-new"), Previous: []byte("k2-old")}},
		{Principal: Principal{Scope: ScopeOperator, Name: "ops"}, Secret: &Rotating{Current: []byte("ops")}},
	}}
	cases := []struct {
		key  string
		at   time.Time
		want string // bank id or scope, "" for refused
	}{
		{"k1-new", t0, "001"},
		{"k1-old", t0, "001"},
		{"k1-old", t0.Add(time.Hour), ""},
		{"k2-new", t0, "002"},
		{"k2-old", t0, ""}, // previous without deadline
		{"ops", t0, ScopeOperator},
		{"", t0, ""},
		{"nope", t0, ""},
	}
	for _, c := range cases {
		p, ok := keys.Authenticate(c.key, c.at)
		got := ""
		if ok {
			got = p.BankID
			if p.Scope == ScopeOperator {
				got = ScopeOperator
			}
		}
		if got != c.want {
			t.Errorf("key %q at %v: %q, want %q", c.key, c.at, got, c.want)
		}
	}
	if ConstantTimeEqual("", "") || ConstantTimeEqual("x", "") || !ConstantTimeEqual("s", "s") {
		t.Error("ConstantTimeEqual must refuse empty values")
	}
}

func TestQuerySignature(t *testing.T) {
	f := newFixture(t)
	pub, priv, _ := ed25519.GenerateKey(nil)
	if err := f.reg.Register(f.ctx, Key{KeyID: "KEY-001", OwnerType: OwnerParticipant, OwnerRef: "001", PublicKey: pub, ValidFrom: t0.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	has, _ := f.reg.HasActiveKey(f.ctx, OwnerParticipant, "001")
	hasNot, _ := f.reg.HasActiveKey(f.ctx, OwnerParticipant, "002")
	if !has || hasNot {
		t.Fatalf("HasActiveKey 001=%v 002=%v", has, hasNot)
	}
	h := SignQuery("KEY-001", priv, t0, "GET", "/api/transactions/TX-1", "001", "P01")
	if err := f.v.VerifyQuery(f.ctx, h, "GET", "/api/transactions/TX-2", "001", "P01"); domainerr.Code(err) != "EXTERNAL_SIGNATURE_INVALID" {
		t.Errorf("signature moved to another path: %v", err)
	}
	if err := f.v.VerifyQuery(f.ctx, h, "GET", "/api/transactions/TX-1", "002", "P01"); domainerr.Code(err) != "EXTERNAL_SIGNATURE_INVALID" {
		t.Errorf("key of another bank: %v", err)
	}
	if err := f.v.VerifyQuery(f.ctx, h, "GET", "/api/transactions/TX-1", "001", "P01"); err != nil {
		t.Errorf("valid: %v", err)
	}
	if err := f.v.VerifyQuery(f.ctx, h, "GET", "/api/transactions/TX-1", "001", "P01"); domainerr.Code(err) != "SIGNATURE_REPLAYED" {
		t.Errorf("replay: %v", err)
	}
}

func ExampleCanonical() {
	doc, _ := Decode([]byte(`{"txid":"TX-1","amount":{"value":1200,"currency":"JPY"},"memo":null}`))
	msg, _ := Canonical(doc, LeafPointers(doc))
	fmt.Println(LeafPointers(doc))
	fmt.Println(string(msg))
	// Output:
	// [/amount/currency /amount/value /memo /txid]
	// JPY|1200||TX-1
}

func ExampleRotating_VerifyMAC() {
	r := &Rotating{Current: []byte("new"), Previous: []byte("old"), PreviousUntil: "2026-12-31T00:00:00Z"}
	old := (&Rotating{Current: []byte("old")}).MAC([]byte("msg"))
	fmt.Println(r.VerifyMAC([]byte("msg"), old, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) == nil)
	fmt.Println(domainerr.Code(r.VerifyMAC([]byte("msg"), old, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))))
	fmt.Println(hex.EncodeToString(r.MAC([]byte("msg")))[:8])
	// Output:
	// true
	// INVALID_HMAC
	// 9591148f
}

func FuzzEnvelopeMessage(f *testing.F) {
	f.Add([]byte(`{"request_id":"r","amount":{"value":1,"currency":"JPY"}}`))
	f.Add([]byte(`{"a":[1,2,{"b":null}],"c":true}`))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte(`{"x":1.5}`))
	f.Add([]byte(`{"a~/b":"~1"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e := Envelope{Method: "POST", Path: "/p", Nonce: "n", SigTime: "t", Body: b}
		m1, _, err1 := e.Message()
		m2, _, err2 := e.Message()
		if (err1 == nil) != (err2 == nil) || string(m1) != string(m2) {
			t.Fatalf("not deterministic: %v %v", err1, err2)
		}
		if err1 != nil {
			if _, ok := domainerr.As(err1); !ok {
				t.Fatalf("untyped error %v", err1)
			}
		}
	})
}

// N goroutines racing to use the same nonce: exactly one wins (the claim
// is an INSERT-first atomic claim), every other gets SIGNATURE_REPLAYED.
func TestNonceRace(t *testing.T) {
	f := newFixture(t)
	n := NewDBNonces(f.db, f.clk)
	const N = 16
	errs := make(chan error, N)
	for i := 0; i < N; i++ {
		go func() { errs <- n.Use(f.ctx, "KEY-ZC-1", "race-nonce") }()
	}
	won := 0
	for i := 0; i < N; i++ {
		err := <-errs
		switch domainerr.Code(err) {
		case "":
			if err != nil {
				t.Fatal(err)
			}
			won++
		case "SIGNATURE_REPLAYED":
		default:
			t.Fatalf("unexpected %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d winners, want 1", won)
	}
}
