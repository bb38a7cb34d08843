package coremsg

import (
	"testing"

	"github.com/zcgw/zcgw/formats/charset"
)

func BenchmarkEncodePosting(b *testing.B) {
	g := goldens()[0]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(&g.msg, charset.EBCDIC290); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodePosting(b *testing.B) {
	g := goldens()[0]
	raw, _ := Encode(&g.msg, charset.EBCDIC290)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(raw, charset.EBCDIC290); err != nil {
			b.Fatal(err)
		}
	}
}
