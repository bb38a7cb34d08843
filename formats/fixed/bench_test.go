package fixed

import (
	"testing"

	"github.com/zcgw/zcgw/formats/charset"
)

var (
	sinkU uint64
	sinkI int64
	sinkB bool
	sinkN int
)

func BenchmarkParseDigits10(b *testing.B) {
	in := []byte("0000150000")
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		sinkU, sinkB = ParseDigits(in)
	}
}

func BenchmarkPutDigits10(b *testing.B) {
	out := make([]byte, 10)
	for b.Loop() {
		sinkB = PutDigits(out, 150000)
	}
}

func BenchmarkParseOverpunch13(b *testing.B) {
	in := []byte("000987654321}")
	for b.Loop() {
		sinkI, sinkB = ParseOverpunch(in)
	}
}

func BenchmarkParsePacked8(b *testing.B) {
	in := []byte{0x12, 0x34, 0x56, 0x78, 0x90, 0x12, 0x34, 0x5F}
	for b.Loop() {
		sinkI, sinkB = ParsePacked(in)
	}
}

func BenchmarkPutPacked8(b *testing.B) {
	out := make([]byte, 8)
	for b.Loop() {
		sinkB = PutPacked(out, 123456789012345, true)
	}
}

func BenchmarkFirstInvalidKana120(b *testing.B) {
	in, _ := charset.AppendCanonical(nil, "ﾔﾏﾀﾞ ﾀﾛｳ ABC(ｶ)                                                                                                       ")
	in = in[:120]
	b.SetBytes(120)
	for b.Loop() {
		sinkN = FirstInvalidKana(in)
	}
}

func BenchmarkValidate120(b *testing.B) {
	rec, _ := Marshal(sample(), nil)
	l := MustLayoutOf(testRec{})
	b.SetBytes(120)
	b.ReportAllocs()
	for b.Loop() {
		sinkB = l.Validate(rec, Pos{}, nil)
	}
}

func BenchmarkToCanonicalEBCDIC120(b *testing.B) {
	rec, _ := Marshal(sample(), charset.EBCDIC290)
	l := MustLayoutOf(testRec{})
	dst := make([]byte, 120)
	b.SetBytes(120)
	b.ReportAllocs()
	for b.Loop() {
		_ = l.ToCanonical(dst, rec, charset.EBCDIC290, Pos{})
	}
}

func BenchmarkMarshal(b *testing.B) {
	for _, cs := range []*charset.Charset{nil, charset.EBCDIC290} {
		b.Run(csName(cs), func(b *testing.B) {
			v := sample()
			dst := make([]byte, 120)
			b.SetBytes(120)
			b.ReportAllocs()
			for b.Loop() {
				if err := MarshalTo(dst, &v, cs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkUnmarshal(b *testing.B) {
	for _, cs := range []*charset.Charset{nil, charset.EBCDIC290} {
		b.Run(csName(cs), func(b *testing.B) {
			rec, _ := Marshal(sample(), cs)
			var v testRec
			b.SetBytes(120)
			b.ReportAllocs()
			for b.Loop() {
				if err := Unmarshal(rec, &v, cs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func csName(cs *charset.Charset) string {
	if cs == nil {
		return "canonical"
	}
	return cs.Name()
}
