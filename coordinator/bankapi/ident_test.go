package bankapi

import (
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// The ingress bodies' identifiers follow coordinator/ident: a control
// byte, a non-ASCII byte or an oversized value is INVALID_REQUEST naming
// the command and the field.
func TestIngressIdentifiersFollowTheGrammar(t *testing.T) {
	jpy := Amount{Value: 100, Currency: "JPY"}
	for _, c := range []struct {
		req   Request
		field string
	}{
		{&ReserveFundsRequest{RequestIDValue: "r1", TxID: "TX-1\n", Amount: jpy, AccountHash: "h:a"}, "txid"},
		{&ReserveFundsRequest{RequestIDValue: "r1", TxID: "TX-\x001", Amount: jpy, AccountHash: "h:a"}, "txid"},
		{&ReserveFundsRequest{RequestIDValue: "r1", TxID: "TX-送金", Amount: jpy, AccountHash: "h:a"}, "txid"},
		{&ReserveFundsRequest{RequestIDValue: strings.Repeat("r", 60<<10), TxID: "TX-1", Amount: jpy, AccountHash: "h:a"}, "request_id"},
		{&ReserveFundsRequest{RequestIDValue: "r1", TxID: "TX-1", Amount: jpy, AccountHash: strings.Repeat("h", 60<<10)}, "account_hash"},
		{&ExecuteDebitRequest{RequestIDValue: "r1", TxID: "TX-1", Amount: jpy, DecisionProofRef: "DP-1", PayerAccountHash: "h a"}, "payer_account_hash"},
		{&NameCheckRequest{RequestIDValue: "r1", TxID: "TX-1", PSPRRef: strings.Repeat("p", 8<<10)}, "pspr_ref"},
		{&CreditNotifyRequest{RequestIDValue: "r1", TxID: "TX-1", PayeeAccountHash: "h:b", Amount: jpy, PayerBankID: "0-01"}, "payer_bank_id"},
	} {
		err := c.req.Validate()
		de, ok := domainerr.As(err)
		if !ok || de.Code != "INVALID_REQUEST" || de.Details["field"] != c.field || de.Details["command"] != string(c.req.Command()) {
			t.Errorf("%s %s: %v", c.req.Command(), c.field, err)
		}
	}
	ok := &ReserveFundsRequest{RequestIDValue: "TX:TX-1:reserve-funds:ZC", TxID: "TX-1", Amount: jpy, AccountHash: "h:" + strings.Repeat("a", 64)}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a well-formed body: %v", err)
	}
}
