package recordio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/zcgw/zcgw/formats/fixed"
)

// Separator is how records are delimited in a file.
type Separator uint8

const (
	// SepUnknown: not decided yet (no complete record seen).
	SepUnknown Separator = iota
	// SepNone: records follow each other with no line break.
	SepNone
	// SepCRLF: each record is followed by CR LF.
	SepCRLF
)

func (s Separator) String() string {
	switch s {
	case SepNone:
		return "none"
	case SepCRLF:
		return "CRLF"
	}
	return "unknown"
}

// Record is one record as it sits in the file.
type Record struct {
	// Bytes are the record's bytes, exactly the record length; valid only
	// until the next call of Scanner.Next.
	Bytes []byte
	// Num is the 1-based record number (broken records count too).
	Num int
	// Line is the 1-based line number (always 1 in a file without
	// separators).
	Line int64
	// Offset is the byte offset of the record's first byte in the file.
	Offset int64
}

// LineError is the Err of every *fixed.Error a Scanner reports, and of
// the errors the record decoders built on it report: the line of the
// record and a plain explanation.
type LineError struct {
	Line int64
	Msg  string
	Err  error
}

func (e *LineError) Error() string {
	s := fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *LineError) Unwrap() error { return e.Err }

// LineOf returns the line recorded in e (0 when none).
func LineOf(e *fixed.Error) int64 {
	var le *LineError
	if errors.As(e.Err, &le) {
		return le.Line
	}
	return 0
}

// Scanner splits a file into fixed-length records. It accepts CR LF after
// every record or no separator at all, decided by the first record, and
// reports anything else with its byte offset.
type Scanner struct {
	br      *bufio.Reader
	recLen  int
	sep     Separator
	off     int64 // offset of the next unread byte
	line    int64 // line of the next unread byte
	num     int
	pending int  // bytes of the last record (and separator) to discard
	nlAfter bool // the pending bytes end a line
	report  func(*fixed.Error)
	isStart func(c byte) bool
	err     error
	// RecordType names records in the errors the scanner reports.
	RecordType string
}

// BufferSize is the Scanner's read buffer.
const BufferSize = 256 << 10

// NewScanner reads records of recLen bytes from r. isStart reports
// whether a byte can begin a record (used to locate stray bytes); report
// receives every framing error.
func NewScanner(r io.Reader, recLen int, isStart func(byte) bool, report func(*fixed.Error)) *Scanner {
	return &Scanner{br: bufio.NewReaderSize(r, BufferSize), recLen: recLen, line: 1, report: report, isStart: isStart}
}

// Separator is the separator style seen so far.
func (s *Scanner) Separator() Separator { return s.sep }

// Offset is the number of bytes consumed so far (the file size at the end).
func (s *Scanner) Offset() int64 { return s.off + int64(s.pending) }

// Line is the current line number.
func (s *Scanner) Line() int64 { return s.line }

// Records is the number of records seen so far, broken ones included.
func (s *Scanner) Records() int { return s.num }

// Err returns the first I/O error other than io.EOF.
func (s *Scanner) Err() error { return s.err }

func (s *Scanner) fail(reason fixed.Reason, num int, line, off, recOff int64, b []byte, msg string) {
	col := 0
	if recOff >= 0 {
		col = int(off-recOff) + 1
	}
	s.report(&fixed.Error{Record: num, RecordType: s.RecordType, Offset: off, Column: col, Bytes: Clip(b), Reason: reason, Err: &LineError{Line: line, Msg: msg}})
}

// Clip copies at most 16 bytes of b for an error report.
func Clip(b []byte) []byte {
	if len(b) > 16 {
		b = b[:16]
	}
	return append([]byte{}, b...)
}

func (s *Scanner) discard(n int) {
	d, _ := s.br.Discard(n)
	s.off += int64(d)
}

func indexBreak(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if j := bytes.IndexByte(b, '\r'); j >= 0 && (i < 0 || j < i) {
		i = j
	}
	return i
}

func breakName(b []byte) string {
	switch {
	case len(b) >= 2 && b[0] == '\r' && b[1] == '\n':
		return "CRLF"
	case b[0] == '\r':
		return "bare CR"
	}
	return "bare LF"
}

