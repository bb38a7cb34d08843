package gateway

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/zclog"
)

var t0 = time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)

// coord is a test double of the coordinator boundary: it answers Query
// from fixed views and records what Submit was asked.
type coord struct {
	mu      sync.Mutex
	views   map[string]orchestrator.View
	submits []string // issuer|key|schema
	seen    map[string]orchestrator.SubmitResult
}

func (c *coord) Submit(ctx context.Context, req orchestrator.PaymentInitiated, key, issuer string) (orchestrator.SubmitResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.submits = append(c.submits, issuer+"|"+key+"|"+req.SchemaVersion)
	if issuer != req.Payer.BankID {
		return orchestrator.SubmitResult{}, domainerr.New("UNAUTHORIZED", "issuer is not the payer bank", nil)
	}
	if r, ok := c.seen[key]; ok {
		r.Replayed = true
		return r, nil
	}
	r := orchestrator.SubmitResult{TxID: "TX-NEW-" + key, Lane: req.Lane, RequestedLane: req.Lane, State: "RECEIVED", AcceptedAt: clock.Stamp(t0)}
	c.seen[key] = r
	return r, nil
}

func (c *coord) Query(ctx context.Context, txid string) (orchestrator.View, error) {
	v, ok := c.views[txid]
	if !ok {
		return v, domainerr.New("TX_NOT_FOUND", "no transaction "+txid, map[string]any{"txid": txid, "detail": "coordinator wording"})
	}
	return v, nil
}

func (c *coord) TimeoutSweep(ctx context.Context) (orchestrator.SweepResult, error) {
	return orchestrator.SweepResult{ExecTimeouts: 1}, nil
}

type failingAudit struct{ n int }

func (f *failingAudit) Record(context.Context, AccessRecord) error {
	f.n++
	return errors.New("disk full")
}

type fixture struct {
	t      *testing.T
	ctx    context.Context
	clk    *clock.Manual
	db     *store.DB
	reg    *signing.Registry
	srv    *Server
	h      http.Handler
	coord  *coord
	bank   *recorder
	zcPriv ed25519.PrivateKey
	p4Priv ed25519.PrivateKey
	logs   *bytes.Buffer
	cfg    Config
}

