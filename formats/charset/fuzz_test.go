package charset

import (
	"bytes"
	"testing"
)

// FuzzToCanonical: transcoding arbitrary bytes never panics, refuses
// exactly the unmapped bytes, and anything accepted converts back to the
// same bytes.
func FuzzToCanonical(f *testing.F) {
	f.Add([]byte{0xC1, 0x81, 0x40, 0x12, 0x3C}, uint8(0), uint8(1), uint8(2))
	f.Add([]byte("ABC \xb1\xb2"), uint8(1), uint8(0), uint8(0))
	f.Fuzz(func(t *testing.T, src []byte, csi, off, n uint8) {
		cs := All()[int(csi)%len(All())]
		skip := []Span{{Off: int(off), Len: int(n)}}
		dst := make([]byte, len(src))
		err := cs.ToCanonical(dst, src, skip)
		lo, hi := clip(skip[0], len(src))
		firstBad := -1
		for i, b := range src {
			if (i < lo || i >= hi) && cs.toCanon[b] == 0 {
				firstBad = i
				break
			}
		}
		if (err == nil) != (firstBad < 0) {
			t.Fatalf("%s: err %v, first unmapped %d", cs, err, firstBad)
		}
		if err != nil {
			if be, ok := err.(*ByteError); !ok || be.Offset != firstBad {
				t.Fatalf("%s: err %v, want offset %d", cs, err, firstBad)
			}
			return
		}
		back := make([]byte, len(dst))
		if err := cs.FromCanonical(back, dst, skip); err != nil || !bytes.Equal(back, src) {
			t.Fatalf("%s: % X -> % X -> % X (%v)", cs, src, dst, back, err)
		}
	})
}
