package workbook

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"testing"
)

// The parallel stream inflates to exactly the input, for sizes around the
// chunk boundaries and in odd write sizes.
func TestParallelDeflateRoundTrip(t *testing.T) {
	var src bytes.Buffer
	for i := 0; src.Len() < 5*deflateChunk+12345; i++ {
		fmt.Fprintf(&src, `<row r="%d"><c r="A%d" t="inlineStr"><is><t>POSTING:001:%d</t></is></c></row>`, i, i, i*7)
	}
	for _, n := range []int{0, 1, deflateChunk - 1, deflateChunk, deflateChunk + 1, 3 * deflateChunk, src.Len()} {
		in := src.Bytes()[:n]
		var out bytes.Buffer
		d := newParallelDeflate(&out)
		for p := in; len(p) > 0; {
			k := min(len(p), 70_001)
			if _, err := d.Write(p[:k]); err != nil {
				t.Fatal(err)
			}
			p = p[k:]
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(flate.NewReader(&out))
		if err != nil || !bytes.Equal(got, in) {
			t.Fatalf("%d bytes: inflated %d bytes (%v), equal=%v", n, len(got), err, bytes.Equal(got, in))
		}
	}
}
