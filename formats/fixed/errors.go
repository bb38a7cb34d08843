package fixed

import (
	"fmt"
	"strings"
)

// Error is one refused record or field. It says where (record, record type,
// field, absolute byte offset, column) and why (Reason, offending bytes).
type Error struct {
	// Record is the 1-based record number in the file; 0 for a lone record
	// or message.
	Record int
	// RecordType names the layout, e.g. "zengin.header" or "POSTING-REQ".
	RecordType string
	// Field is the field name; "" for record-level errors (short/long).
	Field string
	// Label is the field's meaning, e.g. "振込金額".
	Label string
	// Offset is the absolute byte offset of the offending byte from the
	// start of the file or message (0-based).
	Offset int64
	// Column is the 1-based position of the offending byte in the record.
	Column int
	// Bytes are the offending bytes (the field, or the record tail), copied,
	// as they were in the input (in its charset).
	Bytes []byte
	// Charset names the charset of Bytes ("" for canonical bytes).
	Charset string
	// Text is the field decoded to UTF-8 when that was possible, else "".
	Text string
	// Reason is the typed cause.
	Reason Reason
	// Err is an underlying error, may be nil. A *charset.ByteError here has
	// its Offset rewritten to the same absolute offset as Offset.
	Err error
}

// Error formats the position and cause, e.g.
// `record 3 (zengin.data) field Amount (振込金額) column 84 offset 329: not numeric: bytes "00001A0000"`.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Record > 0 {
		fmt.Fprintf(&b, "record %d", e.Record)
	} else {
		b.WriteString("record")
	}
	if e.RecordType != "" {
		fmt.Fprintf(&b, " (%s)", e.RecordType)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, " field %s", e.Field)
		if e.Label != "" {
			fmt.Fprintf(&b, " (%s)", e.Label)
		}
	}
	fmt.Fprintf(&b, " column %d offset %d: %s", e.Column, e.Offset, e.Reason)
	if e.Bytes != nil {
		asText := e.Charset == "" || e.Charset == "Shift_JIS"
		if asText && printableASCII(e.Bytes) {
			fmt.Fprintf(&b, ": bytes %q", e.Bytes)
		} else {
			fmt.Fprintf(&b, ": bytes 0x% X", e.Bytes)
			if e.Text != "" {
				fmt.Fprintf(&b, " (text %q)", e.Text)
			}
		}
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is matches a Reason target: errors.Is(err, fixed.BadSign).
func (e *Error) Is(target error) bool {
	r, ok := target.(Reason)
	return ok && r == e.Reason
}

func printableASCII(p []byte) bool {
	for _, c := range p {
		if c < 0x20 || c > 0x7E {
			return false
		}
	}
	return true
}

// Pos locates a record in its file or stream for error reporting.
type Pos struct {
	// Record is the 1-based record number (0 for a lone record).
	Record int
	// Offset is the absolute byte offset of the record's first byte.
	Offset int64
}

// DefaultMaxErrors is the cap used by NewErrorList(0).
const DefaultMaxErrors = 1000

// ErrorList collects every error found in a file, up to Max, instead of
// stopping at the first. Errors past the cap are counted in Dropped. The
// zero value keeps up to DefaultMaxErrors.
type ErrorList struct {
	// Max is the most errors kept (<= 0 means DefaultMaxErrors).
	Max int
	// Errs are the kept errors, in the order found.
	Errs []*Error
	// Dropped counts errors found after the cap was reached.
	Dropped int
}

// NewErrorList returns a list keeping up to max errors (<= 0: the default).
func NewErrorList(max int) *ErrorList {
	if max <= 0 {
		max = DefaultMaxErrors
	}
	return &ErrorList{Max: max}
}

// Add appends e; it returns false (and counts e in Dropped) once the cap is
// reached.
func (l *ErrorList) Add(e *Error) bool {
	max := l.Max
	if max <= 0 {
		max = DefaultMaxErrors
	}
	if len(l.Errs) >= max {
		l.Dropped++
		return false
	}
	l.Errs = append(l.Errs, e)
	return true
}

// AddErr adds err if it is an *Error or an *ErrorList; any other non-nil
// error is wrapped as an Error with Reason Invalid at pos.
func (l *ErrorList) AddErr(err error) {
	switch e := err.(type) {
	case nil:
	case *Error:
		l.Add(e)
	case *ErrorList:
		for _, x := range e.Errs {
			l.Add(x)
		}
		l.Dropped += e.Dropped
	default:
		l.Add(&Error{Reason: Invalid, Err: err})
	}
}

// Len is the total number of errors found, kept and dropped.
func (l *ErrorList) Len() int { return len(l.Errs) + l.Dropped }

// Full reports whether the cap has been reached.
func (l *ErrorList) Full() bool {
	max := l.Max
	if max <= 0 {
		max = DefaultMaxErrors
	}
	return len(l.Errs) >= max
}

// Err returns nil when the list is empty and the list itself otherwise.
func (l *ErrorList) Err() error {
	if l == nil || l.Len() == 0 {
		return nil
	}
	return l
}

// Error lists every kept error on its own line and the dropped count.
func (l *ErrorList) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d error(s)", l.Len())
	for _, e := range l.Errs {
		b.WriteString("\n  ")
		b.WriteString(e.Error())
	}
	if l.Dropped > 0 {
		fmt.Fprintf(&b, "\n  ... %d more not shown (cap %d)", l.Dropped, len(l.Errs))
	}
	return b.String()
}

// Unwrap exposes the kept errors to errors.Is / errors.As.
func (l *ErrorList) Unwrap() []error {
	out := make([]error, len(l.Errs))
	for i, e := range l.Errs {
		out[i] = e
	}
	return out
}
