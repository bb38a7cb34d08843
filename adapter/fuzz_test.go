package adapter

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/bankapi"
)

// FuzzIngressBody feeds arbitrary bodies to every ingress command through
// the HTTP handler: it must never panic, and every non-200 answer must be
// the catalog error shape with a registered category.
func FuzzIngressBody(f *testing.F) {
	f.Add(uint8(0), []byte(`{"request_id":"r","txid":"T","amount":{"value":1,"currency":"JPY"},"account_hash":"h:a"}`))
	f.Add(uint8(1), []byte(`{"request_id":"r","txid":"T","amount":{"value":1,"currency":"JPY"},"decision_proof_ref":"D","payer_account_hash":"h:a"}`))
	f.Add(uint8(7), []byte(`{"request_id":"r","verification_id":"V","target_account_hash":"h:a","target_account_name":"ｻﾄｳ"}`))
	f.Add(uint8(9), []byte(`{"request_id":"r","rtp_id":"R","amount":{"value":-1}}`))
	f.Add(uint8(3), []byte(`{"request_id":`))
	f.Add(uint8(11), []byte(`null`))
	f.Add(uint8(12), []byte{})
	h := newHarness(f)
	h.account("h:a", "0000001", "サトウ ハナコ", 1_000_000)
	srv := h.a.Handler()
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		cmd := bankapi.Commands[int(which)%len(bankapi.Commands)]
		if cmd == bankapi.CleanupBank {
			cmd = bankapi.AccountVerify // keep the bank alive for the next input
		}
		req := httptest.NewRequest(http.MethodPost, cmd.Path("001"), strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code == http.StatusOK {
			return
		}
		var e bankapi.ErrorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
			t.Fatalf("status %d with a non-catalog body %q", rec.Code, rec.Body.String())
		}
		if e.ReasonCode == "" || e.Category == "" || e.Details == nil {
			t.Fatalf("status %d body %+v", rec.Code, e)
		}
	})
}
