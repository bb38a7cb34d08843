package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
)

// newRealFixture is the gateway over a real orchestrator on the fixture's
// database (Submit writes Transactions, Query reads them).
func newRealFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixture(t, func(c *Config) {
		o, err := orchestrator.New(orchestrator.Config{DB: c.DB, Clock: c.Clock})
		if err != nil {
			t.Fatal(err)
		}
		c.Coordinator = o
	})
}

func (f *fixture) countRows(q string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.db.Read(f.ctx, func(tx *store.Tx) error { return tx.QueryRowContext(f.ctx, q, args...).Scan(&n) }); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// transferBody is a POST /api/transfers body from payer to payee with the
// given extra members (raw JSON, each `"k":v`).
func transferBody(payer, payee string, extra ...string) string {
	b := `{"schema_version":"1.1","lane":"EXPRESS","amount":{"value":1200,"currency":"JPY"},` +
		`"payer":{"bank_id":"` + payer + `","account_hash":"h:payer-acct","vault_ref":"VLT-payer-secret"},` +
		`"payee":{"bank_id":"` + payee + `","account_hash":"h:payee-acct"}`
	for _, e := range extra {
		b += "," + e
	}
	return b + "}"
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Issue 10 item 2: every identifier of POST /api/transfers follows the one
// grammar; a refusal is 400 INVALID_REQUEST naming the field and writes no
// transaction row.
func TestTransferIdentifiersAreRefusedAtTheEdge(t *testing.T) {
	f := newRealFixture(t)
	big := func(c byte) string { return strings.Repeat(string(c), 60<<10) }
	cases := []struct {
		name, field, body string
		hdr               map[string]string
	}{
		{"txid newline", "txid", transferBody("001", "002", `"txid":"001-A\n"`, `"idempotency_key":"k1"`), nil},
		{"txid NUL", "txid", transferBody("001", "002", `"txid":"001-A\u0000B"`, `"idempotency_key":"k2"`), nil},
		{"txid non-ASCII", "txid", transferBody("001", "002", `"txid":"001-送金"`, `"idempotency_key":"k3"`), nil},
		{"idempotency_key 60KB", "idempotency_key", transferBody("001", "002", `"idempotency_key":`+jsonString(big('k'))), nil},
		{"Idempotency-Key header 60KB", "Idempotency-Key", transferBody("001", "002"), map[string]string{"Idempotency-Key": big('k')}},
		{"account_hash 60KB", "payer.account_hash", strings.Replace(transferBody("001", "002", `"idempotency_key":"k4"`),
			`"h:payer-acct"`, jsonString(big('h')), 1), nil},
		{"participant_ref 60KB", "participant_ref", transferBody("001", "002", `"participant_ref":`+jsonString(big('p')), `"idempotency_key":"k5"`), nil},
		{"client_ref newline", "client_ref", transferBody("001", "002", `"client_ref":"a\nb"`, `"idempotency_key":"k6"`), nil},
	}
	for _, c := range cases {
		hdr := merge(map[string]string{"X-Api-Key": key001, "Content-Type": "application/json"}, c.hdr)
		r := f.do("POST", "/api/transfers", hdr, c.body)
		d, _ := r.json(t)["details"].(map[string]any)
		if r.status != http.StatusBadRequest || r.code(t) != "INVALID_REQUEST" || d["field"] != c.field ||
			!strings.Contains(r.json(t)["error"].(string), c.field) {
			t.Errorf("%s: %d %.300s", c.name, r.status, r.body)
		}
		if len(r.body) > 2048 {
			t.Errorf("%s: the refusal echoes the value (%d bytes)", c.name, len(r.body))
		}
	}
	if n := f.countRows(`SELECT COUNT(*) FROM Transactions`) + f.countRows(`SELECT COUNT(*) FROM IdempotencyKeys`); n != 0 {
		t.Fatalf("%d rows written by refused transfers", n)
	}
	// A well-formed transfer with a txid in the payer's namespace is accepted.
	r := f.do("POST", "/api/transfers", map[string]string{"X-Api-Key": key001}, transferBody("001", "002", `"txid":"001-INV.2026_1"`, `"idempotency_key":"ok"`))
	if r.status != http.StatusCreated || r.json(t)["txid"] != "001-INV.2026_1" {
		t.Fatalf("well-formed: %d %s", r.status, r.body)
	}
}

// Item 2 on the query routes: a txid path that is no identifier, and a
// 60 KB participant signature nonce, are refused naming the field.
func TestQueryIdentifiersAreRefusedAtTheEdge(t *testing.T) {
	f := newFixture(t, nil)
	r := f.do("GET", "/api/transactions/TX-%0A1", map[string]string{"X-Api-Key": keyOps, "X-Purpose-Code": "P01"}, "")
	if d, _ := r.json(t)["details"].(map[string]any); r.status != 400 || r.code(t) != "INVALID_REQUEST" || d["field"] != "txid" {
		t.Errorf("newline txid path: %d %s", r.status, r.body)
	}
	path := "/api/transactions/TX-4"
	h := f.signedQuery(path, "004", "P01", t0)
	h["X-Participant-Sig-Nonce"] = strings.Repeat("n", 60<<10)
	r = f.do("GET", path, merge(map[string]string{"X-Api-Key": key004, "X-Purpose-Code": "P01"}, h), "")
	if d, _ := r.json(t)["details"].(map[string]any); r.status != 403 || r.code(t) != "PARTICIPANT_SIGNATURE_INVALID" ||
		d["cause"] != "INVALID_REQUEST" || d["field"] != "X-Participant-Sig-Nonce" {
		t.Errorf("60 KB nonce: %d %.300s", r.status, r.body)
	}
	if n := f.countRows(`SELECT COUNT(*) FROM IdempotencyKeys WHERE length(key) > 1024`); n != 0 {
		t.Errorf("the 60 KB nonce was stored")
	}
	if r := f.do("GET", "/api/banks", map[string]string{"X-Api-Key": key001, "X-Request-Id": `a"b<script>`}, ""); !strings.HasPrefix(r.header.Get("X-Request-Id"), "req-") {
		t.Errorf("a request id outside the grammar was honoured: %q", r.header.Get("X-Request-Id"))
	}
}

// Item 2 on the bank ingress: a 60 KB or control-byte nonce or key id is
// refused before any key lookup or nonce write, and never reaches the
// adapter. Spec 004 makes every ingress signature failure 401
// INVALID_SIGNATURE; details.cause is the grammar's INVALID_REQUEST.
func TestIngressSignatureHeadersFollowTheGrammar(t *testing.T) {
	f := newFixture(t, nil)
	body := `{"request_id":"r1","txid":"TX-1","amount":{"value":1200,"currency":"JPY"},"account_hash":"h:a"}`
	for _, c := range []struct{ header, value string }{
		{"X-ZC-Sig-Nonce", strings.Repeat("n", 60<<10)},
		{"X-ZC-Sig-Nonce", "n\x00n"},
		{"X-ZC-Key-Id", "KEY ZC"},
	} {
		h := f.ingressHeaders("KEY-ZC-1", f.zcPriv, t0, body)
		h[http.CanonicalHeaderKey(c.header)] = c.value
		r := f.do("POST", "/bank/001/zc-ingress/reserve-funds", h, body)
		if d, _ := r.json(t)["details"].(map[string]any); r.status != 401 || r.code(t) != "INVALID_SIGNATURE" || d["cause"] != "INVALID_REQUEST" {
			t.Errorf("%s %.20q: %d %.300s", c.header, c.value, r.status, r.body)
		}
	}
	if f.bank.count() != 0 {
		t.Fatalf("%d requests reached the adapter", f.bank.count())
	}
	if n := f.countRows(`SELECT COUNT(*) FROM IdempotencyKeys WHERE length(key) > 1024`); n != 0 {
		t.Fatalf("the 60 KB nonce was stored")
	}
}

var requestIDRe = regexp.MustCompile(`"request_id":"[^"]*"`)

// Issue 10 item 4: a bank that is no party to a transfer cannot tell from
// POST /api/transfers whether its txid exists: status, code and body are
// the same for an existing and a missing txid. The payer still learns of
// its own collision.
func TestSubmitIsNoExistenceOracle(t *testing.T) {
	f := newRealFixture(t)
	r := f.do("POST", "/api/transfers", map[string]string{"X-Api-Key": key001}, transferBody("001", "002", `"txid":"001-SECRET-1"`, `"idempotency_key":"a"`))
	if r.status != 201 {
		t.Fatalf("setup: %d %s", r.status, r.body)
	}
	assigned := f.do("POST", "/api/transfers", map[string]string{"X-Api-Key": key001}, transferBody("001", "002", `"idempotency_key":"b"`)).json(t)["txid"].(string)

	probe := func(txid, key string) resp {
		return f.do("POST", "/api/transfers", map[string]string{"X-Api-Key": key003}, transferBody("003", "004", `"txid":"`+txid+`"`, `"idempotency_key":"`+key+`"`))
	}
	for _, pair := range [][2]string{{"001-SECRET-1", "001-SECRET-2"}, {assigned, "TX-000000000000000000000000"}} {
		exists, missing := probe(pair[0], "p-"+pair[0]), probe(pair[1], "p-"+pair[1])
		if exists.status != missing.status || exists.code(t) != missing.code(t) ||
			!bytes.Equal(requestIDRe.ReplaceAll(exists.body, nil), requestIDRe.ReplaceAll(missing.body, nil)) {
			t.Errorf("a non-party tells %s from %s:\n exists  %d %s\n missing %d %s", pair[0], pair[1], exists.status, exists.body, missing.status, missing.body)
		}
		if exists.status < 400 || bytes.Contains(exists.body, []byte("exists")) {
			t.Errorf("probe of %s: %d %s", pair[0], exists.status, exists.body)
		}
	}
	if n := f.countRows(`SELECT COUNT(*) FROM Transactions WHERE payer_bank_id = '003'`); n != 0 {
		t.Fatalf("%d transfers written by the probes", n)
	}
	// The payer's own collision is named; its own namespace is usable.
	own := f.do("POST", "/api/transfers", map[string]string{"X-Api-Key": key001}, transferBody("001", "002", `"txid":"001-SECRET-1"`, `"idempotency_key":"c"`))
	if own.status != 400 || !bytes.Contains(own.body, []byte("already exists")) {
		t.Errorf("payer's own collision: %d %s", own.status, own.body)
	}
	if r := probe("003-MINE", "mine"); r.status != 201 {
		t.Errorf("own namespace: %d %s", r.status, r.body)
	}
}

// Issue 10 item 6: the payee's read routes lack the payer-private members
// of the request (participant_ref, client_ref, the payer's account and the
// vault refs); the payer sees its own references but no secret.
func TestPayeeDoesNotSeeThePayersPrivateFields(t *testing.T) {
	f := newRealFixture(t)
	r := f.do("POST", "/api/transfers", map[string]string{"X-Api-Key": key001}, transferBody("001", "002",
		`"txid":"001-VIS-1"`, `"idempotency_key":"v"`, `"participant_ref":"PREF-payer-only"`, `"client_ref":"CREF-payer-only"`,
		`"risk_hint":{"vault_ref":"VLT-risk"}`, `"ref_issuer":"RISS-payer"`, `"ref_proof":"RPRF-payer"`))
	if r.status != 201 {
		t.Fatalf("setup: %d %s", r.status, r.body)
	}
	private := []string{"PREF-payer-only", "CREF-payer-only", "h:payer-acct", "RISS-payer", "RPRF-payer", "participant_ref", "client_ref", "daily_business_date"}
	secret := []string{"VLT-payer-secret", "VLT-risk", "vault_ref"}
	for _, route := range []string{"/api/transactions/001-VIS-1/events", "/api/transactions/001-VIS-1"} {
		payee := f.do("GET", route, map[string]string{"X-Api-Key": key002, "X-Purpose-Code": "P01"}, "")
		payer := f.do("GET", route, map[string]string{"X-Api-Key": key001, "X-Purpose-Code": "P01"}, "")
		ops := f.do("GET", route, map[string]string{"X-Api-Key": keyOps, "X-Purpose-Code": "P01"}, "")
		if payee.status != 200 || payer.status != 200 || ops.status != 200 {
			t.Fatalf("%s: payee %d payer %d ops %d", route, payee.status, payer.status, ops.status)
		}
		for _, s := range append(private, secret...) {
			if bytes.Contains(payee.body, []byte(s)) {
				t.Errorf("%s: payee sees %q: %s", route, s, payee.body)
			}
		}
		for _, s := range secret {
			if bytes.Contains(payer.body, []byte(s)) || bytes.Contains(ops.body, []byte(s)) {
				t.Errorf("%s: secret %q served", route, s)
			}
		}
		if !bytes.Contains(payee.body, []byte("001-VIS-1")) {
			t.Errorf("%s: payee lost the shared facts: %s", route, payee.body)
		}
		if strings.HasSuffix(route, "/events") {
			for _, s := range private {
				if !bytes.Contains(payer.body, []byte(s)) || !bytes.Contains(ops.body, []byte(s)) {
					t.Errorf("%s: payer/operator miss %q", route, s)
				}
			}
			if !bytes.Contains(payee.body, []byte(`"redacted":true`)) || !bytes.Contains(payee.body, []byte("h:payee-acct")) {
				t.Errorf("payee events: %s", payee.body)
			}
		}
	}
}

// Issue 10 item 8: a read refused for a wrong API key or cron secret
// writes an AccessAuditLog row naming only the credential kind; operator
// rows name the credential; the stored path is bounded.
func TestAuditRowsForCredentialsAndPaths(t *testing.T) {
	f := newFixture(t, nil)
	f.do("GET", "/api/transactions/TX-1", map[string]string{"X-Api-Key": "wrong-secret-value", "X-Purpose-Code": "P01"}, "")
	f.do("GET", "/api/transactions", map[string]string{"X-Cron-Secret": "wrong-cron", "X-Purpose-Code": "P03"}, "")
	f.do("GET", "/api/transactions", map[string]string{"X-Cron-Secret": cron, "X-Purpose-Code": "P03"}, "")
	long := "/api/transactions/" + strings.Repeat("x", 5000) + "/events"
	f.do("GET", long, map[string]string{"X-Api-Key": keyOps, "X-Purpose-Code": "P01"}, "")
	got := f.auditRows()
	want := []AccessRecord{
		{SubjectUnidentified, "credential:api-key", "P01", "transactions/TX-1", Deny, "UNAUTHORIZED"},
		{SubjectUnidentified, "credential:cron-secret", "P03", "transactions", Deny, "UNAUTHORIZED"},
		{SubjectOperator, "cron-secret", "P03", "transactions", Permit, ""},
	}
	if len(got) != len(want)+1 {
		t.Fatalf("%d rows, want %d: %+v", len(got), len(want)+1, got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	last := got[len(want)]
	if last.SubjectID != "api-key:ops" || last.Decision != Deny || len(last.Resource) > MaxAuditResource ||
		!strings.Contains(last.Resource, "...[+") {
		t.Errorf("long path row: %+v (resource %d bytes)", last, len(last.Resource))
	}
	for _, r := range got {
		if strings.Contains(r.SubjectID, "wrong") || strings.Contains(r.SubjectID, cron) {
			t.Errorf("a secret reached the audit log: %+v", r)
		}
	}
}

// Item 8: N concurrent requests with junk participant-signature headers
// append one DataAccessViolationDetected entry to the GLOBAL chain for the
// window, and its row counts all N with the first and last sample; every
// request keeps its own AccessAuditLog row.
func TestJunkSignaturesAreAggregatedPerWindow(t *testing.T) {
	f := newFixture(t, nil)
	const n = 40
	path := "/api/transactions/TX-4"
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := map[string]string{"X-Api-Key": key004, "X-Purpose-Code": "P01", "X-Participant-Key-Id": "KEY-004",
				"X-Participant-Sig-Nonce": fmt.Sprintf("junk-%d", i), "X-Participant-Sig-Time": "2026-12-02T01:00:00Z",
				"X-Participant-Signature": "AAAA"}
			if r := f.do("GET", path, h, ""); r.status != 403 {
				t.Errorf("junk %d: %d %s", i, r.status, r.body)
			}
		}()
	}
	wg.Wait()
	chain := f.countRows(`SELECT COUNT(*) FROM FinalityLog WHERE event_type = 'DataAccessViolationDetected' AND txid IS NULL AND gtid IS NULL`)
	if chain != 1 {
		t.Fatalf("%d GLOBAL entries for %d junk requests in one window, want 1", chain, n)
	}
	var count int
	var first, last, logID string
	f.db.Read(f.ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(f.ctx, `SELECT violations, first_sample, last_sample, COALESCE(log_id,'') FROM AccessViolationWindows WHERE bank_id = '004'`).
			Scan(&count, &first, &last, &logID)
	})
	if count != n || !strings.Contains(first, "transactions/TX-4") || !strings.Contains(last, "EXTERNAL_SIGNATURE_INVALID") || logID == "" {
		t.Fatalf("window row: count %d first %s last %s log %q", count, first, last, logID)
	}
	if got := f.countRows(`SELECT COUNT(*) FROM FinalityLog WHERE log_id = ?`, logID); got != 1 {
		t.Fatalf("window row names log_id %q, %d entries", logID, got)
	}
	if got := f.countRows(`SELECT COUNT(*) FROM AccessAuditLog WHERE subject_id LIKE '004%' AND reason_code = 'PARTICIPANT_SIGNATURE_INVALID'`); got != n {
		t.Fatalf("%d audit rows, want %d", got, n)
	}
	// The next window starts a new entry.
	f.clk.Advance(ViolationWindow)
	f.do("GET", path, map[string]string{"X-Api-Key": key004, "X-Purpose-Code": "P01", "X-Participant-Key-Id": "KEY-004",
		"X-Participant-Sig-Nonce": "junk-next", "X-Participant-Sig-Time": "2026-12-02T01:05:00Z", "X-Participant-Signature": "AAAA"}, "")
	if got := f.countRows(`SELECT COUNT(*) FROM FinalityLog WHERE event_type = 'DataAccessViolationDetected'`); got != 2 {
		t.Fatalf("%d entries after the next window, want 2", got)
	}
}
