package adapter

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/bankapi"
)

func post(t *testing.T, srv *httptest.Server, path, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: body %q is not JSON: %v", path, b, err)
	}
	return resp.StatusCode, m
}

// Every one of the 13 commands is served over HTTP with the spec's field
// names on the wire.
func TestHandlerServesAllThirteenCommands(t *testing.T) {
	h := newHarness(t)
	h.account("h:a", "0000001", "佐藤 花子", 10_000)
	srv := httptest.NewServer(h.a.Handler())
	defer srv.Close()

	_, rsv := post(t, srv, "/bank/001/zc-ingress/reserve-funds", `{"request_id":"r1","txid":"TX-1","amount":{"value":1200,"currency":"JPY"},"account_hash":"h:a"}`)
	ref, _ := rsv["reservation_ref"].(string)
	bodies := map[bankapi.Command]struct {
		body string
		want map[string]any
	}{
		bankapi.ReserveFunds:   {`{"request_id":"r1","txid":"TX-1","amount":{"value":1200,"currency":"JPY"},"account_hash":"h:a"}`, map[string]any{"result": "RESERVED", "reservation_ref": ref}},
		bankapi.ExecuteDebit:   {`{"request_id":"r2","txid":"TX-1","amount":{"value":1200,"currency":"JPY"},"decision_proof_ref":"DP-1","h_reservation":{"reservation_id":"` + ref + `","mode":"RESERVED"},"lane":"EXPRESS"}`, map[string]any{"result": "OK"}},
		bankapi.ExecuteCredit:  {`{"request_id":"r3","txid":"TX-2","amount":{"value":500,"currency":"JPY"},"decision_proof_ref":"DP-2","payee_account_hash":"h:a"}`, map[string]any{"result": "OK"}},
		bankapi.ReleaseReserve: {`{"request_id":"r4","txid":"TX-9","reservation_ref":"` + ref + `"}`, map[string]any{"reason_code": "STATE_GUARD"}},
		bankapi.LegReadyCheck:  {`{"request_id":"r5","gtid":"GT-1","leg_id":"L1","role":"PAYEE","amount":{"value":3000,"currency":"JPY"},"account_hash":"h:a"}`, map[string]any{"result": "OK"}},
		bankapi.AuthorityCheck: {`{"request_id":"r6","txid":"TX-1","check_type":"INITIAL"}`, map[string]any{"result": "OK"}},
		bankapi.NameCheck:      {`{"request_id":"r7","txid":"TX-1","account_hash":"h:a"}`, map[string]any{"result": "MATCH"}},
		bankapi.AccountVerify:  {`{"request_id":"r8","verification_id":"V-1","target_account_hash":"h:a","target_account_name":"佐藤 花"}`, map[string]any{"result": "MATCHED", "match_score": 0.8, "name_provided": "佐藤 花", "fraud_warning": false}},
		bankapi.CreditNotify:   {`{"request_id":"r9","txid":"TX-2","payee_account_hash":"h:a","amount":{"value":500,"currency":"JPY"},"payer_bank_id":"002"}`, map[string]any{"result": "NOTIFIED"}},
		bankapi.RTPNotify:      {`{"request_id":"r10","rtp_id":"RTP-1","payee_bank_id":"002","payer_bank_id":"001","amount":{"value":2000,"currency":"JPY"},"expires_at":"2026-12-03T00:00:00Z","payee_name":"田中商店"}`, map[string]any{"result": "NOTIFIED"}},
		bankapi.DebitSettled:   {`{"request_id":"r11","txid":"TX-1","amount":{"value":1200,"currency":"JPY"},"payee_bank_id":"002","settled_at":"2026-12-02T01:00:00Z"}`, map[string]any{"result": "ACKNOWLEDGED", "txid": "TX-1"}},
		bankapi.InitializeBank: {`{"request_id":"r12"}`, map[string]any{"result": "ALREADY_INITIALIZED", "bank_id": "001"}},
		bankapi.CleanupBank:    {``, map[string]any{"reason_code": "STATE_GUARD"}},
	}
	if len(bodies) != len(bankapi.Commands) {
		t.Fatalf("%d bodies for %d commands", len(bodies), len(bankapi.Commands))
	}
	for _, cmd := range bankapi.Commands {
		c := bodies[cmd]
		_, got := post(t, srv, cmd.Path("001"), c.body)
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v (body %v)", cmd, k, got[k], v, got)
			}
		}
		if _, leak := got["actual_name"]; leak {
			t.Errorf("%s leaks actual_name", cmd)
		}
	}
	// The debit's proof is on the wire with the spec's field names.
	_, d := post(t, srv, "/bank/001/zc-ingress/execute-debit", bodies[bankapi.ExecuteDebit].body)
	proof, _ := d["bank_proof_ref"].(map[string]any)
	for _, k := range []string{"issuer_bank_id", "proof_type", "proof_id", "recorded_at"} {
		if proof[k] == nil || proof[k] == "" {
			t.Errorf("bank_proof_ref.%s missing: %v", k, proof)
		}
	}
}

