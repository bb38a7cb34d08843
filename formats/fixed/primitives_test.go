package fixed

import (
	"bytes"
	"math"
	"testing"
)

func TestParseDigits(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0000150000", 150000, true},
		{"9", 9, true},
		{"18446744073709551615", math.MaxUint64, true},
		{"18446744073709551616", 0, false},
		{"99999999999999999999", 0, false},
		{"", 0, false},
		{"12 4", 0, false},
		{" 123", 0, false},
		{"00001A0000", 0, false},
		{"-1", 0, false},
		{"１", 0, false},
	} {
		v, ok := ParseDigits([]byte(tc.in))
		if v != tc.want || ok != tc.ok {
			t.Errorf("ParseDigits(%q) = %d,%v want %d,%v", tc.in, v, ok, tc.want, tc.ok)
		}
	}
}

func TestPutDigits(t *testing.T) {
	b := make([]byte, 10)
	if !PutDigits(b, 150000) || string(b) != "0000150000" {
		t.Fatalf("got %q", b)
	}
	if !PutDigits(b, 9999999999) || string(b) != "9999999999" {
		t.Fatalf("got %q", b)
	}
	if PutDigits(b, 10000000000) {
		t.Fatal("11 digits fit in 10")
	}
	if !PutDigits(nil, 0) || PutDigits(nil, 1) {
		t.Fatal("empty dst")
	}
}

func TestOverpunch(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"000012{", 120, true},
		{"000012}", -120, true},
		{"000012A", 121, true},
		{"000012J", -121, true},
		{"000012R", -129, true},
		{"000012I", 129, true},
		{"0000123", 123, true}, // unsigned last digit (zone F)
		{"J", -1, true},
		{"{", 0, true},
		{"922337203685477580G", math.MaxInt64, true},
		{"922337203685477580Q", math.MinInt64, true},
		{"922337203685477580H", 0, false},
		{"000012S", 0, false},
		{"000012 ", 0, false},
		{"00A012{", 0, false},
		{"", 0, false},
	} {
		v, ok := ParseOverpunch([]byte(tc.in))
		if v != tc.want || ok != tc.ok {
			t.Errorf("ParseOverpunch(%q) = %d,%v want %d,%v", tc.in, v, ok, tc.want, tc.ok)
		}
		if tc.ok && tc.in[len(tc.in)-1] > '9' {
			b := make([]byte, len(tc.in))
			if !PutOverpunch(b, tc.want) || string(b) != tc.in {
				t.Errorf("PutOverpunch(%d) = %q want %q", tc.want, b, tc.in)
			}
		}
	}
	if PutOverpunch(make([]byte, 3), 1000) || PutOverpunch(make([]byte, 3), -1000) {
		t.Error("4 digits fit in S9(3)")
	}
}

func TestPacked(t *testing.T) {
	for _, tc := range []struct {
		in       []byte
		want     int64
		ok       bool
		unsigned bool
	}{
		{[]byte{0x12, 0x3C}, 123, true, false},
		{[]byte{0x12, 0x3D}, -123, true, false},
		{[]byte{0x12, 0x3F}, 123, true, true},
		{[]byte{0x00, 0x00, 0x0C}, 0, true, false},
		{[]byte{0x0C}, 0, true, false},
		{[]byte{0x92, 0x23, 0x37, 0x20, 0x36, 0x85, 0x47, 0x75, 0x80, 0x7C}, math.MaxInt64, true, false},
		{[]byte{0x92, 0x23, 0x37, 0x20, 0x36, 0x85, 0x47, 0x75, 0x80, 0x8D}, math.MinInt64, true, false},
		{[]byte{0x92, 0x23, 0x37, 0x20, 0x36, 0x85, 0x47, 0x75, 0x80, 0x8C}, 0, false, false},
		{[]byte{0x12, 0x3A}, 0, false, false},
		{[]byte{0x12, 0x3E}, 0, false, false},
		{[]byte{0x1A, 0x3C}, 0, false, false},
		{[]byte{0xA2, 0x3C}, 0, false, false},
		{[]byte{0x40, 0x40}, 0, false, false},
		{nil, 0, false, false},
	} {
		v, ok := ParsePacked(tc.in)
		if v != tc.want || ok != tc.ok {
			t.Errorf("ParsePacked(% X) = %d,%v want %d,%v", tc.in, v, ok, tc.want, tc.ok)
		}
		if tc.ok {
			b := make([]byte, len(tc.in))
			if !PutPacked(b, tc.want, tc.unsigned) || !bytes.Equal(b, tc.in) {
				t.Errorf("PutPacked(%d) = % X want % X", tc.want, b, tc.in)
			}
		}
	}
	if PutPacked(make([]byte, 2), 1000, false) {
		t.Error("4 digits fit in P(2)")
	}
	if PutPacked(make([]byte, 2), -1, true) {
		t.Error("negative unsigned accepted")
	}
}

