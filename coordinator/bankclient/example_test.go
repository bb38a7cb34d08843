package bankclient_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/bankclient"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/signing"
)

func ExampleClient_Call() {
	bank := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bank/002/zc-ingress/name-check" {
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"error":"frozen","reason_code":"ACCOUNT_FROZEN","category":"AUTH","details":{},"request_id":"r"}`)
			return
		}
		io.WriteString(w, `{"result":"RESERVED","reservation_ref":"H-1"}`)
	}))
	defer bank.Close()
	_, priv, _ := ed25519.GenerateKey(nil)
	c, _ := bankclient.New(bankclient.Config{BaseURL: bank.URL, Signer: signing.Ed25519Signer{KeyID: "KEY-ZC-1", PrivateKey: priv}})

	var r bankapi.ReserveFundsResponse
	err := c.Call(context.Background(), "001", &bankapi.ReserveFundsRequest{RequestIDValue: "r1", TxID: "TX-1",
		Amount: bankapi.Amount{Value: 1200, Currency: "JPY"}, AccountHash: "h:a"}, &r)
	fmt.Println(r.Result, r.ReservationRef, err)

	err = c.Call(context.Background(), "002", &bankapi.NameCheckRequest{RequestIDValue: "r2", TxID: "TX-1", AccountHash: "h:b"}, nil)
	de, _ := domainerr.As(err)
	fmt.Println(de.Code, de.Category)
	// Output:
	// RESERVED H-1 <nil>
	// ACCOUNT_FROZEN AUTH
}
