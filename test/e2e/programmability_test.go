package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/gateway"
)

// api is the gateway in front of a stack, with one API key per bank and
// one for the operator.
type api struct {
	s *stack
	h http.Handler
}

func newAPI(t *testing.T, s *stack) *api {
	t.Helper()
	rot := func(k string) *signing.Rotating { return &signing.Rotating{Current: []byte(k)} }
	srv, err := gateway.New(gateway.Config{Coordinator: s.o, DB: s.zc, Participants: s.o.Participants(), Clock: s.clk,
		APIKeys: &signing.APIKeys{Keys: []signing.APIKey{
			{Principal: signing.Principal{Scope: signing.ScopeOperator, Name: "ops"}, Secret: rot("key-ops")},
			{Principal: signing.Principal{Scope: signing.ScopeParticipant, BankID: "001"}, Secret: rot("key-001")},
			{Principal: signing.Principal{Scope: signing.ScopeParticipant, BankID: "002"}, Secret: rot("key-002")},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	return &api{s: s, h: srv.Handler()}
}

// do sends one request as key and decodes the JSON answer.
func (a *api) do(key, method, path, body string) (int, map[string]any) {
	a.s.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("X-Api-Key", key)
	req.Header.Set("X-Purpose-Code", "P01")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	a.h.ServeHTTP(w, req)
	var m map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
		a.s.t.Fatalf("%s %s: %d %q: %v", method, path, w.Code, w.Body.String(), err)
	}
	return w.Code, m
}

func (a *api) transfer(key string, amount int64, purpose, mandateID string) (int, map[string]any) {
	m := ""
	if mandateID != "" {
		m = `,"mandate_id":"` + mandateID + `"`
	}
	return a.do("key-001", "POST", "/api/transfers", fmt.Sprintf(`{"lane":"EXPRESS","amount":{"value":%d,"currency":"JPY"},`+
		`"payer":{"bank_id":"001","account_hash":"h:a"},"payee":{"bank_id":"002","account_hash":"h:b"},"purpose":%q,`+
		`"schema_version":"1.1","idempotency_key":%q%s}`, amount, purpose, key, m))
}

// entry is one FinalityLog row of a chain.
type entry struct{ Type, To, Reason string }

func (s *stack) chain(txid string) []entry {
	s.t.Helper()
	var out []entry
	err := s.zc.Read(s.ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(s.ctx, `SELECT event_type, state_to, payload_json FROM FinalityLog WHERE txid = ? ORDER BY event_seq`, txid)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e entry
			var payload string
			if err := rows.Scan(&e.Type, &e.To, &payload); err != nil {
				return err
			}
			var p struct {
				Reason  string `json:"reason_code"`
				Mandate *struct {
					Allowed    bool   `json:"allowed"`
					ReasonCode string `json:"reason_code"`
				} `json:"mandate"`
			}
			_ = json.Unmarshal([]byte(payload), &p)
			e.Reason = p.Reason
			if p.Mandate != nil {
				e.Reason = fmt.Sprintf("mandate allowed=%v %s", p.Mandate.Allowed, p.Mandate.ReasonCode)
			}
			out = append(out, e)
		}
		return rows.Err()
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

func (s *stack) wantChain(txid string, want ...entry) {
	s.t.Helper()
	got := s.chain(txid)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		s.t.Fatalf("FinalityLog of %s:\n got %v\nwant %v", txid, got, want)
	}
}

// TestMandateGatesTransfersFullStack: bank 001 gives agent-7 a mandate
// (EXPRESS, MERCHANT, at most 50,000 per transfer) through the gateway.
// A transfer within it settles with the verdict in PreCheckPassed; one
// outside it, one citing a missing mandate and one after the revocation
// are each cancelled at precheck with the spec's reason code, a
// PreCheckFailed entry carrying the verdict, no bank command, no H and no
// money moved. A malformed mandate_id is refused at the door (400).
func TestMandateGatesTransfersFullStack(t *testing.T) {
	s := newStack(t, stackOptions{}, "001", "002")
	s.bank["001"].account("h:a", "SATO HANAKO", 1_000_000)
	s.bank["002"].account("h:b", "YAMADA TARO", 0)
	a := newAPI(t, s)

	code, m := a.do("key-001", "POST", "/api/mandates", `{"mandate_id":"MANDATE-AGENT7","grantee_ref":"agent-7","max_amount":50000,`+
		`"allowed_purposes":["MERCHANT"],"allowed_lanes":["EXPRESS"]}`)
	if code != 201 || m["payer_bank_id"] != "001" || m["status"] != "ACTIVE" {
		t.Fatalf("create mandate: %d %v", code, m)
	}
	// The dry run says what the precheck will decide, and writes nothing.
	code, m = a.do("key-001", "POST", "/api/mandates/check", `{"mandate_id":"MANDATE-AGENT7","amount":60000,"purpose":"MERCHANT","lane":"EXPRESS"}`)
	if code != 200 || m["allowed"] != false || m["reason_code"] != "MANDATE_BREACH" || !strings.Contains(m["why"].(string), "exceeds max_amount 50000") {
		t.Fatalf("check over the limit: %d %v", code, m)
	}
	// Another bank learns nothing about bank 001's mandate.
	code, m = a.do("key-002", "POST", "/api/mandates/check", `{"mandate_id":"MANDATE-AGENT7","amount":1,"purpose":"MERCHANT","lane":"EXPRESS"}`)
	if code != 200 || m["reason_code"] != "MANDATE_NOT_FOUND" {
		t.Fatalf("check by a non-party: %d %v", code, m)
	}

	before := s.snapshot()
	code, m = a.transfer("k-ok", 40_000, "MERCHANT", "MANDATE-AGENT7")
	if code != 201 {
		t.Fatalf("submit within the mandate: %d %v", code, m)
	}
	okTx := m["txid"].(string)
	s.run()
	s.wantState(okTx, "SETTLED", "")
	if got := s.chain(okTx); len(got) < 3 || got[1] != (entry{"PreCheckPassed", "PRECHECKED", "mandate allowed=true "}) {
		t.Fatalf("chain of the allowed transfer: %v", got)
	}
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -40_000}, move{"002", "h:b", 40_000})

	refused := func(key string, amount int64, purpose, mandateID, reason string) {
		t.Helper()
		before, calls := s.snapshot(), s.banks.Calls()
		code, m := a.transfer(key, amount, purpose, mandateID)
		if code != 201 {
			t.Fatalf("%s: submit %d %v", key, code, m)
		}
		txid := m["txid"].(string)
		s.run()
		s.wantState(txid, "CANCELLED", reason)
		s.wantChain(txid, entry{"PaymentInitiated", "RECEIVED", ""}, entry{"PreCheckFailed", "DECIDED_CANCEL", "mandate allowed=false " + reason},
			entry{"Cancelled", "CANCELLED", reason})
		s.checkInvariants(before, s.snapshot())
		if after := s.banks.Calls(); fmt.Sprint(after) != fmt.Sprint(calls) {
			t.Fatalf("%s: bank commands %v -> %v, want none", key, calls, after)
		}
		if n := s.count(`SELECT COUNT(*) FROM HReservations WHERE txid = ? AND is_released = 0`, txid); n != 0 {
			t.Fatalf("%s: %d H reservations held", key, n)
		}
		code, v := a.do("key-001", "GET", "/api/transactions/"+txid, "")
		if code != 200 || v["state"] != "CANCELLED" || v["reason_code"] != reason {
			t.Fatalf("%s: query %d %v", key, code, v)
		}
	}
	refused("k-over", 50_001, "MERCHANT", "MANDATE-AGENT7", "MANDATE_BREACH")
	refused("k-purpose", 1_000, "P2P", "MANDATE-AGENT7", "MANDATE_BREACH")
	refused("k-missing", 1_000, "MERCHANT", "MANDATE-NOPE", "MANDATE_NOT_FOUND")

	code, m = a.do("key-001", "POST", "/api/mandates/MANDATE-AGENT7/revoke", "")
	if code != 200 || m["revoked"] != true || m["status"] != "REVOKED" {
		t.Fatalf("revoke: %d %v", code, m)
	}
	if code, m = a.do("key-001", "POST", "/api/mandates/MANDATE-AGENT7/revoke", ""); code != 200 || m["revoked"] != false {
		t.Fatalf("second revoke: %d %v", code, m)
	}
	s.clk.Advance(1)
	refused("k-revoked", 1_000, "MERCHANT", "MANDATE-AGENT7", "MANDATE_REVOKED")
	// Revocation is not retroactive: the settled transfer stays settled.
	s.wantState(okTx, "SETTLED", "")

	n := s.count(`SELECT COUNT(*) FROM Transactions`)
	if code, m = a.transfer("k-badid", 1_000, "MERCHANT", "M-1"); code != 400 || m["reason_code"] != "INVALID_MANDATE_ID" {
		t.Fatalf("malformed mandate_id: %d %v", code, m)
	}
	if s.count(`SELECT COUNT(*) FROM Transactions`) != n {
		t.Fatal("a refused submission wrote a transaction")
	}
	if c := s.banks.Calls(); c[bankapi.ExecuteDebit] != 1 || c[bankapi.ExecuteCredit] != 1 {
		t.Fatalf("bank commands over the test %v: only the allowed transfer's", c)
	}
}