func TestTextSets(t *testing.T) {
	for _, tc := range []struct {
		in          string
		alnum, kana int
	}{
		{"ABC 123", -1, -1},
		{"\xb6\xde\xd7\xc2\xc0\xdb\xb3", -1, -1}, // ｶﾞﾗﾂﾀﾛｳ
		{"(\xb6)-./", -1, -1},
		{"abc", -1, 0},       // lower case refused in K
		{"\xb1\xa7", -1, 1},  // small ｧ refused in K
		{"AB,C", -1, 2},      // comma refused in K
		{"\xa2X\xa3", -1, 0}, // ｢ ｣ refused in K
		{"\xb0\xa6", -1, -1}, // ｰ ｦ allowed
		{"AB\x80", 2, 2},     // not JIS X 0201
		{"A\x0d\x0a", 1, 1},  // controls
		{"\xe0\xa0", 0, 0},   // SJIS lead byte
	} {
		if got := FirstInvalidAlnum([]byte(tc.in)); got != tc.alnum {
			t.Errorf("FirstInvalidAlnum(%q) = %d want %d", tc.in, got, tc.alnum)
		}
		if got := FirstInvalidKana([]byte(tc.in)); got != tc.kana {
			t.Errorf("FirstInvalidKana(%q) = %d want %d", tc.in, got, tc.kana)
		}
	}
	b := make([]byte, 5)
	if !PutText(b, "AB") || string(b) != "AB   " || string(TrimText(b)) != "AB" {
		t.Fatalf("PutText %q", b)
	}
	if PutText(b, "ABCDEF") {
		t.Fatal("6 bytes fit in 5")
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		typ    Type
		in     string
		reason Reason
		idx    int
	}{
		{N, "0012", 0, -1},
		{N, "00A2", NotNumeric, 2},
		{N, "00 2", NotNumeric, 2},
		{S, "001J", 0, -1},
		{S, "0A1J", NotNumeric, 1},
		{S, "001S", BadSign, 3},
		{P, "\x12\x3C", 0, -1},
		{P, "\x1B\x3C", BadPacked, 0},
		{P, "\x12\x3B", BadSign, 1},
		{K, "ｱ", BadChar, 0}, // UTF-8 bytes are not canonical
		{X, "A B", 0, -1},
		{Filler, "   ", 0, -1},
		{Filler, "  x", NotBlank, 2},
	} {
		r, i := Check(tc.typ, []byte(tc.in))
		if r != tc.reason || i != tc.idx {
			t.Errorf("Check(%v, %q) = %v,%d want %v,%d", tc.typ, tc.in, r, i, tc.reason, tc.idx)
		}
	}
}

func TestParseType(t *testing.T) {
	for in, want := range map[string]Type{"x": X, "9": N, "N": N, "S9": S, "s": S, "K": K, "P": P, "comp-3": P, "FILLER": Filler, "-": Filler} {
		got, err := ParseType(in)
		if err != nil || got != want {
			t.Errorf("ParseType(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseType("Z"); err == nil {
		t.Error("Z accepted")
	}
}
