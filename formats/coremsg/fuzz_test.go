package coremsg

import (
	"errors"
	"reflect"
	"testing"

	"github.com/zcgw/zcgw/formats/charset"
	"github.com/zcgw/zcgw/formats/fixed"
)

var fuzzCharsets = []*charset.Charset{charset.EBCDIC290, charset.ShiftJIS, nil, charset.CP037}

// FuzzDecode feeds arbitrary bytes to Decode. It must never panic; errors
// are typed with an offset inside the message (or just past it); a message
// that decodes re-encodes and decodes to the same value.
func FuzzDecode(f *testing.F) {
	for i, g := range goldens() {
		raw, err := Encode(&g.msg, g.cs)
		if err != nil {
			f.Fatal(err)
		}
		csi := uint8(0)
		if g.cs == charset.ShiftJIS {
			csi = 1
		}
		f.Add(raw, csi)
		if i%5 == 0 {
			f.Add(raw[:len(raw)-7], csi)
		}
	}
	f.Fuzz(func(t *testing.T, msg []byte, csi uint8) {
		cs := fuzzCharsets[int(csi)%len(fuzzCharsets)]
		m, err := Decode(msg, cs)
		if err != nil {
			var fe *fixed.Error
			if !errors.As(err, &fe) {
				t.Fatalf("untyped error: %v", err)
			}
			if fe.Offset < 0 || fe.Offset > int64(len(msg)) {
				t.Fatalf("offset %d outside a %d-byte message: %v", fe.Offset, len(msg), err)
			}
			return
		}
		raw, err := Encode(m, cs)
		if err != nil {
			t.Fatalf("decoded message does not re-encode: %v", err)
		}
		m2, err := Decode(raw, cs)
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-decode %+v, %v; want %+v", m2, err, m)
		}
	})
}
