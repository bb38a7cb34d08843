package charset

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/unicode/norm"
)

const fixtureDir = "../../fixtures/ebcdic"

// readDecode reads decode-<cs>.txt: byte -> decoded UTF-8 ("" if refused).
func readDecode(t *testing.T, cs string) [256]string {
	t.Helper()
	var out [256]string
	n := 0
	for _, line := range readLines(t, "decode-"+cs+".txt") {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("bad line %q", line)
		}
		b, err := hex.DecodeString(f[0])
		if err != nil || len(b) != 1 {
			t.Fatalf("bad byte in %q", line)
		}
		if f[1] != "-" {
			u, err := hex.DecodeString(f[1])
			if err != nil {
				t.Fatalf("bad utf8 hex in %q", line)
			}
			out[b[0]] = string(u)
		}
		n++
	}
	if n != 256 {
		t.Fatalf("decode-%s.txt has %d entries, want 256", cs, n)
	}
	return out
}

type vector struct {
	enc  []byte
	text string
}

func readEncode(t *testing.T, cs string) []vector {
	t.Helper()
	var out []vector
	for _, line := range readLines(t, "encode-"+cs+".txt") {
		h, text, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("bad line %q", line)
		}
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatalf("bad hex in %q", line)
		}
		out = append(out, vector{b, text})
	}
	if len(out) == 0 {
		t.Fatalf("encode-%s.txt: no vectors", cs)
	}
	return out
}

