package gateway

import (
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// FuzzTransferRequest: the POST /api/transfers decoder never panics and
// every refusal is a typed INVALID_REQUEST (with the byte offset).
func FuzzTransferRequest(f *testing.F) {
	f.Add([]byte(`{"lane":"EXPRESS","amount":{"value":1200,"currency":"JPY"},"payer":{"bank_id":"001"},"payee":{"bank_id":"002"},"schema_version":"1.1","idempotency_key":"k"}`))
	f.Add([]byte(`{"lane":`))
	f.Add([]byte(`{"amount":{"value":"x"}}`))
	f.Add([]byte(`{"unknown":1}`))
	f.Add([]byte(`{} {}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var req TransferRequest
		err := decodeStrict(b, &req)
		if err == nil {
			_ = CheckSchemaVersion(req.SchemaVersion)
			return
		}
		de, ok := domainerr.As(err)
		if !ok || de.Code != "INVALID_REQUEST" || de.Details["byte_offset"] == nil {
			t.Fatalf("untyped or unlocated refusal: %v", err)
		}
	})
}
