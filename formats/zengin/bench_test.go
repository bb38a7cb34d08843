package zengin

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/recordio"
)

// genFile is an io.Reader producing a valid 総合振込 file of n data
// records (groups of 100,000, each with trailer and end record) without
// holding the file in memory.
type genFile struct {
	header, data, end []byte
	n, perGroup       int
	left              int // data records left in the whole file
	inGroup           int // data records left in the current group
	groupSize         int
	buf               []byte
	state             int // 0 header, 1 data, 2 trailer, 3 end, 4 done
}

const benchAmount = 123456

func newGenFile(n int) *genFile {
	enc := func(r Record) []byte {
		b, err := r.AppendRecord(nil)
		if err != nil {
			panic(err)
		}
		return append(b, '\r', '\n')
	}
	g := &genFile{n: n, perGroup: 100_000, left: n}
	g.header = enc(&Header{Kind: KindTransfer, ClientCode: "1234567890", ClientName: "ｾﾞﾆｽｼﾖｳｼﾞ", Date: Date{4, 15},
		BankCode: "0128", BankName: "ｸﾞﾝﾏ", BranchCode: "101", BranchName: "ﾎﾝﾃﾝ", AccountType: 1, AccountNumber: "1234567"})
	g.data = enc(&TransferData{Account: Account{BankCode: "0001", BankName: "ﾐｽﾞﾎ", BranchCode: "110", BranchName: "ﾄｳｷﾖｳ",
		AccountType: 1, AccountNumber: "7654321", Name: "ﾔﾏﾀﾞ ﾀﾛｳ"}, ClearingHouse: "0000", Amount: benchAmount, TransferMode: 7})
	g.end = enc(&End{})
	return g
}

func (g *genFile) size() int64 {
	groups := (g.n + g.perGroup - 1) / g.perGroup
	return int64(g.n+3*groups) * (RecordLen + 2)
}

func (g *genFile) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(g.buf) > 0 {
			c := copy(p[n:], g.buf)
			g.buf = g.buf[c:]
			n += c
			continue
		}
		switch g.state {
		case 0:
			if g.left == 0 {
				g.state = 4
				continue
			}
			g.groupSize = min(g.perGroup, g.left)
			g.inGroup = g.groupSize
			g.buf, g.state = g.header, 1
		case 1:
			if g.inGroup == 0 {
				g.state = 2
				continue
			}
			g.inGroup--
			g.left--
			g.buf = g.data
		case 2:
			t, _ := (&Trailer{Count: int64(g.groupSize), Total: int64(g.groupSize) * benchAmount}).AppendRecord(nil)
			g.buf, g.state = append(t, '\r', '\n'), 3
		case 3:
			g.buf, g.state = g.end, 0
		case 4:
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		}
	}
	return n, nil
}

func TestGenFileValid(t *testing.T) {
	g := newGenFile(250_001)
	sum, err := Validate(g)
	if err != nil {
		t.Fatal(err)
	}
	if sum.DataCount != 250_001 || sum.GroupCount != 3 || sum.Bytes != newGenFile(250_001).size() {
		t.Fatalf("summary = %+v", sum)
	}
}

// BenchmarkValidate parses and fully validates files of 100k and 1M data
// records (read from a generator, so only the validator's memory counts).
func BenchmarkValidate(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(newGenFile(n).size())
			for b.Loop() {
				if _, err := Validate(newGenFile(n)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkReader streams and decodes every record into Go values.
func BenchmarkReader(b *testing.B) {
	const n = 1_000_000
	b.ReportAllocs()
	b.SetBytes(newGenFile(n).size())
	for b.Loop() {
		r := NewReader(newGenFile(n))
		for _, err := range r.Records() {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkWriter encodes and writes 1M data records with computed
// trailers.
func BenchmarkWriter(b *testing.B) {
	const n = 1_000_000
	d := &TransferData{Account: Account{BankCode: "0001", BankName: "ﾐｽﾞﾎ", BranchCode: "110", BranchName: "ﾄｳｷﾖｳ",
		AccountType: 1, AccountNumber: "7654321", Name: "ﾔﾏﾀﾞ ﾀﾛｳ"}, ClearingHouse: "0000", Amount: benchAmount, TransferMode: 7}
	h := &Header{Kind: KindTransfer, ClientCode: "1", Date: Date{4, 15}, BankCode: "0128", BranchCode: "101", AccountType: 1, AccountNumber: "1"}
	b.ReportAllocs()
	b.SetBytes(newGenFile(n).size())
	for b.Loop() {
		w := NewWriter(io.Discard)
		for i := 0; i < n; i++ {
			if i%100_000 == 0 {
				if i > 0 {
					_ = w.WriteTrailer()
					_ = w.WriteEnd()
				}
				_ = w.WriteHeader(h)
			}
			if err := w.WriteData(d); err != nil {
				b.Fatal(err)
			}
		}
		_ = w.WriteTrailer()
		_ = w.WriteEnd()
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

var _ = bytes.NewReader

// BenchmarkCheckRecord is the per-record validation alone (no I/O).
func BenchmarkCheckRecord(b *testing.B) {
	g := newGenFile(1)
	ck := newChecker(func(e *fixed.Error) { b.Fatal(e) }, NamesStrict)
	ck.check(recordio.Record{Bytes: g.header[:RecordLen], Num: 1, Line: 1})
	rec := recordio.Record{Bytes: g.data[:RecordLen], Num: 2, Line: 2}
	for b.Loop() {
		ck.check(rec)
	}
}
