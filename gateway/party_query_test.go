package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
)

// GET /api/gtid/{gtid}, /api/rtp/{rtp_id} and /api/htlc/{htlc_id} are
// authorized by the one participant-query owner (partyQuery, spec 004
// 照会の認可), on the real orchestrator: without a valid X-Purpose-Code
// the answer is 403 PURPOSE_CODE_REQUIRED before any lookup; a party and
// the operator read it (200); a non-party gets the very 404 body of a
// missing resource; every decision is one AccessAuditLog row.
func TestPartyQueriesNeedAPurposeAndAreAudited(t *testing.T) {
	f := newRealFixture(t)
	as := func(key string) map[string]string { return map[string]string{"X-Api-Key": key} }
	must := func(r resp, want int) resp {
		t.Helper()
		if r.status != want {
			t.Fatalf("%d %s, want %d", r.status, r.body, want)
		}
		return r
	}
	must(f.do("POST", "/api/gtid/register", as(key001), `{"gtid":"001-G1","idempotency_key":"g1","legs":[
		{"leg_id":"P1","role":"PAYER","bank_id":"001","account_hash":"h:a","amount":{"value":700,"currency":"JPY"}},
		{"leg_id":"E1","role":"PAYEE","bank_id":"002","account_hash":"h:b","amount":{"value":700,"currency":"JPY"}}]}`), http.StatusCreated)
	must(f.do("POST", "/api/rtp/request", as(key002), `{"rtp_id":"RTP-002-1","idempotency_key":"r1","payer_bank_id":"001",
		"payee_account_hash":"h:shop","amount":{"value":1500,"currency":"JPY"},"expires_at":"`+clock.Stamp(t0.Add(time.Hour))+`","payee_name":"SHOP"}`), http.StatusCreated)
	hl := sha256.Sum256([]byte("preimage"))
	htlc := must(f.do("POST", "/api/htlc/create", as(key001), `{"amount":{"value":900,"currency":"JPY"},"payer":{"bank_id":"001","account_hash":"h:a"},`+
		`"payee":{"bank_id":"002","account_hash":"h:b"},"hash_alg":"SHA-256","hashlock":"`+hex.EncodeToString(hl[:])+
		`","timelock_expires_at":"`+clock.Stamp(t0.Add(time.Hour))+`","idempotency_key":"h1"}`), http.StatusCreated).json(t)["htlc_id"].(string)

	for _, c := range []struct {
		path, missing, notFound string
		party, nonParty         string // keys (the non-party is 003)
		partyID                 string
	}{
		{"gtid/001-G1", "gtid/001-NOPE", "GTID_NOT_FOUND", key002, key003, "002"},
		{"rtp/RTP-002-1", "rtp/RTP-002-NOPE", "RTP_NOT_FOUND", key001, key003, "001"},
		{"htlc/" + htlc, "htlc/HTLC-NOPE", "HTLC_NOT_FOUND", key002, key003, "002"},
	} {
		t.Run(c.path, func(t *testing.T) {
			before := len(f.auditRows())
			with := func(key, purpose string) map[string]string {
				h := as(key)
				if purpose != "" {
					h[HeaderPurposeCode] = purpose
				}
				return h
			}
			for _, p := range []string{"", "P99"} {
				r := f.do("GET", "/api/"+c.path, with(c.party, p), "")
				if r.status != http.StatusForbidden || r.code(t) != "PURPOSE_CODE_REQUIRED" || r.json(t)["category"] != "AUTH" {
					t.Fatalf("purpose %q: %d %s", p, r.status, r.body)
				}
			}
			if r := f.do("GET", "/api/"+c.path, with(c.party, "P02"), ""); r.status != 200 {
				t.Fatalf("party: %d %s", r.status, r.body)
			}
			if r := f.do("GET", "/api/"+c.path, with(keyOps, "P05"), ""); r.status != 200 {
				t.Fatalf("operator: %d %s", r.status, r.body)
			}
			stranger := f.do("GET", "/api/"+c.path, with(c.nonParty, "P01"), "")
			missing := f.do("GET", "/api/"+c.missing, with(c.nonParty, "P01"), "")
			if stranger.status != 404 || stranger.code(t) != c.notFound || missing.status != 404 || missing.code(t) != c.notFound {
				t.Fatalf("non-party %d %s; missing %d %s", stranger.status, stranger.body, missing.status, missing.body)
			}
			if a, b := sameBody(t, stranger), sameBody(t, missing); a != b {
				t.Fatalf("a non-party learns the resource exists:\n%s\n%s", a, b)
			}
			unauth := func(id string) string { return id + " (unauthenticated)" }
			want := []AccessRecord{
				{SubjectParticipant, unauth(c.partyID), "", c.path, Deny, "PURPOSE_CODE_REQUIRED"},
				{SubjectParticipant, unauth(c.partyID), "", c.path, Deny, "PURPOSE_CODE_REQUIRED"},
				{SubjectParticipant, unauth(c.partyID), "P02", c.path, Permit, ""},
				{SubjectOperator, "api-key:ops", "P05", c.path, Permit, ""},
				{SubjectParticipant, unauth("003"), "P01", c.path, Deny, "NOT_A_PARTY"},
				{SubjectParticipant, unauth("003"), "P01", c.missing, Deny, c.notFound},
			}
			got := f.auditRows()[before:]
			if len(got) != len(want) {
				t.Fatalf("%d audit rows, want %d: %+v", len(got), len(want), got)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("row %d = %+v, want %+v", i, got[i], want[i])
				}
			}
		})
	}
}

// sameBody is an error body without what names the request (request_id)
// or the id asked for (details).
func sameBody(t *testing.T, r resp) string {
	t.Helper()
	m := r.json(t)
	delete(m, "request_id")
	delete(m, "details")
	b, _ := json.Marshal(m)
	return string(b)
}
