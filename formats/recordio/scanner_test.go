package recordio

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/zcgw/zcgw/formats/fixed"
)

func isStart(c byte) bool { return c == 'A' || c == 'B' }

type got struct {
	recs []string
	errs []string
	sep  Separator
	size int64
}

func scan(input string, n int) got {
	var g got
	s := NewScanner(iotest.HalfReader(strings.NewReader(input)), n, isStart, func(e *fixed.Error) {
		g.errs = append(g.errs, fmt.Sprintf("rec %d line %d off %d col %d %v %q", e.Record, LineOf(e), e.Offset, e.Column, e.Reason, e.Bytes))
	})
	for {
		r, ok := s.Next()
		if !ok {
			break
		}
		g.recs = append(g.recs, fmt.Sprintf("%d:%d:%d:%s", r.Num, r.Line, r.Offset, r.Bytes))
	}
	g.sep, g.size = s.Separator(), s.Offset()
	return g
}

func TestScanner(t *testing.T) {
	tests := []struct {
		name  string
		input string
		recs  []string
		errs  []string
		sep   Separator
	}{
		{"crlf", "A123\r\nB456\r\n", []string{"1:1:0:A123", "2:2:6:B456"}, nil, SepCRLF},
		{"crlf, last without", "A123\r\nB456", []string{"1:1:0:A123", "2:2:6:B456"}, nil, SepCRLF},
		{"none", "A123B456", []string{"1:1:0:A123", "2:1:4:B456"}, nil, SepNone},
		{"empty", "", nil, nil, SepUnknown},
		{"bare LF", "A123\nB456\n", []string{"1:1:0:A123", "2:2:5:B456"},
			[]string{`rec 1 line 1 off 4 col 5 invalid value "\n"`, `rec 2 line 2 off 9 col 5 invalid value "\n"`}, SepCRLF},
		{"short record", "A12\r\nB456\r\n", []string{"2:2:5:B456"},
			[]string{`rec 1 line 1 off 0 col 1 short record "A12"`}, SepCRLF},
		{"truncated", "A123\r\nB4", []string{"1:1:0:A123"},
			[]string{`rec 2 line 2 off 6 col 1 short record "B4"`}, SepCRLF},
		{"stray byte before a record", "A123\r\n#B456\r\n", []string{"1:1:0:A123", "2:2:7:B456"},
			[]string{`rec 2 line 2 off 6 col 0 long record "#"`}, SepCRLF},
		{"long record", "A123\r\nB4567\r\nA000\r\n", []string{"1:1:0:A123", "2:2:6:B456", "3:3:13:A000"},
			[]string{`rec 2 line 2 off 10 col 5 long record "7"`}, SepCRLF},
		{"empty line", "A123\r\n\r\nB456\r\n", []string{"1:1:0:A123", "2:3:8:B456"},
			[]string{`rec 2 line 2 off 6 col 0 invalid value "\r\n"`}, SepCRLF},
		{"CRLF in a file without separators", "A123B456\r\nA000", []string{"1:1:0:A123", "2:1:4:B456", "3:2:10:A000"},
			[]string{`rec 2 line 1 off 8 col 5 invalid value "\r\n"`}, SepNone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := scan(tc.input, 4)
			if fmt.Sprint(g.recs) != fmt.Sprint(tc.recs) || fmt.Sprint(g.errs) != fmt.Sprint(tc.errs) || g.sep != tc.sep {
				t.Fatalf("recs %v\nerrs %v\nsep %v", g.recs, g.errs, g.sep)
			}
			if g.size != int64(len(tc.input)) {
				t.Fatalf("consumed %d of %d bytes", g.size, len(tc.input))
			}
		})
	}
}

// FuzzScanner: never panics, consumes the whole input, every record has
// the record length and every error offset lies inside the input.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{"A123\r\nB456\r\n", "A123B456", "A12\r\n#B4567\n\r", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := NewScanner(bytes.NewReader(b), 4, isStart, func(e *fixed.Error) {
			if e.Offset < 0 || e.Offset > int64(len(b)) {
				t.Fatalf("offset %d outside %d bytes", e.Offset, len(b))
			}
		})
		total := 0
		for {
			r, ok := s.Next()
			if !ok {
				break
			}
			if len(r.Bytes) != 4 || r.Offset+4 > int64(len(b)) || !bytes.Equal(r.Bytes, b[r.Offset:r.Offset+4]) {
				t.Fatalf("bad record %+v", r)
			}
			total++
		}
		if s.Offset() != int64(len(b)) {
			t.Fatalf("consumed %d of %d", s.Offset(), len(b))
		}
	})
}