// recorder stands in for a bank adapter: it counts the requests that got
// past the signature check.
type recorder struct {
	mu    sync.Mutex
	calls int
	block chan struct{}
	in    chan struct{}
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.calls++
	r.mu.Unlock()
	if r.block != nil {
		r.in <- struct{}{}
		<-r.block
	}
	io.Copy(io.Discard, req.Body)
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"result":"RESERVED","reservation_ref":"H-1"}`)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

const (
	keyOps = "ops-key"
	key001 = "k-001"
	key002 = "k-002"
	key003 = "k-003"
	key004 = "k-004"
	cron   = "cron-secret-value"
)

func newFixture(t *testing.T, mod func(*Config)) *fixture {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "zc.db"), store.Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{t: t, ctx: ctx, clk: clock.NewManual(t0), db: db, logs: &bytes.Buffer{}, bank: &recorder{}}
	f.reg = signing.NewRegistry(db, f.clk)
	zcPub, zcPriv, _ := ed25519.GenerateKey(nil)
	p4Pub, p4Priv, _ := ed25519.GenerateKey(nil)
	f.zcPriv, f.p4Priv = zcPriv, p4Priv
	for _, k := range []signing.Key{
		{KeyID: "KEY-ZC-1", OwnerType: signing.OwnerZC, OwnerRef: "ZC", PublicKey: zcPub, ValidFrom: t0.Add(-time.Hour)},
		{KeyID: "KEY-004", OwnerType: signing.OwnerParticipant, OwnerRef: "004", PublicKey: p4Pub, ValidFrom: t0.Add(-time.Hour)},
	} {
		if err := f.reg.Register(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	preg := participants.New(db, f.clk)
	for _, id := range []string{"001", "002", "003", "004"} {
		if _, err := preg.Create(ctx, participants.Participant{BankID: id, BankName: "Bank " + id, IsActive: true}); err != nil {
			t.Fatal(err)
		}
	}
	f.coord = &coord{seen: map[string]orchestrator.SubmitResult{}, views: map[string]orchestrator.View{
		"TX-1": {TxID: "TX-1", Lane: "EXPRESS", State: "SETTLED", Amount: bankapi.Amount{Value: 1200, Currency: "JPY"},
			PayerBankID: "001", PayeeBankID: "002", AsOf: clock.Stamp(t0), NextActionHint: orchestrator.HintWait,
			Chains: []orchestrator.Chain{{Key: "TX:TX-1", MaxSeq: 42}, {Key: "DNS:DNS-JPY-20261202-01", MaxSeq: 0}}},
		"TX-4": {TxID: "TX-4", Lane: "EXPRESS", State: "RECEIVED", PayerBankID: "004", PayeeBankID: "001", NextActionHint: orchestrator.HintWait},
	}}
	rot := func(s string) *signing.Rotating { return &signing.Rotating{Current: []byte(s)} }
	f.cfg = Config{
		Coordinator: f.coord, DB: db, Participants: preg, Banks: map[string]http.Handler{"001": f.bank},
		Ingress: &signing.Verifier{Registry: f.reg, Nonces: signing.NewDBNonces(db, f.clk), Clock: f.clk, OwnerType: signing.OwnerZC,
			HMAC: &signing.Rotating{Current: []byte("hmac-new"), Previous: []byte("hmac-old"), PreviousUntil: "2026-12-02T00:30:00Z"}},
		Queries: &signing.Verifier{Registry: f.reg, Nonces: signing.NewDBNonces(db, f.clk), Clock: f.clk},
		APIKeys: &signing.APIKeys{Keys: []signing.APIKey{
			{Principal: signing.Principal{Scope: signing.ScopeOperator, Name: "ops"}, Secret: rot(keyOps)},
			{Principal: signing.Principal{Scope: signing.ScopeParticipant, BankID: "001"}, Secret: rot(key001)},
			{Principal: signing.Principal{Scope: signing.ScopeParticipant, BankID: "002"}, Secret: rot(key002)},
			{Principal: signing.Principal{Scope: signing.ScopeParticipant, BankID: "003"}, Secret: rot(key003)},
			{Principal: signing.Principal{Scope: signing.ScopeParticipant, BankID: "004"}, Secret: rot(key004)},
		}},
		CronSecret: cron, Clock: f.clk, Logger: zclog.New(f.logs, zclog.Options{}),
	}
	if mod != nil {
		mod(&f.cfg)
	}
	if f.srv, err = New(f.cfg); err != nil {
		t.Fatal(err)
	}
	f.h = f.srv.Handler()
	return f
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return m
}

func (r resp) code(t *testing.T) string {
	t.Helper()
	if r.status < 400 {
		return ""
	}
	c, _ := r.json(t)["reason_code"].(string)
	return c
}

// do serves one request; a body is sent as application/json unless hdr
// names a Content-Type.
func (f *fixture) do(method, path string, hdr map[string]string, body string) resp {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	return resp{status: w.Code, header: w.Header(), body: w.Body.Bytes()}
}

func TestRequestIDOnEveryResponse(t *testing.T) {
	f := newFixture(t, nil)
	for _, c := range []struct {
		method, path string
		hdr          map[string]string
	}{
		{"GET", "/api/banks", map[string]string{"X-Api-Key": key001}},
		{"GET", "/api/banks", nil},
		{"GET", "/nowhere", nil},
		{"GET", "/internal/metrics", nil},
		{"POST", "/bank/001/zc-ingress/reserve-funds", nil},
		{"GET", "/bank/001/zc-ingress/reserve-funds", nil}, // wrong method: catalog JSON, not the mux's text 405
		{"DELETE", "/api/transfers", map[string]string{"X-Api-Key": key001}},
	} {
		r := f.do(c.method, c.path, c.hdr, "")
		id := r.header.Get("X-Request-Id")
		if !strings.HasPrefix(id, "req-") {
			t.Errorf("%s %s: X-Request-Id %q", c.method, c.path, id)
		}
		if r.status >= 400 && r.json(t)["request_id"] != id {
			t.Errorf("%s %s: body request_id %v != header %q", c.method, c.path, r.json(t)["request_id"], id)
		}
	}
	r := f.do("GET", "/api/transactions/TX-404", map[string]string{"X-Api-Key": keyOps, "X-Purpose-Code": "P01", "X-Request-Id": "client-trace-7"}, "")
	if r.header.Get("X-Request-Id") != "client-trace-7" || r.json(t)["request_id"] != "client-trace-7" {
		t.Errorf("client request id not honoured: %v / %s", r.header, r.body)
	}
	if r := f.do("GET", "/api/banks", map[string]string{"X-Api-Key": key001, "X-Request-Id": "bad id\r\nx"}, ""); !strings.HasPrefix(r.header.Get("X-Request-Id"), "req-") {
		t.Errorf("unusable client id echoed: %q", r.header.Get("X-Request-Id"))
	}
}

func TestInternalRequiresCronSecret(t *testing.T) {
	f := newFixture(t, nil)
	for _, c := range []struct {
		name   string
		secret string
		status int
	}{{"missing", "", 403}, {"wrong", "nope", 403}, {"prefix", cron[:5], 403}, {"valid", cron, 200}} {
		hdr := map[string]string{}
		if c.secret != "" {
			hdr["X-Cron-Secret"] = c.secret
		}
		if r := f.do("GET", "/internal/metrics", hdr, ""); r.status != c.status {
			t.Errorf("metrics with %s secret: %d", c.name, r.status)
		}
		if r := f.do("POST", "/internal/cron/timeout-sweep", hdr, ""); r.status != c.status {
			t.Errorf("timeout-sweep with %s secret: %d %s", c.name, r.status, r.body)
		}
	}
	r := f.do("GET", "/internal/metrics", map[string]string{"X-Cron-Secret": cron}, "")
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") ||
		!bytes.Contains(r.body, []byte(`zcgw_http_requests_total{method="GET",route="GET /internal/metrics",status="403"} 3`)) ||
		!bytes.Contains(r.body, []byte(`zcgw_cases_open{status="OPEN"} 0`)) {
		t.Errorf("metrics: %s\n%s", ct, r.body)
	}
	j := f.do("GET", "/internal/metrics?format=json", map[string]string{"X-Cron-Secret": cron}, "")
	if j.status != 200 || j.json(t)["zcgw_http_requests_total"] == nil || j.json(t)["zcgw_db_statements_total"] == nil {
		t.Errorf("json metrics: %d %s", j.status, j.body)
	}
	// Unset secret on the server: fail-closed, even for an empty header.
	g := newFixture(t, func(c *Config) { c.CronSecret = "" })
	for _, s := range []string{"", "anything"} {
		if r := g.do("GET", "/internal/metrics", map[string]string{"X-Cron-Secret": s}, ""); r.status != 403 {
			t.Errorf("unset secret, header %q: %d", s, r.status)
		}
	}
}

func TestPerimeterAuthentication(t *testing.T) {
	f := newFixture(t, nil)
	cases := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"no credentials", nil, 401},
		{"Origin header is not a credential", map[string]string{"Origin": "http://example.com"}, 401},
		{"bad key", map[string]string{"X-Api-Key": "nope"}, 401},
		{"bearer", map[string]string{"Authorization": "Bearer " + key001}, 200},
		{"x-api-key", map[string]string{"X-Api-Key": key002}, 200},
		{"bad cron secret", map[string]string{"X-Cron-Secret": "nope"}, 401},
	}
	for _, c := range cases {
		if r := f.do("GET", "/api/banks", c.hdr, ""); r.status != c.want {
			t.Errorf("%s: %d %s", c.name, r.status, r.body)
		}
	}
	// Explicit opt-in: a same-origin read from a loopback peer to this
	// node's address passes, logged; the full rules are in
	// TestUnauthenticatedUIIsLocalAndReadOnly.
	u := newFixture(t, func(c *Config) { c.AllowUnauthenticatedUI = true; c.UIHosts = []string{"127.0.0.1:8080"} })
	if r := u.doFrom("127.0.0.1:5000", "GET", "http://127.0.0.1:8080/api/banks", map[string]string{"Origin": "http://127.0.0.1:8080"}, ""); r.status != 200 {
		t.Errorf("same-origin UI request: %d %s", r.status, r.body)
	}
	if r := u.doFrom("127.0.0.1:5000", "GET", "http://127.0.0.1:8080/api/banks", map[string]string{"Origin": "http://evil.example"}, ""); r.status != 401 {
		t.Errorf("cross-origin UI request: %d", r.status)
	}
	if n := strings.Count(u.logs.String(), `"event":"http.unauthenticated_ui_access"`); n != 1 {
		t.Errorf("%d unauthenticated-access warnings, want 1:\n%s", n, u.logs.String())
	}
	if strings.Contains(f.logs.String(), "unauthenticated_ui_access") {
		t.Error("default deployment logged unauthenticated access")
	}
}

func (f *fixture) signedQuery(path, bank, purpose string, at time.Time) map[string]string {
	h := signing.SignQuery("KEY-004", f.p4Priv, at, "GET", path, bank, purpose)
	m := map[string]string{}
	for k := range h {
		m[k] = h.Get(k)
	}
	return m
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// The authorization matrix: roles × routes × party / non-party.
func TestAuthorizationMatrix(t *testing.T) {
	f := newFixture(t, nil)
	p01 := map[string]string{"X-Purpose-Code": "P01"}
	roles := map[string]map[string]string{
		"operator":           merge(p01, map[string]string{"X-Api-Key": keyOps}),
		"cron operator":      merge(p01, map[string]string{"X-Cron-Secret": cron, "X-Bank-Id": "003"}), // operator wins
		"payer 001":          merge(p01, map[string]string{"X-Api-Key": key001}),
		"payee 002":          merge(p01, map[string]string{"X-Api-Key": key002, "X-Bank-Id": "002"}),
		"non-party 003":      merge(p01, map[string]string{"X-Api-Key": key003}),
		"003 claiming 001":   merge(p01, map[string]string{"X-Api-Key": key003, "X-Bank-Id": "001"}),
		"keyed 004 unsigned": merge(p01, map[string]string{"X-Api-Key": key004}),
		"no purpose (ops)":   {"X-Api-Key": keyOps},
		"bad purpose (001)":  {"X-Api-Key": key001, "X-Purpose-Code": "P99"},
	}
	type want struct {
		status int
		code   string
	}
	ok, nf := want{200, ""}, want{404, "TX_NOT_FOUND"}
	cross := want{403, "CROSS_PARTICIPANT_SCOPE"}
	purpose := want{403, "PURPOSE_CODE_REQUIRED"}
	unid := want{403, "REQUESTER_UNIDENTIFIED"}
	sigreq := want{403, "PARTICIPANT_SIGNATURE_REQUIRED"}
	routes := []string{"/api/transactions/TX-1", "/api/transactions/TX-1/events", "/api/transactions/TX-1/verify",
		"/api/transactions/TX-NONE", "/api/transactions", "/api/participants", "/api/participants/001"}
	matrix := map[string][]want{
		//                   tx   events verify none  list   parts  part
		"operator":           {ok, ok, ok, nf, ok, ok, ok},
		"cron operator":      {ok, ok, ok, nf, ok, ok, ok},
		"payer 001":          {ok, ok, ok, nf, cross, cross, cross},
		"payee 002":          {ok, ok, ok, nf, cross, cross, cross},
		"non-party 003":      {nf, nf, nf, nf, cross, cross, cross},
		"003 claiming 001":   {unid, unid, unid, unid, unid, unid, unid},
		"keyed 004 unsigned": {sigreq, sigreq, sigreq, sigreq, sigreq, sigreq, sigreq},
		"no purpose (ops)":   {purpose, purpose, purpose, purpose, purpose, purpose, purpose},
		"bad purpose (001)":  {purpose, purpose, purpose, purpose, purpose, purpose, purpose},
	}
	for role, hdr := range roles {
		for i, path := range routes {
			w := matrix[role][i]
			r := f.do("GET", path, hdr, "")
			if r.status != w.status || r.code(t) != w.code {
				t.Errorf("%s GET %s: %d %s, want %d %s", role, path, r.status, r.code(t), w.status, w.code)
			}
		}
	}
	// Signed 004: its own transfer is readable, another bank's is a 404, lists are 403.
	for _, c := range []struct {
		path string
		w    want
	}{{"/api/transactions/TX-4", ok}, {"/api/transactions/TX-1", nf}, {"/api/transactions", cross}} {
		r := f.do("GET", c.path, merge(p01, map[string]string{"X-Api-Key": key004}, f.signedQuery(c.path, "004", "P01", t0)), "")
		if r.status != c.w.status || r.code(t) != c.w.code {
			t.Errorf("signed 004 GET %s: %d %s", c.path, r.status, r.body)
		}
	}
	// Public directory: any authenticated caller, no purpose code needed.
	if r := f.do("GET", "/api/banks", map[string]string{"X-Api-Key": key003}, ""); r.status != 200 || len(r.json(t)["banks"].([]any)) != 4 {
		t.Errorf("/api/banks: %d %s", r.status, r.body)
	}
	// Participant administration writes: operator scope only. A
	// participant is authenticated but not allowed: 403; no credentials: 401.
	body := `{"bank_id":"009","bank_name":"Bank 009","is_active":true}`
	if r := f.do("POST", "/api/participants", map[string]string{"X-Api-Key": key001}, body); r.status != 403 || r.code(t) != "CROSS_PARTICIPANT_SCOPE" {
		t.Errorf("participant creating a participant: %d %s", r.status, r.body)
	}
	if r := f.do("PUT", "/api/participants/001", map[string]string{"X-Api-Key": key001}, body); r.status != 403 || r.code(t) != "CROSS_PARTICIPANT_SCOPE" {
		t.Errorf("participant updating a participant: %d %s", r.status, r.body)
	}
	if r := f.do("POST", "/api/participants", nil, body); r.status != 401 || r.code(t) != "UNAUTHORIZED" {
		t.Errorf("no credentials creating a participant: %d %s", r.status, r.body)
	}
	if r := f.do("POST", "/api/participants", map[string]string{"X-Api-Key": keyOps}, body); r.status != 201 || r.json(t)["bank_id"] != "009" {
		t.Errorf("operator creating a participant: %d %s", r.status, r.body)
	}
	if r := f.do("PUT", "/api/participants/009", map[string]string{"X-Api-Key": keyOps}, `{"bank_name":"Bank Nine","is_active":true}`); r.status != 200 || r.json(t)["bank_name"] != "Bank Nine" {
		t.Errorf("operator updating a participant: %d %s", r.status, r.body)
	}
	// A limit is a PR-* value: it changes through the parameter ledger only.
	if r := f.do("PUT", "/api/participants/009", map[string]string{"X-Api-Key": keyOps}, `{"bank_name":"Bank Nine","is_active":true,"tx_amount_limit":5000}`); r.status != 400 || r.code(t) != "INVALID_REQUEST" || !strings.Contains(string(r.body), "PR-TX-AMOUNT-LIMIT") {
		t.Errorf("operator changing a limit through PUT: %d %s", r.status, r.body)
	}
}

// A non-party's 404 is byte-identical to a missing transaction's 404.
func TestNonPartyNotFoundIsIdentical(t *testing.T) {
	f := newFixture(t, nil)
	hdr := map[string]string{"X-Api-Key": key003, "X-Purpose-Code": "P01", "X-Request-Id": "same-id"}
	exists := f.do("GET", "/api/transactions/TX-1", hdr, "")
	missing := f.do("GET", "/api/transactions/TX-1", map[string]string{"X-Api-Key": keyOps, "X-Purpose-Code": "P01", "X-Request-Id": "same-id"}, "")
	if missing.status != 200 {
		t.Fatalf("operator read: %d", missing.status)
	}
	f.coord.views["TX-2"] = f.coord.views["TX-1"]
	delete(f.coord.views, "TX-1") // TX-1 no longer exists at all
	gone := f.do("GET", "/api/transactions/TX-1", hdr, "")
	if exists.status != 404 || !bytes.Equal(exists.body, gone.body) || exists.header.Get("Content-Type") != gone.header.Get("Content-Type") {
		t.Fatalf("non-party body differs from not-found:\n%d %s\n%d %s", exists.status, exists.body, gone.status, gone.body)
	}
	for _, sub := range []string{"/events", "/verify"} {
		f.coord.views["TX-1"] = f.coord.views["TX-2"]
		a := f.do("GET", "/api/transactions/TX-1"+sub, hdr, "")
		delete(f.coord.views, "TX-1")
		b := f.do("GET", "/api/transactions/TX-1"+sub, hdr, "")
		if a.status != 404 || !bytes.Equal(a.body, b.body) {
			t.Errorf("%s: %s vs %s", sub, a.body, b.body)
		}
	}
}

func (f *fixture) auditRows() []AccessRecord {
	f.t.Helper()
	var out []AccessRecord
	err := f.db.Read(f.ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(f.ctx, `SELECT subject_type, COALESCE(subject_id,''), COALESCE(purpose_code,''), resource, decision, COALESCE(reason_code,'')
			FROM AccessAuditLog ORDER BY occurred_at, rowid`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r AccessRecord
			if err := rows.Scan(&r.SubjectType, &r.SubjectID, &r.PurposeCode, &r.Resource, &r.Decision, &r.ReasonCode); err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

func TestAccessAuditLogRecordsPermitsAndDenials(t *testing.T) {
	f := newFixture(t, nil)
	f.do("GET", "/api/transactions/TX-1", map[string]string{"X-Api-Key": key001, "X-Purpose-Code": "P02"}, "")
	f.do("GET", "/api/transactions/TX-1", map[string]string{"X-Api-Key": key003, "X-Purpose-Code": "P02"}, "")
	f.do("GET", "/api/transactions/TX-1", map[string]string{"X-Api-Key": key001}, "")
	f.do("GET", "/api/transactions", map[string]string{"X-Api-Key": key002, "X-Purpose-Code": "P03"}, "")
	f.do("GET", "/api/transactions", map[string]string{"X-Api-Key": keyOps, "X-Purpose-Code": "P03"}, "")
	path := "/api/transactions/TX-4"
	f.do("GET", path, merge(map[string]string{"X-Api-Key": key004, "X-Purpose-Code": "P01"}, f.signedQuery(path, "004", "P01", t0)), "")
	want := []AccessRecord{
		{SubjectParticipant, "001 (unauthenticated)", "P02", "transactions/TX-1", Permit, ""},
		{SubjectParticipant, "003 (unauthenticated)", "P02", "transactions/TX-1", Deny, "NOT_A_PARTY"},
		{SubjectParticipant, "001 (unauthenticated)", "", "transactions/TX-1", Deny, "PURPOSE_CODE_REQUIRED"},
		{SubjectParticipant, "002 (unauthenticated)", "P03", "transactions", Deny, "CROSS_PARTICIPANT_SCOPE"},
		{SubjectOperator, "api-key:ops", "P03", "transactions", Permit, ""},
		{SubjectParticipant, "004", "P01", "transactions/TX-4", Permit, ""},
	}
	got := f.auditRows()
	if len(got) != len(want) {
		t.Fatalf("%d audit rows, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestAuditFailureNeverFailsTheQuery(t *testing.T) {
	fa := &failingAudit{}
	f := newFixture(t, func(c *Config) { c.Audit = fa })
	r := f.do("GET", "/api/transactions/TX-1", map[string]string{"X-Api-Key": key001, "X-Purpose-Code": "P01"}, "")
	if r.status != 200 || r.json(t)["txid"] != "TX-1" {
		t.Fatalf("query failed with the audit log down: %d %s", r.status, r.body)
	}
	if r := f.do("GET", "/api/transactions/TX-1", map[string]string{"X-Api-Key": key003, "X-Purpose-Code": "P01"}, ""); r.status != 404 {
		t.Fatalf("denial changed with the audit log down: %d", r.status)
	}
	if fa.n != 2 || !strings.Contains(f.logs.String(), `"event":"access.audit_write_failed"`) {
		t.Fatalf("audit attempts %d, logs:\n%s", fa.n, f.logs.String())
	}
	m := f.do("GET", "/internal/metrics", map[string]string{"X-Cron-Secret": cron}, "")
	if !bytes.Contains(m.body, []byte("zcgw_access_audit_write_failures_total 2")) {
		t.Errorf("metrics:\n%s", m.body)
	}
}

func TestParticipantSignature(t *testing.T) {
	f := newFixture(t, nil)
	path := "/api/transactions/TX-4"
	base := map[string]string{"X-Api-Key": key004, "X-Purpose-Code": "P01"}
	good := f.signedQuery(path, "004", "P01", t0)
	if r := f.do("GET", path, merge(base, good), ""); r.status != 200 {
		t.Fatalf("signed: %d %s", r.status, r.body)
	}
	_, otherPriv, _ := ed25519.GenerateKey(nil)
	forged := signing.SignQuery("KEY-004", otherPriv, t0, "GET", path, "004", "P01")
	cases := []struct {
		name  string
		hdr   map[string]string
		cause string
	}{
		{"replay", good, "SIGNATURE_REPLAYED"},
		{"signed for another path", f.signedQuery("/api/transactions/TX-1", "004", "P01", t0), "EXTERNAL_SIGNATURE_INVALID"},
		{"signed for another purpose", f.signedQuery(path, "004", "P02", t0), "EXTERNAL_SIGNATURE_INVALID"},
		{"skewed", f.signedQuery(path, "004", "P01", t0.Add(-10*time.Minute)), "TIMESTAMP_SKEW"},
		{"forged", map[string]string{"X-Participant-Key-Id": "KEY-004", "X-Participant-Sig-Nonce": forged.Get("X-Participant-Sig-Nonce"),
			"X-Participant-Sig-Time": forged.Get("X-Participant-Sig-Time"), "X-Participant-Signature": forged.Get("X-Participant-Signature")}, "EXTERNAL_SIGNATURE_INVALID"},
	}
	for _, c := range cases {
		r := f.do("GET", path, merge(base, c.hdr), "")
		d, _ := r.json(t)["details"].(map[string]any)
		if r.status != 403 || r.code(t) != "PARTICIPANT_SIGNATURE_INVALID" || d["cause"] != c.cause {
			t.Errorf("%s: %d %s", c.name, r.status, r.body)
		}
	}
	// Another bank using 004's key: the key's owner must be the caller.
	r := f.do("GET", "/api/transactions/TX-1", merge(map[string]string{"X-Api-Key": key001, "X-Purpose-Code": "P01"}, f.signedQuery("/api/transactions/TX-1", "001", "P01", t0)), "")
	if r.status != 403 || r.code(t) != "PARTICIPANT_SIGNATURE_INVALID" {
		t.Errorf("001 with 004's key: %d %s", r.status, r.body)
	}
	if !strings.Contains(f.logs.String(), `"event":"access.violation_detected"`) {
		t.Error("no violation logged")
	}
	var violations int
	f.db.Read(f.ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(f.ctx, `SELECT COUNT(*) FROM FinalityLog WHERE event_type = 'DataAccessViolationDetected' AND txid IS NULL AND gtid IS NULL`).Scan(&violations)
	})
	// One GLOBAL entry per participant and ViolationWindow; the window row
	// counts every violation (docs/gateway.md "Audit").
	if violations != 2 {
		t.Errorf("%d DataAccessViolationDetected entries, want 2 (004's window and 001's)", violations)
	}
	var n004, n001 int
	f.db.Read(f.ctx, func(tx *store.Tx) error {
		tx.QueryRowContext(f.ctx, `SELECT violations FROM AccessViolationWindows WHERE bank_id = '004'`).Scan(&n004)
		return tx.QueryRowContext(f.ctx, `SELECT violations FROM AccessViolationWindows WHERE bank_id = '001'`).Scan(&n001)
	})
	if n004 != len(cases) || n001 != 1 {
		t.Errorf("window counts 004=%d 001=%d, want %d and 1", n004, n001, len(cases))
	}
	// Revoking the only key lifts enforcement (the registry decides).
	if err := f.reg.Revoke(f.ctx, "KEY-004", t0.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if r := f.do("GET", path, base, ""); r.status != 200 {
		t.Errorf("no active key, unsigned: %d %s", r.status, r.body)
	}
}

func (f *fixture) ingressHeaders(keyID string, priv ed25519.PrivateKey, at time.Time, body string) map[string]string {
	h, err := signing.Ed25519Signer{KeyID: keyID, PrivateKey: priv, Clock: clock.NewManual(at)}.Sign("POST", "/bank/001/zc-ingress/reserve-funds", []byte(body))
	if err != nil {
		f.t.Fatal(err)
	}
	m := map[string]string{}
	for k := range h {
		m[k] = h.Get(k)
	}
	return m
}

func hmacHeaders(secret string, at time.Time, body string) map[string]string {
	h, _ := signing.HMACSigner{Secret: &signing.Rotating{Current: []byte(secret)}, Clock: clock.NewManual(at)}.Sign("POST", "/bank/001/zc-ingress/reserve-funds", []byte(body))
	m := map[string]string{}
	for k := range h {
		m[k] = h.Get(k)
	}
	return m
}

func TestIngressSignatureFailures(t *testing.T) {
	f := newFixture(t, nil)
	body := `{"request_id":"r1","txid":"TX-1","amount":{"value":1200,"currency":"JPY"},"account_hash":"h:a"}`
	_, otherPriv, _ := ed25519.GenerateKey(nil)
	revPub, revPriv, _ := ed25519.GenerateKey(nil)
	if err := f.reg.Register(f.ctx, signing.Key{KeyID: "KEY-ZC-OLD", OwnerType: signing.OwnerZC, OwnerRef: "ZC", PublicKey: revPub, ValidFrom: t0.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.Revoke(f.ctx, "KEY-ZC-OLD", t0.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	good := f.ingressHeaders("KEY-ZC-1", f.zcPriv, t0, body)
	cases := []struct {
		name   string
		hdr    map[string]string
		body   string
		status int
		code   string
		cause  string
	}{
		{"valid Ed25519", good, body, 200, "", ""},
		{"replay (same key and nonce)", good, body, 401, "INVALID_SIGNATURE", "SIGNATURE_REPLAYED"},
		{"bad signature", f.ingressHeaders("KEY-ZC-1", otherPriv, t0, body), body, 401, "INVALID_SIGNATURE", "EXTERNAL_SIGNATURE_INVALID"},
		{"body changed after signing", f.ingressHeaders("KEY-ZC-1", f.zcPriv, t0, body), strings.Replace(body, "1200", "9999", 1), 401, "INVALID_SIGNATURE", "EXTERNAL_SIGNATURE_INVALID"},
		{"unknown key", f.ingressHeaders("KEY-ZC-NOPE", f.zcPriv, t0, body), body, 401, "INVALID_SIGNATURE", "KEY_NOT_FOUND"},
		{"revoked key", f.ingressHeaders("KEY-ZC-OLD", revPriv, t0, body), body, 401, "INVALID_SIGNATURE", "KEY_REVOKED"},
		{"participant key", f.ingressHeaders("KEY-004", f.p4Priv, t0, body), body, 401, "INVALID_SIGNATURE", "ZC_SIGNATURE_WRONG_OWNER"},
		{"skew", f.ingressHeaders("KEY-ZC-1", f.zcPriv, t0.Add(-6*time.Minute), body), body, 401, "INVALID_SIGNATURE", "TIMESTAMP_SKEW"},
		{"HMAC current", hmacHeaders("hmac-new", t0, body), body, 200, "", ""},
		{"HMAC previous after its window closed", hmacHeaders("hmac-old", t0, body), body, 401, "INVALID_SIGNATURE", "INVALID_HMAC"},
		{"HMAC unsigned", map[string]string{}, body, 401, "MISSING_SIGNATURE", ""},
	}
	calls := 0
	for _, c := range cases {
		r := f.do("POST", "/bank/001/zc-ingress/reserve-funds", c.hdr, c.body)
		var cause any
		if r.status >= 400 {
			cause = r.json(t)["details"].(map[string]any)["cause"]
		} else {
			calls++
		}
		if r.status != c.status || r.code(t) != c.code || (c.cause != "" && cause != c.cause) {
			t.Errorf("%s: %d %s", c.name, r.status, r.body)
		}
		if f.bank.count() != calls {
			t.Errorf("%s: the adapter saw %d requests, want %d", c.name, f.bank.count(), calls)
		}
	}
	// Previous HMAC secret: accepted inside its window, refused without a deadline.
	for _, c := range []struct {
		name  string
		until string
		want  int
	}{{"inside window", "2026-12-02T01:30:00Z", 200}, {"no deadline", "", 401}} {
		g := newFixture(t, func(cfg *Config) {
			cfg.Ingress.HMAC = &signing.Rotating{Current: []byte("hmac-new"), Previous: []byte("hmac-old"), PreviousUntil: c.until}
		})
		if r := g.do("POST", "/bank/001/zc-ingress/reserve-funds", hmacHeaders("hmac-old", t0, body), body); r.status != c.want {
			t.Errorf("HMAC previous %s: %d %s", c.name, r.status, r.body)
		}
	}
	// A verified request for a bank no adapter serves (only ZC can sign
	// one): 404. Unverified ones: TestIngressHidesWhichBanksExist.
	body999 := `{"request_id":"r9"}`
	h, _ := signing.Ed25519Signer{KeyID: "KEY-ZC-1", PrivateKey: f.zcPriv, Clock: f.clk}.Sign("POST", "/bank/999/zc-ingress/reserve-funds", []byte(body999))
	hdr := map[string]string{}
	for k := range h {
		hdr[k] = h.Get(k)
	}
	if r := f.do("POST", "/bank/999/zc-ingress/reserve-funds", hdr, body999); r.status != 404 || r.code(t) != "PARTICIPANT_NOT_FOUND" {
		t.Errorf("unknown bank, verified: %d %s", r.status, r.body)
	}
}

// doFrom serves one request from the peer remote (host:port) to url
// (whose host becomes the Host header).
func (f *fixture) doFrom(remote, method, url string, hdr map[string]string, body string) resp {
	req := httptest.NewRequest(method, url, strings.NewReader(body))
	req.RemoteAddr = remote
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	return resp{status: w.Code, header: w.Header(), body: w.Body.Bytes()}
}

func TestPostTransfer(t *testing.T) {
	f := newFixture(t, nil)
	body := func(schema, key string) string {
		return `{"lane":"EXPRESS","amount":{"value":1200,"currency":"JPY"},"payer":{"bank_id":"001","account_hash":"h:a"},` +
			`"payee":{"bank_id":"002","account_hash":"h:b"},"purpose":"P2P","schema_version":"` + schema + `","idempotency_key":"` + key + `"}`
	}
	p1 := map[string]string{"X-Api-Key": key001}
	cases := []struct {
		name   string
		hdr    map[string]string
		body   string
		status int
		code   string
	}{
		{"current schema n", p1, body(SchemaCurrent, "k1"), 201, ""},
		{"replay", p1, body(SchemaCurrent, "k1"), 200, ""},
		{"previous schema n-1", p1, body(SchemaPrevious, "k2"), 201, ""},
		{"older schema n-2", p1, body("0.9", "k3"), 400, "INVALID_REQUEST"},
		{"future schema", p1, body("2.0", "k4"), 400, "INVALID_REQUEST"},
		{"no schema", p1, body("", "k5"), 400, "MISSING_FIELD"},
		{"no idempotency key", p1, body(SchemaCurrent, ""), 400, "MISSING_FIELD"},
		{"unknown field", p1, strings.Replace(body(SchemaCurrent, "k6"), `"purpose"`, `"purpos"`, 1), 400, "INVALID_REQUEST"},
		{"not JSON", p1, `{"lane":`, 400, "INVALID_REQUEST"},
		{"operator cannot originate", map[string]string{"X-Api-Key": keyOps}, body(SchemaCurrent, "k7"), 403, "UNAUTHORIZED"},
		{"payee bank as issuer", map[string]string{"X-Api-Key": key002}, body(SchemaCurrent, "k8"), 401, "UNAUTHORIZED"},
		{"unauthenticated", nil, body(SchemaCurrent, "k9"), 401, "UNAUTHORIZED"},
	}
	var first []byte
	for _, c := range cases {
		r := f.do("POST", "/api/transfers", c.hdr, c.body)
		if r.status != c.status || r.code(t) != c.code {
			t.Errorf("%s: %d %s", c.name, r.status, r.body)
		}
		switch c.name {
		case "current schema n":
			first = r.body
		case "replay":
			if !bytes.Equal(r.body, first) || r.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("replay body %s vs %s, header %q", r.body, first, r.header.Get("Idempotent-Replayed"))
			}
		}
	}
	want := []string{"001|k1|1.1", "001|k1|1.1", "001|k2|1.0", "002|k8|1.1"}
	if strings.Join(f.coord.submits, ",") != strings.Join(want, ",") {
		t.Errorf("coordinator saw %v, want %v", f.coord.submits, want)
	}
}

func TestQueryResponseShape(t *testing.T) {
	f := newFixture(t, nil)
	r := f.do("GET", "/api/transactions/TX-1", map[string]string{"X-Api-Key": keyOps, "X-Purpose-Code": "P01"}, "")
	m := r.json(t)
	shards := m["watermark_detail"].(map[string]any)["shards"].(map[string]any)
	if m["freshness_level"] != "GREEN" || m["watermark"] != float64(42) || shards["TX:TX-1"] != float64(42) ||
		shards["DNS:DNS-JPY-20261202-01"] != float64(0) || m["next_action_hint"] != "WAIT" || m["as_of"] == "" {
		t.Fatalf("query response %s", r.body)
	}
	for _, k := range []string{"decision", "execution", "case", "state", "txid"} {
		if _, ok := m[k]; !ok {
			t.Errorf("missing %s", k)
		}
	}
	for _, c := range []struct {
		lag  time.Duration
		want string
	}{{0, "GREEN"}, {9999 * time.Millisecond, "GREEN"}, {10 * time.Second, "YELLOW"}, {59999 * time.Millisecond, "YELLOW"}, {60 * time.Second, "RED"}, {time.Hour, "RED"}} {
		if got := Freshness(c.lag, DefaultFreshnessRed); got != c.want {
			t.Errorf("Freshness(%v) = %s, want %s", c.lag, got, c.want)
		}
	}
	v := f.coord.views["TX-1"]
	v.NextActionHint, v.Chains = "CALL_US", nil
	q := NewQueryResponse(v, DefaultFreshnessRed)
	if q.NextActionHint != "WAIT" || q.WatermarkDetail.Shards["TX:TX-1"] != 0 || q.Watermark != 0 {
		t.Errorf("closed hint set / own chain: %+v", q)
	}
	ev := f.do("GET", "/api/transactions/TX-1/events", map[string]string{"X-Api-Key": key001, "X-Purpose-Code": "P01"}, "")
	vr := f.do("GET", "/api/transactions/TX-1/verify", map[string]string{"X-Api-Key": key001, "X-Purpose-Code": "P01"}, "")
	if ev.status != 200 || vr.status != 200 || vr.json(t)["intact"] != true {
		t.Errorf("events %d %s / verify %d %s", ev.status, ev.body, vr.status, vr.body)
	}
}

// Graceful shutdown: a request in flight when shutdown starts completes;
// new connections are refused; Serve returns nil.
func TestGracefulShutdownDrainsInFlight(t *testing.T) {
	f := newFixture(t, nil)
	f.bank.block, f.bank.in = make(chan struct{}), make(chan struct{}, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.srv.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String()
	body := `{"request_id":"r1","txid":"TX-1","amount":{"value":1200,"currency":"JPY"},"account_hash":"h:a"}`
	type result struct {
		status int
		body   string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest("POST", url+"/bank/001/zc-ingress/reserve-funds", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range f.ingressHeaders("KEY-ZC-1", f.zcPriv, t0, body) {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		done <- result{status: res.StatusCode, body: string(b)}
	}()
	<-f.bank.in // the request is inside the handler
	cancel()    // shutdown starts
	deadline := time.Now().Add(2 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 100*time.Millisecond)
		if err != nil {
			break // listener closed: no new connections
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("listener still accepting during shutdown")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-served:
		t.Fatalf("Serve returned before the in-flight request finished: %v", err)
	default:
	}
	close(f.bank.block)
	r := <-done
	if r.err != nil || r.status != 200 || !strings.Contains(r.body, "RESERVED") {
		t.Fatalf("in-flight request: %+v", r)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestPanicBecomesCatalogError(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Banks = map[string]http.Handler{"001": http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })}
	})
	body := `{"request_id":"r1"}`
	r := f.do("POST", "/bank/001/zc-ingress/reserve-funds", f.ingressHeaders("KEY-ZC-1", f.zcPriv, t0, body), body)
	if r.status != 500 || r.code(t) != "INVARIANT_VIOLATION" || r.header.Get("X-Request-Id") == "" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}
