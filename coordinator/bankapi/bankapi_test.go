package bankapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

func TestCommandsAreTheThirteenOfSpec004(t *testing.T) {
	want := []string{"reserve-funds", "execute-debit", "execute-credit", "release-reserve", "leg-ready-check",
		"authority-check", "name-check", "account-verify", "credit-notify", "rtp-notify", "debit-settled",
		"initialize-bank", "cleanup-bank"}
	if len(Commands) != len(want) {
		t.Fatalf("Commands has %d entries, want %d", len(Commands), len(want))
	}
	for i, c := range Commands {
		if string(c) != want[i] {
			t.Errorf("Commands[%d] = %q, want %q", i, c, want[i])
		}
		req, ok := NewRequest(c)
		if !ok || req.Command() != c {
			t.Errorf("NewRequest(%q) = %v, %v", c, req, ok)
		}
		if !c.Valid() {
			t.Errorf("%q not Valid", c)
		}
	}
	if Command("transfer").Valid() {
		t.Error("unknown command reported valid")
	}
	if got := ExecuteDebit.Path("001"); got != "/bank/001/zc-ingress/execute-debit" {
		t.Errorf("Path = %q", got)
	}
}

// The spec-004 sample bodies decode into the shared types and re-encode
// with exactly the same field names.
func TestSpecBodiesRoundTrip(t *testing.T) {
	cases := map[Command]string{
		ReserveFunds:   `{"request_id":"u1","txid":"TX-1","amount":{"value":1200,"currency":"JPY"},"account_hash":"h:a"}`,
		ExecuteDebit:   `{"request_id":"u1","txid":"TX-1","amount":{"value":1200,"currency":"JPY"},"decision_proof_ref":"DP-1","h_reservation":{"reservation_id":"H-1","mode":"RESERVED"},"execution_deadline":"2026-12-02T10:00:00Z","lane":"EXPRESS","payer_account_hash":"h:a"}`,
		ExecuteCredit:  `{"request_id":"u1","txid":"TX-1","amount":{"value":1200,"currency":"JPY"},"decision_proof_ref":"DP-1","payee_account_hash":"h:b"}`,
		ReleaseReserve: `{"request_id":"u1","txid":"TX-1","reservation_ref":"r1"}`,
		LegReadyCheck:  `{"request_id":"u1","gtid":"GT-1","leg_id":"L1","role":"PAYER","amount":{"value":3000,"currency":"JPY"},"account_hash":"h:a"}`,
		AuthorityCheck: `{"request_id":"u1","txid":"TX-1","check_type":"INITIAL","vault_ref":"v"}`,
		NameCheck:      `{"request_id":"u1","txid":"TX-1","pspr_ref":"p","account_hash":"h:a"}`,
		AccountVerify:  `{"request_id":"u1","verification_id":"V-1","target_account_hash":"h:a","target_account_name":"佐藤 花子"}`,
		CreditNotify:   `{"request_id":"u1","txid":"TX-1","payee_account_hash":"h:b","amount":{"value":1200,"currency":"JPY"},"payer_bank_id":"001","payer_name_masked":"タ●●","purpose":"P2P"}`,
		RTPNotify:      `{"request_id":"u1","rtp_id":"RTP-1","payee_bank_id":"001","payer_bank_id":"002","amount":{"value":2000,"currency":"JPY"},"expires_at":"2026-12-03T00:00:00Z","payee_name":"田中商店","description":"d"}`,
		DebitSettled:   `{"request_id":"u1","txid":"TX-1","amount":{"value":1200,"currency":"JPY"},"payee_bank_id":"002","settled_at":"2026-12-02T10:00:00Z"}`,
		InitializeBank: `{"request_id":"u1","boj_prefund":100000000000}`,
		CleanupBank:    `{}`,
	}
	if len(cases) != len(Commands) {
		t.Fatalf("%d sample bodies for %d commands", len(cases), len(Commands))
	}
	for cmd, body := range cases {
		req, _ := NewRequest(cmd)
		dec := json.NewDecoder(strings.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(req); err != nil {
			t.Errorf("%s: decode spec body: %v", cmd, err)
			continue
		}
		if err := req.Validate(); err != nil {
			t.Errorf("%s: spec body invalid: %v", cmd, err)
		}
		out, _ := json.Marshal(req)
		if !reflect.DeepEqual(keys(t, body), keys(t, string(out))) {
			t.Errorf("%s: field names differ:\n spec %v\n ours %v", cmd, keys(t, body), keys(t, string(out)))
		}
	}
}

func TestValidationNamesTheField(t *testing.T) {
	amt := Amount{Value: 100, Currency: "JPY"}
	cases := []struct {
		name  string
		req   Request
		code  string
		field string
	}{
		{"reserve no request_id", &ReserveFundsRequest{TxID: "T", Amount: amt, AccountHash: "h"}, "MISSING_FIELD", "request_id"},
		{"reserve zero amount", &ReserveFundsRequest{RequestIDValue: "r", TxID: "T", Amount: Amount{0, "JPY"}, AccountHash: "h"}, "INVALID_AMOUNT", "amount.value"},
		{"reserve negative", &ReserveFundsRequest{RequestIDValue: "r", TxID: "T", Amount: Amount{-5, "JPY"}, AccountHash: "h"}, "INVALID_AMOUNT", "amount.value"},
		{"reserve over max", &ReserveFundsRequest{RequestIDValue: "r", TxID: "T", Amount: Amount{MaxAmountValue + 1, "JPY"}, AccountHash: "h"}, "INVALID_AMOUNT", "amount.value"},
		{"reserve bad currency", &ReserveFundsRequest{RequestIDValue: "r", TxID: "T", Amount: Amount{1, "yen"}, AccountHash: "h"}, "INVALID_REQUEST", "amount.currency"},
		{"debit no account nor hold", &ExecuteDebitRequest{RequestIDValue: "r", TxID: "T", Amount: amt, DecisionProofRef: "D"}, "MISSING_FIELD", "h_reservation.reservation_id or payer_account_hash"},
		{"debit bad deadline", &ExecuteDebitRequest{RequestIDValue: "r", TxID: "T", Amount: amt, DecisionProofRef: "D", PayerAccountHash: "h", ExecutionDeadline: "tomorrow"}, "INVALID_REQUEST", "execution_deadline"},
		{"credit no payee", &ExecuteCreditRequest{RequestIDValue: "r", TxID: "T", Amount: amt, DecisionProofRef: "D"}, "MISSING_FIELD", "payee_account_hash"},
		{"release no ref", &ReleaseReserveRequest{RequestIDValue: "r", TxID: "T"}, "MISSING_FIELD", "reservation_ref"},
		{"leg bad role", &LegReadyCheckRequest{RequestIDValue: "r", GTID: "G", LegID: "L", Role: "X", Amount: amt, AccountHash: "h"}, "INVALID_REQUEST", "role"},
		{"authority bad type", &AuthorityCheckRequest{RequestIDValue: "r", TxID: "T", CheckType: "AGAIN"}, "INVALID_REQUEST", "check_type"},
		{"name no account", &NameCheckRequest{RequestIDValue: "r", TxID: "T"}, "MISSING_FIELD", "account_hash"},
		{"verify no id", &AccountVerifyRequest{RequestIDValue: "r", TargetAccountHash: "h"}, "MISSING_FIELD", "verification_id"},
		{"credit-notify no payer bank", &CreditNotifyRequest{RequestIDValue: "r", TxID: "T", PayeeAccountHash: "h", Amount: amt}, "MISSING_FIELD", "payer_bank_id"},
		{"rtp bad expiry", &RTPNotifyRequest{RequestIDValue: "r", RTPID: "R", PayeeBankID: "1", PayerBankID: "2", Amount: amt, ExpiresAt: "soon", PayeeName: "n"}, "INVALID_REQUEST", "expires_at"},
		{"settled no time", &DebitSettledRequest{RequestIDValue: "r", TxID: "T", Amount: amt, PayeeBankID: "2"}, "MISSING_FIELD", "settled_at"},
		{"init negative prefund", &InitializeBankRequest{BOJPrefund: ptr(int64(-1))}, "INVALID_AMOUNT", "boj_prefund"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.req.Validate()
			de, ok := domainerr.As(err)
			if !ok {
				t.Fatalf("Validate() = %v, want a DomainError %s", err, c.code)
			}
			if de.Code != c.code || de.Details["field"] != c.field {
				t.Fatalf("Validate() = %s field=%v, want %s field=%s", de.Code, de.Details["field"], c.code, c.field)
			}
			if de.Details["command"] != string(c.req.Command()) {
				t.Errorf("details.command = %v", de.Details["command"])
			}
		})
	}
}

