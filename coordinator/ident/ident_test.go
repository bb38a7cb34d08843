package ident

import (
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

func TestGrammar(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	cases := []struct {
		kind Kind
		v    string
		ok   bool
	}{
		{TxID, "TX-0123456789abcdef01234567", true},
		{TxID, "001-INV.2026_04", true},
		{TxID, long(32), true},
		{TxID, long(33), false},
		{TxID, "TX-1\n", false},
		{TxID, "TX-\x001", false},
		{TxID, "TX-1 2", false},
		{TxID, "TX:1", false},
		{TxID, "TX/1", false},
		{TxID, "TX-日本", false},
		{TxID, "TX-\x7f", false},
		{TxID, "TX-\t", false},
		{TxID, "", false},
		{IdempotencyKey, "FD:" + strings.Repeat("0", 64) + ":12", true},
		{IdempotencyKey, "4f1c-9b2e/+=@x", true},
		{IdempotencyKey, long(128), true},
		{IdempotencyKey, long(60 << 10), false},
		{IdempotencyKey, "a b", false},
		{IdempotencyKey, `a"b`, false},
		{RequestID, "TX:TX-1:reserve-funds:ZC", true},
		{RequestID, "bad id\r\nx", false},
		{AccountHash, "h:" + strings.Repeat("f", 64), true},
		{AccountHash, "h:001-0001", true},
		{AccountHash, "h/x", false},
		{AccountHash, long(129), false},
		{BankID, "001", true},
		{BankID, "BANK_A", true},
		{BankID, "0:1", false},
		{BankID, "00-1", false},
		{BankID, long(17), false},
		{ParticipantRef, "pr:001:42", true},
		{ParticipantRef, long(8 << 10), false},
		{ClientRef, "zengin:0123456789abcdef:2", true},
		{PSPRRef, "PSPR-001-9", true},
		{RefProof, "MEUCIQD+/x==", true},
		{Nonce, "0123456789abcdef0123456789abcdef", true},
		{Nonce, long(129), false},
		{Nonce, "n\x00", false},
		{KeyID, "KEY-ZC-1", true},
		{KeyID, "KEY ZC", false},
		{Purpose, "SALARY", true},
		{Purpose, "給与", false},
	}
	for _, c := range cases {
		if got := c.kind.Valid(c.v); got != c.ok {
			t.Errorf("%s %q: valid=%v, want %v", c.kind.Name, trunc(c.v), got, c.ok)
		}
	}
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// Every charset is printable ASCII without space: no kind admits a byte
// outside 0x21..0x7e, whatever its other choices.
func TestNoKindAdmitsControlSpaceOrNonASCII(t *testing.T) {
	for _, k := range Kinds {
		for b := 0; b < 256; b++ {
			if (b <= ' ' || b > '~') && k.Charset.Contains(byte(b)) {
				t.Errorf("%s admits byte 0x%02x", k.Name, b)
			}
		}
		if k.Max <= 0 || k.Max > 1024 {
			t.Errorf("%s: max %d", k.Name, k.Max)
		}
		if strings.ContainsAny(k.Name, " ") || k.Where == "" {
			t.Errorf("%s: name or source missing", k.Name)
		}
	}
	for _, k := range []Kind{TxID, BankID, Nonce, KeyID} {
		if k.Charset.Contains(':') || k.Charset.Contains('/') {
			t.Errorf("%s admits a key or path separator", k.Name)
		}
	}
	if BankID.Charset.Contains('-') {
		t.Error("bank_id admits '-', the txid namespace separator")
	}
}

func TestCheckNamesTheFieldAndNeverEchoesTheValue(t *testing.T) {
	v := "TX-" + strings.Repeat("x", 10) + "\x00secret"
	err := Check(TxID, "txid", v)
	de, ok := domainerr.As(err)
	if !ok || de.Code != "INVALID_REQUEST" {
		t.Fatalf("got %v", err)
	}
	if de.Details["field"] != "txid" || de.Details["byte_offset"] != 13 || !strings.Contains(de.Message, "txid") ||
		!strings.Contains(de.Message, "NUL") {
		t.Fatalf("details %v, message %q", de.Details, de.Message)
	}
	if strings.Contains(de.Message, "secret") {
		t.Fatalf("value echoed: %q", de.Message)
	}
	if err := Check(IdempotencyKey, "idempotency_key", strings.Repeat("k", 60<<10)); domainerr.Code(err) != "INVALID_REQUEST" {
		t.Fatalf("60 KB key: %v", err)
	} else if d, _ := domainerr.As(err); d.Details["length"] != 60<<10 || d.Details["max_length"] != 128 {
		t.Fatalf("details %v", d.Details)
	}
	if err := Check(TxID, "txid", ""); err != nil {
		t.Fatalf("empty is the caller's MISSING_FIELD: %v", err)
	}
	if err := CheckAll(Field{"payer.bank_id", BankID, "001"}, Field{"payer.account_hash", AccountHash, "h\nx"}); err == nil ||
		!strings.Contains(err.Error(), "payer.account_hash") {
		t.Fatalf("CheckAll: %v", err)
	}
}

func TestTruncate(t *testing.T) {
	if got := Truncate("short", 10); got != "short" {
		t.Fatal(got)
	}
	got := Truncate(strings.Repeat("p", 5000), 64)
	if len(got) != 64 || !strings.HasSuffix(got, "...[+4952 bytes]") {
		t.Fatalf("%q (%d)", got, len(got))
	}
}

func TestInNamespace(t *testing.T) {
	for _, c := range []struct {
		txid, bank string
		ok         bool
	}{{"001-A", "001", true}, {"001-", "001", false}, {"0011-A", "001", false}, {"002-A", "001", false}, {"TX-1", "001", false}, {"-A", "", false}} {
		if InNamespace(c.txid, c.bank) != c.ok {
			t.Errorf("InNamespace(%q, %q) != %v", c.txid, c.bank, c.ok)
		}
	}
}