func readLines(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func isControl(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return r < 0x20 || (r >= 0x7F && r <= 0x9F)
}

// Every byte our CCSID 290 table maps must decode exactly as iconv's IBM930
// does; every byte we leave unmapped must be a control or refused by iconv.
func TestIBM290AgainstIconvIBM930(t *testing.T) {
	want := readDecode(t, "IBM930")
	mapped := 0
	for b := 0; b < 256; b++ {
		r := ibm290[b]
		if r < 0 {
			if want[b] != "" && !isControl(want[b]) {
				t.Errorf("byte %02X: unmapped here, iconv IBM930 gives %q", b, want[b])
			}
			continue
		}
		mapped++
		if string(r) != want[b] {
			t.Errorf("byte %02X: table %q, iconv IBM930 %q", b, r, want[b])
		}
	}
	if mapped != 163 {
		t.Errorf("table maps %d bytes, want 163", mapped)
	}
}

// glibc's IBM290 names the katakana code points with full-width katakana;
// their half-width forms must be the runes of our table.
func TestIBM290AgainstIconvIBM290(t *testing.T) {
	want := readDecode(t, "IBM290")
	checked := 0
	for b := 0; b < 256; b++ {
		w := want[b]
		if w == "" || isControl(w) {
			continue
		}
		r, _ := utf8.DecodeRuneInString(w)
		hb, n := HalfWidth(r)
		if n != 1 {
			// ¥ £ ¬ ¢ ‾ ¦ and similar have no canonical form: compare runes.
			if ibm290[b] != r && !(r == 0xA6 && ibm290[b] == -1) {
				t.Errorf("byte %02X: iconv IBM290 %q, table %q", b, w, ibm290[b])
			}
			continue
		}
		if got, ok := canonicalByte(ibm290[b]); !ok || got != hb[0] {
			t.Errorf("byte %02X: iconv IBM290 %q (half-width %02X), table %q", b, w, hb[0], ibm290[b])
		}
		checked++
	}
	if checked < 120 {
		t.Errorf("only %d bytes cross-checked", checked)
	}
}

func TestEncodeVectorsFromIconv(t *testing.T) {
	for _, tc := range []struct {
		file string
		cs   *Charset
		wide bool // input text is full-width: convert with AppendHalfWidth first
	}{
		{"IBM930", EBCDIC290, false},
		{"IBM290", EBCDIC290, true},
		{"IBM037", CP037, false},
		{"IBM1047", CP1047, false},
	} {
		for _, v := range readEncode(t, tc.file) {
			var got []byte
			var err error
			if tc.wide {
				var canon []byte
				canon, err = AppendHalfWidth(nil, v.text)
				if err == nil {
					got = make([]byte, len(canon))
					err = tc.cs.FromCanonical(got, canon, nil)
				}
			} else {
				got, err = tc.cs.EncodeString(v.text)
			}
			if err != nil {
				t.Errorf("%s %q: %v", tc.file, v.text, err)
				continue
			}
			if !bytes.Equal(got, v.enc) {
				t.Errorf("%s %q:\n got %x\nwant %x", tc.file, v.text, got, v.enc)
			}
			// And back: bytes -> canonical -> UTF-8 gives the half-width text.
			canon := make([]byte, len(v.enc))
			if err := tc.cs.ToCanonical(canon, v.enc, nil); err != nil {
				t.Errorf("%s %x: %v", tc.file, v.enc, err)
				continue
			}
			if tc.wide {
				want, _ := AppendHalfWidth(nil, v.text)
				if !bytes.Equal(canon, want) {
					t.Errorf("%s %x decodes to % X, want % X", tc.file, v.enc, canon, want)
				}
				continue
			}
			if s, _ := CanonicalString(canon); s != v.text {
				t.Errorf("%s %x decodes to %q, want %q", tc.file, v.enc, s, v.text)
			}
		}
	}
}

func TestCharmapAgainstIconv(t *testing.T) {
	for _, tc := range []struct {
		file string
		cs   *Charset
	}{{"IBM037", CP037}, {"IBM1047", CP1047}} {
		want := readDecode(t, tc.file)
		for b := 0; b < 256; b++ {
			if r := tc.cs.runes[b]; r >= 0 && string(r) != want[b] {
				t.Errorf("%s byte %02X: x/text %q, iconv %q", tc.file, b, r, want[b])
			}
		}
	}
}

func TestCanonicalCoverage(t *testing.T) {
	for _, tc := range []struct {
		cs   *Charset
		kana bool
	}{{ShiftJIS, true}, {EBCDIC290, true}, {CP037, false}, {CP1047, false}} {
		for b := 0; b < 256; b++ {
			c := byte(b)
			if !IsCanonical(c) {
				if _, ok := tc.cs.FromCanonicalByte(c); ok {
					t.Errorf("%s encodes non-canonical %02X", tc.cs, c)
				}
				continue
			}
			e, ok := tc.cs.FromCanonicalByte(c)
			if c >= 0xA1 && !tc.kana {
				if ok {
					t.Errorf("%s encodes katakana %02X", tc.cs, c)
				}
				continue
			}
			if !ok {
				t.Errorf("%s cannot encode canonical %02X", tc.cs, c)
				continue
			}
			back, ok := tc.cs.ToCanonicalByte(e)
			if !ok || back != c {
				t.Errorf("%s: %02X -> %02X -> %02X", tc.cs, c, e, back)
			}
		}
		if tc.cs.IsEBCDIC() != (tc.cs.Space() == 0x40) {
			t.Errorf("%s: space %02X", tc.cs, tc.cs.Space())
		}
	}
}

// The Shift_JIS single-byte half is the canonical form: x/text must agree.
func TestShiftJISSingleBytesMatchXText(t *testing.T) {
	for b := 0; b < 256; b++ {
		if !IsCanonical(byte(b)) {
			continue
		}
		out, err := japanese.ShiftJIS.NewDecoder().Bytes([]byte{byte(b)})
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := utf8.DecodeRune(out); r != CanonicalRune(byte(b)) {
			t.Errorf("byte %02X: x/text %q, canonical %q", b, r, CanonicalRune(byte(b)))
		}
	}
	s, err := ShiftJIS.DecodeString([]byte{0x93, 0xfa, 0x96, 0x7b, 0xb1})
	if err != nil || s != "日本ｱ" {
		t.Fatalf("DecodeString = %q, %v", s, err)
	}
	b, err := ShiftJIS.EncodeString("日本ｱ")
	if err != nil || !bytes.Equal(b, []byte{0x93, 0xfa, 0x96, 0x7b, 0xb1}) {
		t.Fatalf("EncodeString = %x, %v", b, err)
	}
	_, err = ShiftJIS.EncodeString("ab😀")
	var re *RuneError
	if !errors.As(err, &re) || re.Rune != '😀' || re.Pos != 3 {
		t.Fatalf("EncodeString emoji: %v", err)
	}
}

func TestHalfWidth(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      rune
		pos      int
	}{
		{in: "ガ", want: "ｶﾞ"},
		{in: "ア", want: "ｱ"},
		{in: "Ａ", want: "A"},
		{in: "ヤマダ　タロウ", want: "ﾔﾏﾀﾞ ﾀﾛｳ"},
		{in: "パピプペポ", want: "ﾊﾟﾋﾟﾌﾟﾍﾟﾎﾟ"},
		{in: "ヴァイオリン（カ）", want: "ｳﾞｧｲｵﾘﾝ(ｶ)"},
		{in: "ｶﾞ abc", want: "ｶﾞ abc"},
		{in: "ヤマ田", bad: '田', pos: 3},
		{in: "ヰ", bad: 'ヰ', pos: 1},
		{in: "かな", bad: 'か', pos: 1},
		{in: "¥100", bad: '¥', pos: 1},
	} {
		got, err := AppendHalfWidth(nil, tc.in)
		if tc.bad != 0 {
			var re *RuneError
			if !errors.As(err, &re) || re.Rune != tc.bad || re.Pos != tc.pos {
				t.Errorf("%q: err %v, want rune %q at %d", tc.in, err, tc.bad, tc.pos)
			}
			continue
		}
		s, _ := CanonicalString(got)
		if err != nil || s != tc.want {
			t.Errorf("%q -> %q, %v; want %q", tc.in, s, err, tc.want)
		}
	}
}

