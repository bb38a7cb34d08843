package gateway

import (
	"net/http"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
)

// The GTID and RTP routes over HTTP, on the real orchestrator: the issuer
// is the authenticated participant, a replay answers 200 with
// Idempotent-Replayed, reads are for parties only (anyone else: 404), and
// answers out of turn are 409.
func TestGtidAndRtpRoutes(t *testing.T) {
	var o *orchestrator.Orchestrator
	f := newFixture(t, func(c *Config) {
		var err error
		if o, err = orchestrator.New(orchestrator.Config{DB: c.DB, Clock: c.Clock}); err != nil {
			t.Fatal(err)
		}
		c.Coordinator = o
	})
	as := func(key string) map[string]string { return map[string]string{"X-Api-Key": key} }
	q := func(key string) map[string]string {
		return map[string]string{"X-Api-Key": key, HeaderPurposeCode: "P01"}
	}
	gt := `{"gtid":"001-G1","idempotency_key":"g1","legs":[
		{"leg_id":"P1","role":"PAYER","bank_id":"001","account_hash":"h:a","amount":{"value":700,"currency":"JPY"}},
		{"leg_id":"E1","role":"PAYEE","bank_id":"002","account_hash":"h:b","amount":{"value":700,"currency":"JPY"}}]}`
	r := f.do("POST", "/api/gtid/register", as(key001), gt)
	if r.status != http.StatusCreated || r.json(t)["gtid"] != "001-G1" || r.json(t)["state"] != "GT_RECEIVED" {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	if r = f.do("POST", "/api/gtid/register", as(key001), gt); r.status != http.StatusOK || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s", r.status, r.body)
	}
	if r = f.do("POST", "/api/gtid/register", as(keyOps), gt); r.status != http.StatusForbidden {
		t.Fatalf("operator registering: %d %s", r.status, r.body)
	}
	if r = f.do("POST", "/api/gtid/register", as(key001), `{"idempotency_key":"g2","legs":[]}`); r.code(t) != "MISSING_LEG_ROLE" || r.status != 422 {
		t.Fatalf("no legs: %d %s", r.status, r.body)
	}
	for key, want := range map[string]int{key002: 200, keyOps: 200, key003: 404} {
		if r = f.do("GET", "/api/gtid/001-G1", q(key), ""); r.status != want {
			t.Fatalf("GET gtid as %s: %d %s", key, r.status, r.body)
		}
	}
	if r = f.do("GET", "/api/gtid/001-G1", q(key003), ""); r.code(t) != "GTID_NOT_FOUND" {
		t.Fatalf("non-party: %s", r.body)
	}

	rtp := `{"rtp_id":"RTP-002-1","idempotency_key":"r1","payer_bank_id":"001","payee_account_hash":"h:shop",
		"amount":{"value":1500,"currency":"JPY"},"expires_at":"` + clock.Stamp(t0.Add(time.Hour)) + `","payee_name":"SHOP"}`
	if r = f.do("POST", "/api/rtp/request", as(key002), rtp); r.status != http.StatusCreated || r.json(t)["state"] != "CREATED" {
		t.Fatalf("rtp request: %d %s", r.status, r.body)
	}
	if r = f.do("GET", "/api/rtp/RTP-002-1", q(key003), ""); r.status != 404 || r.code(t) != "RTP_NOT_FOUND" {
		t.Fatalf("non-party rtp read: %d %s", r.status, r.body)
	}
	if r = f.do("GET", "/api/rtp/RTP-002-1", q(key001), ""); r.status != 200 || r.json(t)["payer_bank_id"] != "001" {
		t.Fatalf("payer read: %d %s", r.status, r.body)
	}
	// Not notified yet: the payer cannot answer.
	if r = f.do("POST", "/api/rtp/RTP-002-1/decline", as(key001), ""); r.status != http.StatusConflict || r.code(t) != "INVALID_STATE" {
		t.Fatalf("decline of CREATED: %d %s", r.status, r.body)
	}
	if r = f.do("POST", "/api/rtp/RTP-002-1/accept", as(key002), `{"payer_account_hash":"h:a"}`); r.code(t) != "UNAUTHORIZED" {
		t.Fatalf("payee accepting: %d %s", r.status, r.body)
	}
}