func TestInitializeBankPrefundDefault(t *testing.T) {
	if got := (&InitializeBankRequest{}).Prefund(); got != DefaultBOJPrefund {
		t.Errorf("default prefund = %d", got)
	}
	if got := (&InitializeBankRequest{BOJPrefund: ptr(int64(5))}).Prefund(); got != 5 {
		t.Errorf("prefund = %d", got)
	}
}

func ExampleCommand_Path() {
	for _, c := range Commands[:2] {
		fmt.Println(c.Path("001"))
	}
	// Output:
	// /bank/001/zc-ingress/reserve-funds
	// /bank/001/zc-ingress/execute-debit
}

func ptr[T any](v T) *T { return &v }

func keys(t *testing.T, s string) []string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			out = append(out, prefix+k)
			if sub, ok := v.(map[string]any); ok {
				walk(prefix+k+".", sub)
			}
		}
	}
	walk("", m)
	sort.Strings(out)
	return out
}

// The zcgw extension compensate is not one of the 13, decodes through
// NewRequest like them and validates its required fields.
func TestCompensateExtension(t *testing.T) {
	if Compensate.Valid() || len(Extensions) != 1 || Extensions[0] != Compensate {
		t.Fatalf("compensate must be an extension, not one of the 13: %v", Extensions)
	}
	req, ok := NewRequest(Compensate)
	if !ok || req.Command() != Compensate {
		t.Fatalf("NewRequest(compensate) = %v %v", req, ok)
	}
	body := `{"request_id":"TX:TX-1:compensate:ZC","txid":"TX-1","reason":"FAILED_EXEC_TIMEOUT"}`
	if err := json.Unmarshal([]byte(body), req); err != nil || req.Validate() != nil || req.RequestID() != "TX:TX-1:compensate:ZC" {
		t.Fatalf("decode: %+v %v", req, err)
	}
	if out, _ := json.Marshal(req); string(out) != body {
		t.Fatalf("re-encoded %s", out)
	}
	err := (&CompensateRequest{RequestIDValue: "r"}).Validate()
	if de, ok := domainerr.As(err); !ok || de.Code != "MISSING_FIELD" || de.Details["field"] != "txid" {
		t.Fatalf("missing txid: %v", err)
	}
}
