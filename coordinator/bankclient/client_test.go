package bankclient

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/signing"
)

var req = &bankapi.ReserveFundsRequest{RequestIDValue: "r1", TxID: "TX-1", Amount: bankapi.Amount{Value: 1200, Currency: "JPY"}, AccountHash: "h:a"}

func signer() signing.RequestSigner {
	_, priv, _ := ed25519.GenerateKey(nil)
	return signing.Ed25519Signer{KeyID: "KEY-ZC-1", PrivateKey: priv}
}

func TestCallErrorContract(t *testing.T) {
	cases := []struct {
		name     string
		handler  http.HandlerFunc
		timeout  time.Duration
		code     string
		category domainerr.Category
	}{
		{"bank refuses with a catalog body (kept as is, even unknown codes)", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(409)
			io.WriteString(w, `{"error":"no","reason_code":"SOME_BANK_CODE","category":"CONFLICT","details":{"x":1},"request_id":"r"}`)
		}, 0, "SOME_BANK_CODE", domainerr.Conflict},
		{"retryable bank catalog error", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(502)
			io.WriteString(w, `{"error":"in flight","reason_code":"LEGACY_ADAPTER_REQUEST_IN_FLIGHT","category":"DOWNSTREAM","details":{},"request_id":"r"}`)
		}, 0, "LEGACY_ADAPTER_REQUEST_IN_FLIGHT", domainerr.Downstream},
		{"5xx without a catalog body", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(500)
			io.WriteString(w, "oops")
		}, 0, "BANK_ERROR", domainerr.Downstream},
		{"2xx that is not JSON", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>") }, 0, "BANK_ERROR", domainerr.Downstream},
		{"no answer in time", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(300 * time.Millisecond):
			}
		}, 50 * time.Millisecond, "BANK_TIMEOUT", domainerr.Timeout},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(c.handler)
			defer srv.Close()
			cl, err := New(Config{BaseURL: srv.URL, Signer: signer(), Timeout: c.timeout})
			if err != nil {
				t.Fatal(err)
			}
			var out bankapi.ReserveFundsResponse
			err = cl.Call(context.Background(), "001", req, &out)
			de, ok := domainerr.As(err)
			if !ok || de.Code != c.code || de.Category != c.category {
				t.Fatalf("err = %v, want %s/%s", err, c.code, c.category)
			}
		})
	}
	// Unreachable bank: BANK_ERROR.
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	cl, _ := New(Config{BaseURL: url, Signer: signer()})
	if err := cl.Call(context.Background(), "001", req, nil); domainerr.Code(err) != "BANK_ERROR" {
		t.Fatalf("unreachable: %v", err)
	}
}

func TestCallSendsSignedJSON(t *testing.T) {
	var got struct {
		path, keyID, sig, idem string
		body                   bankapi.ReserveFundsRequest
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.path, got.keyID, got.sig, got.idem = r.URL.Path, r.Header.Get(signing.HeaderKeyID), r.Header.Get(signing.HeaderSignature), r.Header.Get("X-Idempotency-Key")
		json.NewDecoder(r.Body).Decode(&got.body)
		io.WriteString(w, `{"result":"RESERVED","reservation_ref":"H-1"}`)
	}))
	defer srv.Close()
	cl, _ := New(Config{BaseURL: srv.URL, Signer: signer()})
	var out bankapi.ReserveFundsResponse
	if err := cl.Call(context.Background(), "001", req, &out); err != nil {
		t.Fatal(err)
	}
	if got.path != "/bank/001/zc-ingress/reserve-funds" || got.keyID != "KEY-ZC-1" || got.sig == "" || got.idem != "r1" || got.body != *req {
		t.Fatalf("sent %+v", got)
	}
	if out.Result != "RESERVED" || out.ReservationRef != "H-1" {
		t.Fatalf("decoded %+v", out)
	}
}