// Every entry of the katakana table composes back (NFKC) to its full-width
// source, so no entry is a typo.
func TestKataHalfTableNFKC(t *testing.T) {
	entries := 0
	for i, h := range kataHalf {
		if h == "" {
			continue
		}
		full := string(rune(0x30A1 + i))
		if got := norm.NFKC.String(h); got != full {
			t.Errorf("U+%04X %s: half %q composes to %q", 0x30A1+i, full, h, got)
		}
		entries++
	}
	if entries != 85 {
		t.Errorf("%d entries, want 85", entries)
	}
}

func TestToCanonicalSkipsSpansAndLocatesErrors(t *testing.T) {
	src := []byte{0xC1, 0x12, 0x3C, 0x40, 0x81}
	dst := make([]byte, len(src))
	if err := EBCDIC290.ToCanonical(dst, src, []Span{{Off: 1, Len: 2}}); err != nil {
		t.Fatal(err)
	}
	if want := []byte{'A', 0x12, 0x3C, ' ', 0xB1}; !bytes.Equal(dst, want) {
		t.Fatalf("got % X want % X", dst, want)
	}
	back := make([]byte, len(dst))
	if err := EBCDIC290.FromCanonical(back, dst, []Span{{Off: 1, Len: 2}}); err != nil || !bytes.Equal(back, src) {
		t.Fatalf("back % X %v", back, err)
	}
	// Without the span, 0x12 is a control: refused at offset 1.
	err := EBCDIC290.ToCanonical(dst, src, nil)
	var be *ByteError
	if !errors.As(err, &be) || be.Offset != 1 || be.Byte != 0x12 {
		t.Fatalf("err %v", err)
	}
	// In place, and a span past the end is clipped, not a panic.
	in := []byte{0xC1, 0xC2}
	if err := CP037.ToCanonical(in, in, []Span{{Off: 5, Len: 9}}); err != nil || string(in) != "AB" {
		t.Fatalf("in place: %q %v", in, err)
	}
	if err := CP037.ToCanonical(make([]byte, 1), in, nil); !errors.Is(err, ErrShortBuffer) {
		t.Fatalf("short dst: %v", err)
	}
	// Katakana cannot be written in CP037.
	err = CP037.FromCanonical(make([]byte, 2), []byte{'A', 0xB1}, nil)
	if !errors.As(err, &be) || be.Offset != 1 || be.Byte != 0xB1 {
		t.Fatalf("CP037 katakana: %v", err)
	}
}

func TestDecodeEncodeStringEBCDIC(t *testing.T) {
	b, err := EBCDIC290.EncodeString("ｱｲｳ ¥100")
	if err != nil {
		t.Fatal(err)
	}
	if want := "81828340" + "5bf1f0f0"; hex.EncodeToString(b) != want {
		t.Fatalf("got %x want %s", b, want)
	}
	s, err := EBCDIC290.DecodeString(b)
	if err != nil || s != "ｱｲｳ ¥100" {
		t.Fatalf("%q %v", s, err)
	}
	if _, err := EBCDIC290.DecodeString([]byte{0xC1, 0x0E}); err == nil {
		t.Fatal("SO accepted")
	}
	if _, err := EBCDIC290.EncodeString("日"); err == nil {
		t.Fatal("kanji accepted")
	}
}

func TestByName(t *testing.T) {
	for name, want := range map[string]*Charset{"SJIS": ShiftJIS, "ibm-037": CP037, "1047": CP1047, "IBM930": EBCDIC290} {
		if got, ok := ByName(name); !ok || got != want {
			t.Errorf("ByName(%q) = %v", name, got)
		}
	}
	if _, ok := ByName("utf-8"); ok {
		t.Error("utf-8 accepted")
	}
}
