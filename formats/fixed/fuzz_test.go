package fixed

import (
	"errors"
	"strconv"
	"testing"

	"github.com/zcgw/zcgw/formats/charset"
)

var fuzzCharsets = []*charset.Charset{nil, charset.ShiftJIS, charset.EBCDIC290, charset.CP037, charset.CP1047}

// FuzzUnmarshal feeds arbitrary bytes to Unmarshal in every charset. It
// must never panic; an error must be typed and point inside the record; a
// record that decodes must re-encode and decode to the same value.
func FuzzUnmarshal(f *testing.F) {
	good, _ := Marshal(sample(), nil)
	eb, _ := Marshal(sample(), charset.EBCDIC290)
	f.Add(good, uint8(0))
	f.Add(eb, uint8(2))
	f.Add(good[:60], uint8(1))
	f.Add(append(append([]byte{}, good...), '\r', '\n'), uint8(0))
	f.Fuzz(func(t *testing.T, rec []byte, csi uint8) {
		cs := fuzzCharsets[int(csi)%len(fuzzCharsets)]
		var v testRec
		err := Unmarshal(rec, &v, cs)
		if err != nil {
			var fe *Error
			if !errors.As(err, &fe) {
				t.Fatalf("untyped error %v", err)
			}
			if fe.Column < 1 || fe.Column > len(rec)+1 || fe.Offset != int64(fe.Column-1) {
				t.Fatalf("position out of range: %v", err)
			}
			return
		}
		again, err := Marshal(v, cs)
		if err != nil {
			t.Fatalf("decoded %+v does not re-encode: %v", v, err)
		}
		var w testRec
		if err := Unmarshal(again, &w, cs); err != nil || w != v {
			t.Fatalf("re-decode %+v, %v; want %+v", w, err, v)
		}
		l := MustLayoutOf(v)
		for _, fd := range l.Fields() {
			_ = fd.Text(rec)
		}
	})
}

// FuzzPrimitives checks the primitives never panic and agree with Check.
func FuzzPrimitives(f *testing.F) {
	f.Add([]byte("000123"))
	f.Add([]byte("00012J"))
	f.Add([]byte{0x12, 0x3C})
	f.Add([]byte{0x99, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9D})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok := ParseDigits(b)
		if ok != (len(b) > 0 && mustCheck(N, b)) {
			t.Fatalf("ParseDigits/Check disagree on %q", b)
		}
		if ref, err := strconv.ParseUint(string(b), 10, 64); (err == nil) != ok || (ok && ref != v) {
			if !(err == nil && len(b) > 0 && b[0] == '+') {
				t.Fatalf("ParseDigits(%q) = %d,%v; strconv %d,%v", b, v, ok, ref, err)
			}
		}
		if v, ok := ParseOverpunch(b); ok {
			if !mustCheck(S, b) {
				t.Fatalf("Check refuses %q", b)
			}
			out := make([]byte, len(b))
			if !PutOverpunch(out, v) {
				t.Fatalf("PutOverpunch(%d) into %d bytes", v, len(b))
			}
			if w, _ := ParseOverpunch(out); w != v {
				t.Fatalf("overpunch %d -> %q -> %d", v, out, w)
			}
		}
		if v, ok := ParsePacked(b); ok {
			if !mustCheck(P, b) {
				t.Fatalf("Check refuses % X", b)
			}
			out := make([]byte, len(b))
			if !PutPacked(out, v, false) {
				t.Fatalf("PutPacked(%d) into %d bytes", v, len(b))
			}
			if w, _ := ParsePacked(out); w != v {
				t.Fatalf("packed %d -> % X -> %d", v, out, w)
			}
		}
		_ = FirstInvalidKana(b)
		_ = FirstInvalidAlnum(b)
	})
}

func mustCheck(t Type, b []byte) bool {
	r, _ := Check(t, b)
	return r == 0
}