func TestHandlerErrorsUseTheCatalogShape(t *testing.T) {
	h := newHarness(t)
	srv := httptest.NewServer(h.a.Handler())
	defer srv.Close()
	cases := []struct {
		name, path, body string
		status           int
		code, category   string
		requestID        string
	}{
		{"missing field", "/bank/001/zc-ingress/reserve-funds", `{"request_id":"q","txid":"T","amount":{"value":1,"currency":"JPY"}}`, 400, "MISSING_FIELD", "VALIDATION", "q"},
		{"bad amount", "/bank/001/zc-ingress/execute-credit", `{"request_id":"q","txid":"T","amount":{"value":-1,"currency":"JPY"},"decision_proof_ref":"D","payee_account_hash":"h"}`, 400, "INVALID_AMOUNT", "VALIDATION", "q"},
		{"broken json", "/bank/001/zc-ingress/execute-credit", `{"request_id":`, 400, "INVALID_REQUEST", "VALIDATION", ""},
		{"wrong type", "/bank/001/zc-ingress/execute-credit", `{"request_id":"q","amount":{"value":"ten"}}`, 400, "INVALID_REQUEST", "VALIDATION", ""},
		{"unknown account", "/bank/001/zc-ingress/execute-credit", `{"request_id":"q","txid":"T","amount":{"value":1,"currency":"JPY"},"decision_proof_ref":"D","payee_account_hash":"h:none"}`, 404, "ACCOUNT_NOT_FOUND", "NOT_FOUND", "q"},
		{"other bank", "/bank/002/zc-ingress/reserve-funds", `{}`, 404, "PARTICIPANT_NOT_FOUND", "NOT_FOUND", ""},
		{"unknown command", "/bank/001/zc-ingress/transfer", `{}`, 400, "INVALID_REQUEST", "VALIDATION", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := post(t, srv, c.path, c.body)
			if status != c.status || body["reason_code"] != c.code || body["category"] != c.category || body["request_id"] != c.requestID {
				t.Fatalf("status %d body %v", status, body)
			}
			if _, ok := body["error"].(string); !ok {
				t.Fatalf("no error message: %v", body)
			}
			if _, ok := body["details"].(map[string]any); !ok {
				t.Fatalf("details must be an object: %v", body)
			}
		})
	}
	resp, err := http.Post(srv.URL+"/bank/001/zc-ingress/reserve-funds", "application/json", bytes.NewReader(bytes.Repeat([]byte(" "), MaxBodyBytes+10)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("oversized body: %d", resp.StatusCode)
	}
}

func TestMuxRoutesByBank(t *testing.T) {
	h1 := newHarness(t)
	h2 := newHarness(t, func(c *Config) { c.BankID = "002" })
	srv := httptest.NewServer(Mux(h1.a, h2.a))
	defer srv.Close()
	for bank, want := range map[string]string{"001": "ALREADY_INITIALIZED", "002": "ALREADY_INITIALIZED"} {
		_, body := post(t, srv, bankapi.InitializeBank.Path(bank), `{}`)
		if body["result"] != want || body["bank_id"] != bank {
			t.Errorf("bank %s: %v", bank, body)
		}
	}
	if status, body := post(t, srv, bankapi.InitializeBank.Path("003"), `{}`); status != 404 || body["reason_code"] != "PARTICIPANT_NOT_FOUND" {
		t.Errorf("unknown bank: %d %v", status, body)
	}
}

// The ingress handler decodes strictly (coordinator/strictjson) and takes
// JSON only: a repeated key, a key in another case or invalid UTF-8 is
// refused before any core call, with the problem and its location; a
// Content-Type other than application/json is 415.
func TestHandlerStrictJSON(t *testing.T) {
	h := newHarness(t)
	h.account("h:a", "0000001", "佐藤 花子", 10_000)
	srv := httptest.NewServer(h.a.Handler())
	defer srv.Close()
	const path = "/bank/001/zc-ingress/reserve-funds"
	for _, c := range []struct{ name, body, problem, field string }{
		{"repeated key, the last would win", `{"request_id":"q1","txid":"TX-1","amount":{"value":1,"value":9000,"currency":"JPY"},"account_hash":"h:a"}`, "duplicate_key", "/amount/value"},
		{"key in another case", `{"request_id":"q2","txid":"TX-2","Amount":{"value":1,"currency":"JPY"},"account_hash":"h:a"}`, "key_case_mismatch", "/Amount"},
		{"invalid UTF-8", "{\"request_id\":\"q3\",\"txid\":\"TX-\xff\",\"amount\":{\"value\":1,\"currency\":\"JPY\"},\"account_hash\":\"h:a\"}", "invalid_utf8", ""},
	} {
		status, body := post(t, srv, path, c.body)
		d, _ := body["details"].(map[string]any)
		if status != 400 || body["reason_code"] != "INVALID_REQUEST" || d["problem"] != c.problem || d["field"] != c.field || d["command"] != "reserve-funds" {
			t.Errorf("%s: %d %v", c.name, status, body)
		}
	}
	for _, ct := range []string{"text/plain", "application/json; charset=iso-8859-1", ""} {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(`{"request_id":"q4","txid":"TX-4","amount":{"value":1,"currency":"JPY"},"account_hash":"h:a"}`))
		req.Header.Set("Content-Type", ct)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 415 || !strings.Contains(string(b), `"reason_code":"INVALID_REQUEST"`) {
			t.Errorf("Content-Type %q: %d %s", ct, resp.StatusCode, b)
		}
	}
	// Unknown members stay accepted on the ingress (n-1 senders may add fields).
	if status, body := post(t, srv, path, `{"request_id":"q5","txid":"TX-5","amount":{"value":1,"currency":"JPY"},"account_hash":"h:a","future":1}`); status != 200 {
		t.Errorf("unknown member: %d %v", status, body)
	}
}
