package coremsg

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/formats/charset"
	"github.com/zcgw/zcgw/formats/fixed"
)

var update = flag.Bool("update", false, "rewrite fixtures/coremsg/*.hex from the samples")

const goldenDir = "../../fixtures/coremsg"

// filled returns m with the header fields Encode fills in.
func filled(m Message) Message {
	ti, _ := Lookup(m.Body.MsgType())
	m.Header.MsgType = ti.Code
	m.Header.Version = Version
	m.Header.BodyLength = ti.Layout.Length()
	return m
}

func goldenPreamble(g golden) string {
	ti, _ := Lookup(g.msg.Body.MsgType())
	dir := "request"
	if ti.Reply {
		dir = "reply"
	}
	return "# coremsg golden message " + g.file + ": " + ti.Operation + " " + dir + " (" + ti.Code + ")\n" +
		"# charset: " + g.cs.Name() + "\n" +
		"# regenerate: go test ./formats/coremsg -run TestGolden -update\n"
}

// Each golden file decodes to its sample message, re-encodes to the same
// bytes, and its annotations are exactly what Annotate says about it.
func TestGolden(t *testing.T) {
	covered := map[string]bool{}
	for _, g := range goldens() {
		path := filepath.Join(goldenDir, g.file)
		if *update {
			raw, err := Encode(&g.msg, g.cs)
			if err != nil {
				t.Fatalf("%s: %v", g.file, err)
			}
			ann, err := Annotate(raw, g.cs)
			if err != nil {
				t.Fatalf("%s: %v", g.file, err)
			}
			if err := os.WriteFile(path, []byte(goldenPreamble(g)+ann), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", g.file, err)
		}
		raw, err := ParseHex(string(text))
		if err != nil {
			t.Fatalf("%s: %v", g.file, err)
		}
		m, err := Decode(raw, g.cs)
		if err != nil {
			t.Fatalf("%s: %v", g.file, err)
		}
		if want := filled(g.msg); !reflect.DeepEqual(*m, want) {
			t.Errorf("%s decodes to\n%+v %+v\nwant\n%+v %+v", g.file, m.Header, m.Body, want.Header, want.Body)
		}
		again, err := Encode(m, g.cs)
		if err != nil || !bytes.Equal(again, raw) {
			t.Errorf("%s: re-encoding differs (%v)\n got %x\nwant %x", g.file, err, again, raw)
		}
		ann, err := Annotate(raw, g.cs)
		if err != nil || goldenPreamble(g)+ann != string(text) {
			t.Errorf("%s: annotations are stale (%v); rerun with -update and review the diff", g.file, err)
		}
		covered[m.Body.MsgType()] = true
	}
	for _, ti := range Types() {
		if !covered[ti.Code] {
			t.Errorf("no golden file for %s", ti.Code)
		}
	}
}

func TestRoundTripEveryTypeEveryCharset(t *testing.T) {
	for _, g := range goldens() {
		for _, cs := range []*charset.Charset{nil, charset.ShiftJIS, charset.EBCDIC290} {
			raw, err := Encode(&g.msg, cs)
			if err != nil {
				t.Fatalf("%s %v: %v", g.file, cs, err)
			}
			ti, _ := Lookup(g.msg.Body.MsgType())
			if len(raw) != HeaderLen+ti.Layout.Length() {
				t.Fatalf("%s: %d bytes", g.file, len(raw))
			}
			m, err := Decode(raw, cs)
			if err != nil {
				t.Fatalf("%s %v: %v", g.file, cs, err)
			}
			if want := filled(g.msg); !reflect.DeepEqual(*m, want) {
				t.Fatalf("%s %v: got %+v want %+v", g.file, cs, *m, want)
			}
		}
	}
}

func TestLayouts(t *testing.T) {
	ls := Layouts()
	if len(ls) != 19 || ls[0].Name() != "coremsg.header" || ls[0].Length() != HeaderLen {
		t.Fatalf("%d layouts, first %v", len(ls), ls[0])
	}
	seen := map[string]bool{}
	for _, l := range ls {
		if seen[l.Name()] {
			t.Errorf("duplicate layout name %s", l.Name())
		}
		seen[l.Name()] = true
		for _, f := range l.Fields() {
			if f.Type != fixed.Filler && f.Label == "" {
				t.Errorf("%s.%s has no label", l.Name(), f.Name)
			}
		}
	}
	// At least one signed zoned and one packed money field.
	bal, _ := Lookup("BALR")
	if f, _ := bal.Layout.Field("Ledger"); f.Type != fixed.S {
		t.Errorf("BALR.Ledger is %v", f.Type)
	}
	pst, _ := Lookup("PSTQ")
	if f, _ := pst.Layout.Field("Amount"); f.Type != fixed.P || f.Start != 77 {
		t.Errorf("PSTQ.Amount %+v", f)
	}
}

func mustEncode(t *testing.T, g golden) []byte {
	t.Helper()
	raw, err := Encode(&g.msg, g.cs)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Corrupted messages: each case asserts the exact error position.
func TestDecodeCorruptedPositions(t *testing.T) {
	g := goldens()[0] // PSTQ debit in IBM290
	good := mustEncode(t, g)
	e := charset.EBCDIC290
	enc := func(s string) []byte { b, _ := e.EncodeString(s); return b }
	for _, tc := range []struct {
		name   string
		mod    func([]byte) []byte
		reason fixed.Reason
		field  string
		offset int64
	}{
		{"unknown type", func(b []byte) []byte { copy(b, enc("XXXQ")); return b }, fixed.UnknownRecordType, "MsgType", 0},
		{"unsupported version", func(b []byte) []byte { copy(b[4:], enc("02")); return b }, fixed.Invalid, "Version", 4},
		{"short header", func(b []byte) []byte { return b[:100] }, fixed.ShortRecord, "", 100},
		{"truncated body", func(b []byte) []byte { return b[:200] }, fixed.ShortRecord, "", 200},
		{"extra bytes", func(b []byte) []byte { return append(b, 0x40, 0x40) }, fixed.LongRecord, "", 240},
		{"body length mismatch", func(b []byte) []byte { copy(b[95:], enc("000119")); return b }, fixed.LengthMismatch, "BodyLength", 95},
		{"bad digit in body length", func(b []byte) []byte { b[99] = 0xC1; return b }, fixed.NotNumeric, "BodyLength", 99},
		{"bad packed digit in amount", func(b []byte) []byte { b[120+76+5] = 0xA2; return b }, fixed.BadPacked, "Amount", 201},
		{"bad packed sign in amount", func(b []byte) []byte { b[120+76+7] = 0x01; return b }, fixed.BadSign, "Amount", 203},
		{"bad digit in account", func(b []byte) []byte { b[120+69+3] = 0x40; return b }, fixed.NotNumeric, "AccountNo", 192},
		{"stray byte in memo", func(b []byte) []byte { b[120+95+2] = 0x62; return b }, fixed.BadChar, "Memo", 217}, // 'a'
		{"control byte in ref", func(b []byte) []byte { b[120+1+4] = 0x0E; return b }, fixed.BadChar, "PostingRef", 125},
		{"invalid kind", func(b []byte) []byte { b[120] = enc("Z")[0]; return b }, fixed.Invalid, "Kind", 120},
		{"invalid date", func(b []byte) []byte { copy(b[120+87:], enc("20261302")); return b }, fixed.Invalid, "ValueDate", 207},
		{"request with return code", func(b []byte) []byte { copy(b[101:], enc("0008")); return b }, fixed.Invalid, "ReturnCode", 101},
		{"bad timestamp", func(b []byte) []byte { copy(b[78:], enc("20261232")); return b }, fixed.Invalid, "Timestamp", 78},
		{"filler not blank", func(b []byte) []byte { b[119] = enc("X")[0]; return b }, fixed.NotBlank, "FILLER@106", 119},
	} {
		raw := tc.mod(append([]byte(nil), good...))
		_, err := Decode(raw, e)
		var fe *fixed.Error
		if !errors.As(err, &fe) {
			t.Errorf("%s: err %v", tc.name, err)
			continue
		}
		if fe.Reason != tc.reason || fe.Field != tc.field || fe.Offset != tc.offset {
			t.Errorf("%s: got reason %v field %q offset %d (%v); want %v %q %d", tc.name, fe.Reason, fe.Field, fe.Offset, err, tc.reason, tc.field, tc.offset)
		}
	}
}

func TestDecodeUnknownTypeError(t *testing.T) {
	raw := mustEncode(t, goldens()[0])
	zz, _ := charset.EBCDIC290.EncodeString("ZZZQ")
	copy(raw, zz)
	_, err := Decode(raw, charset.EBCDIC290)
	if !errors.Is(err, fixed.UnknownRecordType) || !strings.Contains(err.Error(), `unknown message type "ZZZQ"`) {
		t.Fatalf("%v", err)
	}
}

func TestEncodeRefusesInvalid(t *testing.T) {
	for _, tc := range []struct {
		name   string
		msg    Message
		field  string
		reason fixed.Reason
		offset int64
	}{
		{"kind", Message{hdr("r", 0), &PostingRequest{Kind: "X", PostingRef: "P", Branch: "123", AccountType: 1, AccountNo: "1234567", Amount: 1, Currency: "JPY", ValueDate: "20261202"}}, "Kind", fixed.Invalid, 120},
		{"zero amount", Message{hdr("r", 0), &PostingRequest{Kind: "D", PostingRef: "P", Branch: "123", AccountType: 1, AccountNo: "1234567", Amount: 0, Currency: "JPY", ValueDate: "20261202"}}, "Amount", fixed.Invalid, 196},
		{"reversal without original", Message{hdr("r", 0), &PostingRequest{Kind: "V", PostingRef: "P", Branch: "123", AccountType: 1, AccountNo: "1234567", Amount: 5, Currency: "JPY", ValueDate: "20261202"}}, "OriginalRef", fixed.Invalid, 153},
		{"amount too big", Message{hdr("r", 0), &PostingRequest{Kind: "D", PostingRef: "P", Branch: "123", AccountType: 1, AccountNo: "1234567", Amount: 1_000_000_000_000_000, Currency: "JPY", ValueDate: "20261202"}}, "Amount", fixed.Overflow, 196},
		{"lower case name", Message{hdr("r", 0), &NameCheckRequest{Branch: "123", AccountType: 1, AccountNo: "1234567", Name: "sato"}}, "Name", fixed.BadChar, 131},
		{"type mismatch", Message{Header{MsgType: "PSTR", RequestID: "r", BankCode: "0005", Timestamp: "20261202101500123"}, &NameCheckReply{Result: "M"}}, "MsgType", fixed.Invalid, 0},
		{"bad return code", Message{hdr("r", 3), &NameCheckReply{Result: "M"}}, "ReturnCode", fixed.Invalid, 101},
		{"body length", Message{Header{RequestID: "r", BankCode: "0005", Timestamp: "20261202101500123", BodyLength: 99, ReturnCode: 0}, &NameCheckReply{Result: "M"}}, "BodyLength", fixed.LengthMismatch, 95},
		{"missing request id", Message{hdr("", 0), &BalanceRequest{Branch: "123", AccountType: 1, AccountNo: "1234567"}}, "RequestID", fixed.Invalid, 6},
	} {
		_, err := Encode(&tc.msg, charset.EBCDIC290)
		var fe *fixed.Error
		if !errors.As(err, &fe) || fe.Field != tc.field || fe.Reason != tc.reason || fe.Offset != tc.offset {
			t.Errorf("%s: %v (want %s %v at %d)", tc.name, err, tc.field, tc.reason, tc.offset)
		}
	}
	if _, err := Encode(&Message{}, nil); err == nil {
		t.Error("empty message accepted")
	}
}

func TestTimestamp(t *testing.T) {
	ts, err := ParseTimestamp("20261202101500123")
	if err != nil {
		t.Fatal(err)
	}
	if got := FormatTimestamp(ts.UTC()); got != "20261202101500123" {
		t.Fatalf("got %s", got)
	}
	if ts.UTC().Format("2006-01-02T15:04:05.000Z") != "2026-12-02T01:15:00.123Z" {
		t.Fatalf("UTC %v", ts.UTC())
	}
	for _, bad := range []string{"2026120210150012", "20261302101500123", "2026120210150012x"} {
		if _, err := ParseTimestamp(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseHexErrors(t *testing.T) {
	if _, err := ParseHex("# c\nd7e2\nzz\n"); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("%v", err)
	}
	b, err := ParseHex("# c\n d7 e2 \n\n4040\n")
	if err != nil || !bytes.Equal(b, []byte{0xd7, 0xe2, 0x40, 0x40}) {
		t.Fatalf("%x %v", b, err)
	}
}

// Errors on EBCDIC messages show the bytes in hex and the decoded text,
// and a charset error carries the absolute offset all the way down.
func TestEBCDICErrorText(t *testing.T) {
	raw := mustEncode(t, goldens()[0])
	bad := append([]byte(nil), raw...)
	bad[120+69+3] = 0xC1 // 'A' in the account number
	_, err := Decode(bad, charset.EBCDIC290)
	want := `record (coremsg.PSTQ posting request) field AccountNo (口座番号) column 73 offset 192: not numeric: bytes 0xF1 F2 F3 C1 F5 F6 F7 (text "123A567")`
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	bad = append([]byte(nil), raw...)
	bad[120+95+2] = 0x0E // SO in the memo
	_, err = Decode(bad, charset.EBCDIC290)
	var be *charset.ByteError
	var fe *fixed.Error
	if !errors.As(err, &fe) || !errors.As(err, &be) || fe.Offset != 217 || be.Offset != 217 || be.Byte != 0x0E || fe.Charset != "IBM290" {
		t.Fatalf("%v", err)
	}
}
