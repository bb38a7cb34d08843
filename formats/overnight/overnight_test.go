package overnight

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/recordio"
)

const fixtureDir = "../../fixtures/overnight"

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readAll(t testing.TB, b []byte) []Record {
	t.Helper()
	var out []Record
	for rec, err := range NewReader(bytes.NewReader(b)).Records() {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		out = append(out, rec)
	}
	return out
}

func rewrite(t testing.TB, recs []Record) []byte {
	t.Helper()
	var out bytes.Buffer
	w := NewWriter(&out)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	return out.Bytes()
}

func TestGoldenPosting(t *testing.T) {
	b := readFixture(t, "posting.txt")
	sum, err := Validate(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{Records: 6, Bytes: int64(len(b)), Separator: recordio.SepCRLF,
		Header: Header{FileType: Postings, Version: 1, BankCode: "0128", BusinessDate: Date{Year: 2026, Month: 12, Day: 2}, FileSeq: 1, CreatedAt: "20261202213000"},
		Count:  4, DebitCount: 1, DebitTotal: 150000, CreditCount: 3, CreditTotal: 98001 + 5000,
		HashTotal: (1011234567 + 2057654321 + 1011111111 + 3302222222) % HashMod, Trailer: true}
	if !reflect.DeepEqual(sum, want) {
		t.Fatalf("summary = %+v\nwant %+v", sum, want)
	}
	recs := readAll(t, b)
	rev := recs[3].(*PostingDetail)
	wantRev := &PostingDetail{Seq: 3, Kind: Reversal, Side: Credit, TxID: "TX-20261201-000777", Ref: "ZC0003-R", OriginalRef: "ZC0777-D",
		Account: Account{BranchCode: "101", AccountType: 2, AccountNumber: "1111111"}, Amount: 5000, ValueDate: Date{Year: 2026, Month: 12, Day: 2}, Memo: "REVERSAL"}
	if !reflect.DeepEqual(rev, wantRev) {
		t.Errorf("reversal = %+v", rev)
	}
	if !bytes.Equal(rewrite(t, recs), b) {
		t.Fatal("canonical rewrite differs from the golden file")
	}
}

func TestGoldenResult(t *testing.T) {
	b := readFixture(t, "result.dat")
	sum, err := Validate(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Separator != recordio.SepNone || sum.PostedCount != 3 || sum.RejectedCount != 1 || sum.DebitTotal != 150000 || sum.CreditTotal != 98001+5000-98000 {
		t.Fatalf("summary = %+v", sum)
	}
	recs := readAll(t, b)
	r := recs[2].(*ResultDetail)
	if r.Code != InsufficientFunds || r.CoreRef != "" || !r.PostedDate.IsZero() || r.Ref != "ZC0002-C" {
		t.Errorf("rejected detail = %+v", r)
	}
	var canon []byte
	for i := 0; i < len(b); i += RecordLen {
		canon = append(append(canon, b[i:i+RecordLen]...), '\r', '\n')
	}
	if !bytes.Equal(rewrite(t, recs), canon) {
		t.Fatal("canonical rewrite differs")
	}
}

type pos struct {
	record int
	line   int64
	offset int64
	column int
	field  string
	reason fixed.Reason
}

func TestCorrupted(t *testing.T) {
	golden := readFixture(t, "posting.txt")
	const L = RecordLen + 2
	tests := []struct {
		name   string
		mutate func([]byte) []byte
		want   []pos
	}{
		{"bad digit in an amount", func(b []byte) []byte { b[L+130] = 'x'; return b },
			[]pos{{2, 2, L + 130, 131, "Amount", fixed.NotNumeric}}},
		{"truncated record", func(b []byte) []byte { return b[:5*L+10] },
			[]pos{{6, 6, 5 * L, 1, "", fixed.ShortRecord}, {6, 6, 5*L + 10, 0, "", fixed.Invalid}}},
		{"wrong debit total", func(b []byte) []byte { b[5*L+30] = '9'; return b },
			[]pos{{6, 6, 5*L + 17, 18, "DebitTotal", fixed.Invalid}}},
		{"wrong hash total", func(b []byte) []byte { b[5*L+69] = '0'; return b },
			[]pos{{6, 6, 5*L + 55, 56, "HashTotal", fixed.Invalid}}},
		{"account moved keeps totals but breaks the hash", func(b []byte) []byte { b[2*L+121] = '9'; return b },
			[]pos{{6, 6, 5*L + 55, 56, "HashTotal", fixed.Invalid}}},
		{"byte outside the character set", func(b []byte) []byte { b[4*L+150] = 0x07; return b },
			[]pos{{5, 5, 4*L + 150, 151, "Memo", fixed.BadChar}}},
		{"missing trailer", func(b []byte) []byte { return b[:5*L] },
			[]pos{{5, 6, 5 * L, 0, "", fixed.Invalid}}},
		{"sequence gap", func(b []byte) []byte { b[2*L+8] = '3'; return b },
			[]pos{{3, 3, 2*L + 1, 2, "Seq", fixed.Invalid}}},
		{"reversal without original", func(b []byte) []byte { copy(b[3*L+79:], strings.Repeat(" ", 32)); return b },
			[]pos{{4, 4, 3*L + 79, 80, "OriginalRef", fixed.Invalid}}},
		{"bare LF", func(b []byte) []byte { return append(b[:L-2:L-2], b[L-1:]...) },
			[]pos{{1, 1, RecordLen, 201, "", fixed.Invalid}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mutate(bytes.Clone(golden))
			_, err := Validate(bytes.NewReader(b))
			var list *fixed.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("err = %v", err)
			}
			var got []pos
			for _, e := range list.Errs {
				got = append(got, pos{e.Record, recordio.LineOf(e), e.Offset, e.Column, e.Field, e.Reason})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("errors %+v\nwant %+v\n%v", got, tc.want, err)
			}
		})
	}
}

func randText(r *rand.Rand, n int) string {
	const alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_/.:"
	var b strings.Builder
	for range 1 + r.IntN(n) {
		b.WriteByte(alpha[r.IntN(len(alpha))])
	}
	return b.String()
}

func randDigits(r *rand.Rand, n int) string {
	s := fmt.Sprint(r.Int64N(1_000_000_000_000))
	s = strings.Repeat("0", 20) + s
	return s[len(s)-n:]
}

// TestPropertyRoundTrip: decode(encode(x)) == x for random valid files.
func TestPropertyRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 300 {
		result := r.IntN(2) == 0
		h := &Header{FileType: Postings, Version: 1, BankCode: randDigits(r, 4), BusinessDate: Date{Year: 2000 + r.IntN(100), Month: 1 + r.IntN(12), Day: 1 + r.IntN(28)},
			FileSeq: r.Int64N(1000), CreatedAt: "20261202235959"}
		if result {
			h.FileType = Results
		}
		want := []Record{h}
		for seq := int64(1); seq <= int64(r.IntN(8)); seq++ {
			acct := Account{BranchCode: randDigits(r, 3), AccountType: []uint8{1, 2, 4, 9}[r.IntN(4)], AccountNumber: randDigits(r, 7)}
			kind, side := []Kind{Posting, Reversal}[r.IntN(2)], []Side{Debit, Credit}[r.IntN(2)]
			amount := 1 + r.Int64N(9_999_999_999_998)
			if result {
				d := &ResultDetail{Seq: seq, Kind: kind, Side: side, TxID: randText(r, 36), Ref: randText(r, 32),
					Code: []ResultCode{0, 1, 2, 3, 4, 5, 6, 7, 99}[r.IntN(9)], Account: acct, Amount: amount}
				if d.Code == Posted {
					d.CoreRef, d.PostedDate = randText(r, 30), Date{Year: 2026, Month: 12, Day: 3}
				}
				want = append(want, d)
			} else {
				d := &PostingDetail{Seq: seq, Kind: kind, Side: side, TxID: randText(r, 36), Ref: randText(r, 32), Account: acct,
					Amount: amount, ValueDate: Date{Year: 2024, Month: 2, Day: 29}, Memo: strings.TrimSpace(randText(r, 20))}
				if kind == Reversal {
					d.OriginalRef = randText(r, 32)
				}
				want = append(want, d)
			}
		}
		var buf bytes.Buffer
		w := NewWriter(&buf)
		for _, rec := range want {
			if err := w.Write(rec); err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		got := readAll(t, buf.Bytes())
		if !reflect.DeepEqual(got[:len(got)-1], want) {
			t.Fatalf("case %d: round trip differs:\n got %+v\nwant %+v", i, got, want)
		}
	}
}

func TestWriterRefuses(t *testing.T) {
	h := &Header{FileType: Postings, Version: 1, BankCode: "0128", BusinessDate: Date{Year: 2026, Month: 12, Day: 2}, CreatedAt: "20261202213000"}
	good := PostingDetail{Seq: 1, Kind: Posting, Side: Debit, TxID: "TX-1", Ref: "R1", Account: Account{"101", 1, "1234567"}, Amount: 1, ValueDate: Date{Year: 2026, Month: 12, Day: 2}}
	mod := func(f func(*PostingDetail)) *PostingDetail { p := good; f(&p); return &p }
	tests := []struct {
		name string
		p    *PostingDetail
		want string
	}{
		{"zero amount", mod(func(p *PostingDetail) { p.Amount = 0 }), "must be positive"},
		{"blank txid", mod(func(p *PostingDetail) { p.TxID = "" }), "must not be blank"},
		{"reversal without original", mod(func(p *PostingDetail) { p.Kind = Reversal }), "names the reference"},
		{"wrong seq", mod(func(p *PostingDetail) { p.Seq = 2 }), "want 1"},
		{"bad side", mod(func(p *PostingDetail) { p.Side = 'X' }), "not D or C"},
		{"bad date", mod(func(p *PostingDetail) { p.ValueDate = Date{Year: 2026, Month: 2, Day: 29} }), "invalid date"},
		{"kanji memo", mod(func(p *PostingDetail) { p.Memo = "振込" }), "JIS X 0201"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWriter(&bytes.Buffer{})
			if err := w.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			err := w.WritePosting(tc.p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func addSeeds(f *testing.F) {
	for _, n := range []string{"posting.txt", "result.dat"} {
		f.Add(readFixture(f, n))
	}
	f.Add([]byte{})
	f.Add([]byte("H\r\nT"))
}

// FuzzValidate: never panics, positions inside the file, the Reader finds
// the same errors.
func FuzzValidate(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := ValidateMax(bytes.NewReader(b), 1<<20)
		count := func(err error) int {
			var l *fixed.ErrorList
			if err == nil {
				return 0
			}
			if !errors.As(err, &l) {
				t.Fatalf("not an ErrorList: %v", err)
			}
			for _, e := range l.Errs {
				if e.Offset < 0 || e.Offset > int64(len(b)) {
					t.Fatalf("offset out of range: %v", e)
				}
			}
			return l.Len()
		}
		nv, ns := count(err), 0
		for _, e := range NewReader(bytes.NewReader(b)).Records() {
			ns += count(e)
		}
		if nv != ns {
			t.Fatalf("Validate %d errors, Reader %d", nv, ns)
		}
	})
}

// FuzzReader: a valid file rewrites canonically and reads back equal.
func FuzzReader(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := Validate(bytes.NewReader(b)); err != nil {
			return
		}
		recs := readAll(t, b)
		again := readAll(t, rewrite(t, recs))
		if !reflect.DeepEqual(again, recs) {
			t.Fatal("rewrite reads back differently")
		}
	})
}

// BenchmarkValidate validates a posting file of 1M details generated in
// memory (about 200 MB).
func BenchmarkValidate(b *testing.B) {
	const n = 1_000_000
	var buf bytes.Buffer
	w := NewWriter(&buf)
	_ = w.WriteHeader(&Header{FileType: Postings, Version: 1, BankCode: "0128", BusinessDate: Date{Year: 2026, Month: 12, Day: 2}, FileSeq: 1, CreatedAt: "20261202213000"})
	for i := int64(1); i <= n; i++ {
		err := w.WritePosting(&PostingDetail{Seq: i, Kind: Posting, Side: []Side{Debit, Credit}[i%2], TxID: "TX-20261202-000001",
			Ref: fmt.Sprintf("ZC%010d", i), Account: Account{"101", 1, "1234567"}, Amount: 1000 + i, ValueDate: Date{Year: 2026, Month: 12, Day: 2}})
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Validate(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
