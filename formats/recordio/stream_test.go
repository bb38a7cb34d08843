package recordio

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/formats/fixed"
)

// newTestStream reads 4-byte records separated by CR LF; a record starting
// with 'X' is invalid, and Finish reports a missing "END." record.
func newTestStream(in string) (*Stream[string], *int) {
	st := &Stream[string]{MaxErrors: 10}
	finished := 0
	sawEnd := false
	st.Scanner = NewScanner(strings.NewReader(in), 4, func(byte) bool { return true }, st.Add)
	st.Decode = func(rec Record) (string, bool) {
		if rec.Bytes[0] == 'X' {
			st.Add(&fixed.Error{Record: rec.Num, Offset: rec.Offset, Field: "kind", Reason: fixed.Invalid})
			return "", false
		}
		if string(rec.Bytes) == "END." {
			sawEnd = true
		}
		return string(rec.Bytes), true
	}
	st.Finish = func() {
		finished++
		if !sawEnd {
			st.Add(&fixed.Error{Record: st.Scanner.Records(), Offset: st.Scanner.Offset(), Reason: fixed.Invalid})
		}
	}
	return st, &finished
}

func TestStreamNextHandsOverValidRecordsAndErrorsInOrder(t *testing.T) {
	st, finished := newTestStream("AAAA\r\nXBBB\r\nCCCC\r\n")
	type step struct {
		rec    string
		errRec int   // record number of the single error, 0 for none
		errOff int64 // its byte offset
	}
	want := []step{{rec: "AAAA"}, {errRec: 2, errOff: 6}, {rec: "CCCC"}, {errRec: 3, errOff: 18}}
	for i, w := range want {
		rec, err := st.Next()
		if w.errRec == 0 {
			if err != nil || rec != w.rec {
				t.Fatalf("step %d: got (%q, %v), want %q", i, rec, err, w.rec)
			}
			continue
		}
		var l *fixed.ErrorList
		if !errors.As(err, &l) || len(l.Errs) != 1 || l.Errs[0].Record != w.errRec || l.Errs[0].Offset != w.errOff {
			t.Fatalf("step %d: got (%q, %v), want one error at record %d offset %d", i, rec, err, w.errRec, w.errOff)
		}
		if rec != "" {
			t.Fatalf("step %d: a broken record was handed over as %q", i, rec)
		}
	}
	for range 2 {
		if _, err := st.Next(); err != io.EOF {
			t.Fatalf("after the end: %v, want io.EOF", err)
		}
	}
	if *finished != 1 {
		t.Fatalf("Finish ran %d times, want 1", *finished)
	}
}

func TestStreamAllStopsAfterIOError(t *testing.T) {
	st, finished := newTestStream("")
	boom := errors.New("disk gone")
	st.Scanner = NewScanner(io.MultiReader(strings.NewReader("AAAA\r\n"), &failingReader{boom}), 4,
		func(byte) bool { return true }, st.Add)
	var got []string
	var errs []error
	for rec, err := range st.All() {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		got = append(got, rec)
	}
	if len(got) != 1 || got[0] != "AAAA" || len(errs) != 1 || !errors.Is(errs[0], boom) {
		t.Fatalf("records %q errors %v; want [AAAA] then the I/O error only", got, errs)
	}
	if *finished != 0 {
		t.Fatal("Finish ran after an I/O error")
	}
}

type failingReader struct{ err error }

func (r *failingReader) Read([]byte) (int, error) { return 0, r.err }

func TestDrainChecksEveryRecordThenFinishes(t *testing.T) {
	sc := NewScanner(strings.NewReader("AAAABBBBCCCC"), 4, func(byte) bool { return true }, func(*fixed.Error) {})
	var seen []string
	finished := false
	if err := Drain(sc, func(r Record) { seen = append(seen, string(r.Bytes)) }, func() { finished = true }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != "AAAA,BBBB,CCCC" || !finished {
		t.Fatalf("seen %v finished %v", seen, finished)
	}
}