func (s *Scanner) peek(n int) []byte {
	buf, err := s.br.Peek(n)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) && s.err == nil {
		s.err = err
	}
	return buf
}

// Next returns the next record, or ok=false at the end of the input (see
// Err for an I/O error).
func (s *Scanner) Next() (rec Record, ok bool) {
	if s.pending > 0 {
		s.discard(s.pending)
		s.pending = 0
		if s.nlAfter {
			s.line++
			s.nlAfter = false
		}
	}
	n := s.recLen
	for {
		buf := s.peek(n + 2)
		if len(buf) == 0 {
			return rec, false
		}
		w := buf[:min(len(buf), n)]
		if i := indexBreak(w); i >= 0 {
			brk := buf[i:min(len(buf), i+2)]
			name := breakName(brk)
			bl := 1
			if name == "CRLF" {
				bl = 2
			}
			if i == 0 {
				s.fail(fixed.Invalid, s.num+1, s.line, s.off, -1, brk[:bl], name+" where a record should start")
			} else {
				s.num++
				s.fail(fixed.ShortRecord, s.num, s.line, s.off, s.off, w[:i], fmt.Sprintf("short record: %d bytes before the line break, want %d", i, n))
			}
			s.discard(i + bl)
			s.line++
			if s.sep == SepUnknown {
				s.sep = SepCRLF
			}
			continue
		}
		if len(w) < n {
			s.num++
			s.fail(fixed.ShortRecord, s.num, s.line, s.off, s.off, w, fmt.Sprintf("truncated record: %d bytes at end of file, want %d", len(w), n))
			s.discard(len(w))
			return rec, false
		}
		s.num++
		rest := buf[n:]
		sepOff := s.off + int64(n)
		switch {
		case len(rest) == 0:
			if s.sep == SepUnknown {
				s.sep = SepNone
			}
			s.pending = n
		case len(rest) >= 2 && rest[0] == '\r' && rest[1] == '\n':
			if s.sep == SepNone {
				s.fail(fixed.Invalid, s.num, s.line, sepOff, s.off, rest[:2], "CRLF after a record in a file without separators")
			}
			if s.sep == SepUnknown {
				s.sep = SepCRLF
			}
			s.pending, s.nlAfter = n+2, true
		case rest[0] == '\n' || rest[0] == '\r':
			s.fail(fixed.Invalid, s.num, s.line, sepOff, s.off, rest[:1], breakName(rest[:1])+" after the record: only CRLF or no separator is accepted")
			if s.sep == SepUnknown {
				s.sep = SepCRLF
			}
			s.pending, s.nlAfter = n+1, true
		case s.sep == SepCRLF:
			return s.longLine()
		default:
			s.sep = SepNone
			s.pending = n
		}
		return Record{Bytes: w, Num: s.num, Line: s.line, Offset: s.off}, true
	}
}

// longLine handles a line longer than a record in a CRLF file. It reports
// the stray bytes: at the start of the line when only the bytes after them
// line up with a record start, at the end otherwise; and returns the
// record.
func (s *Scanner) longLine() (Record, bool) {
	n := s.recLen
	buf := s.peek(BufferSize)
	end := indexBreak(buf)
	bl := 0
	switch {
	case end < 0:
		end = len(buf)
	case end+1 < len(buf) && buf[end] == '\r' && buf[end+1] == '\n':
		bl = 2
	default:
		bl = 1
	}
	extra := end - n
	lead := s.isStart != nil && !s.isStart(buf[0]) && s.isStart(buf[extra])
	if lead {
		s.fail(fixed.LongRecord, s.num, s.line, s.off, -1, buf[:extra], fmt.Sprintf("%d stray byte(s) before the record (line is %d bytes, want %d)", extra, end, n))
		s.discard(extra)
		s.pending = n + bl
	} else {
		s.fail(fixed.LongRecord, s.num, s.line, s.off+int64(n), s.off, buf[n:end], fmt.Sprintf("%d stray byte(s) after the record (line is %d bytes, want %d)", extra, end, n))
		s.pending = end + bl
	}
	s.nlAfter = bl > 0
	return Record{Bytes: s.peek(n)[:n], Num: s.num, Line: s.line, Offset: s.off}, true
}
