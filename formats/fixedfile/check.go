package fixedfile

import (
	"fmt"
	"io"
	"iter"

	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/recordio"
)

// Body is what a format checks in its records, and the totals it keeps.
// Each method is called with the record's bytes once its kind and place
// in the file are right; it reports through the Checker.
type Body interface {
	Header(c *Checker, b []byte)
	Detail(c *Checker, b []byte)
	Trailer(c *Checker, b []byte)
}

type state uint8

const (
	stStart state = iota
	stDetails
	stDone
)

// isRecordStart reports whether c starts a record (H, D or T): the
// scanner resynchronises on it.
func isRecordStart(c byte) bool { return c == 'H' || c == 'D' || c == 'T' }

// Checker validates records in file context: one header first, details,
// one trailer last.
type Checker struct {
	F    *Format
	Body Body
	// Incomplete is set once a detail could not be read: the trailer's
	// totals are not compared.
	Incomplete bool
	// Records is the number of the last record checked.
	Records int
	// Trailer reports whether the trailer was seen.
	Trailer bool
	// Bytes is the file's size, once Finish ran.
	Bytes int64

	report  func(*fixed.Error)
	bad     bool
	st      state
	rec     recordio.Record
	scratch fixed.ErrorList
}

// NewChecker checks records of f with body.
func NewChecker(f *Format, body Body) *Checker {
	return &Checker{F: f, Body: body, scratch: fixed.ErrorList{Max: 1 << 30}}
}

func (c *Checker) addErr(e *fixed.Error, msg string) {
	c.bad = true
	if e.Err == nil {
		e.Err = &recordio.LineError{Line: c.rec.Line, Msg: msg}
	} else {
		e.Err = &recordio.LineError{Line: c.rec.Line, Msg: msg, Err: e.Err}
	}
	c.report(e)
}

func (c *Checker) pos() fixed.Pos { return fixed.Pos{Record: c.rec.Num, Offset: c.rec.Offset} }

// FieldErr reports field name of l in the current record.
func (c *Checker) FieldErr(l *fixed.Layout, name string, reason fixed.Reason, msg string) {
	f, _ := l.Field(name)
	c.addErr(l.FieldError(f, c.rec.Bytes, c.pos(), reason, 0, nil), msg)
}

func (c *Checker) recordErr(reason fixed.Reason, msg string) {
	c.addErr(&fixed.Error{Record: c.rec.Num, RecordType: c.F.Name, Offset: c.rec.Offset, Column: 1,
		Bytes: recordio.Clip(c.rec.Bytes), Reason: reason}, msg)
}

// Fields runs the layout's type and constant checks on the current
// record, reporting each error; it reports whether there were none.
func (c *Checker) Fields(l *fixed.Layout) bool {
	c.scratch.Errs = c.scratch.Errs[:0]
	if l.Validate(c.rec.Bytes, c.pos(), &c.scratch) {
		return true
	}
	for _, e := range c.scratch.Errs {
		c.addErr(e, e.Reason.String())
	}
	return false
}

// Bad reports whether the current record had an error so far.
func (c *Checker) Bad() bool { return c.bad }

// Check validates one record, returning its type byte and whether it is
// valid.
func (c *Checker) Check(rec recordio.Record) (typ byte, ok bool) {
	c.rec, c.bad = rec, false
	c.Records = rec.Num
	b := rec.Bytes
	typ = b[0]
	switch {
	case c.st == stDone:
		c.recordErr(fixed.Invalid, "record after the trailer")
	case typ == 'H':
		if c.st != stStart {
			c.recordErr(fixed.Invalid, "second header")
			break
		}
		c.st = stDetails
		c.Body.Header(c, b)
	case c.st == stStart:
		c.recordErr(fixed.Invalid, "the file must start with a header (H)")
		c.st = stDetails
		c.Incomplete = true
	case typ == 'D':
		c.Body.Detail(c, b)
	case typ == 'T':
		c.st = stDone
		c.Trailer = true
		c.Body.Trailer(c, b)
	default:
		c.Incomplete = true
		c.recordErr(fixed.UnknownRecordType, fmt.Sprintf("レコード区分 %q is not H, D or T", typ))
	}
	return typ, !c.bad
}

// Total compares a trailer field with the figure computed over the
// details: one that does not fit is Overflow, a count that differs is
// LengthMismatch, any other difference Invalid.
func (c *Checker) Total(l *fixed.Layout, name string, field []byte, computed, max int64, what string) {
	if computed > max || computed < 0 {
		c.FieldErr(l, name, fixed.Overflow, fmt.Sprintf("%s %d does not fit the field", what, computed))
		return
	}
	if got := Num(field); got != computed {
		reason := fixed.Invalid
		if name == "Count" {
			reason = fixed.LengthMismatch
		}
		c.FieldErr(l, name, reason, fmt.Sprintf("trailer says %d, the %s is %d", got, what, computed))
	}
}

// Finish reports what only the end of the file shows: no trailer.
func (c *Checker) Finish(size int64, line int64, last int) {
	c.Bytes = size
	if c.st == stDone {
		return
	}
	msg := "missing trailer record"
	if last == 0 {
		msg = "empty file: no records"
	}
	c.report(&fixed.Error{Record: last, RecordType: c.F.Name, Offset: size, Reason: fixed.Invalid,
		Err: &recordio.LineError{Line: line, Msg: msg}})
}

func (c *Checker) scanner(r io.Reader, add func(*fixed.Error)) *recordio.Scanner {
	c.report = add
	sc := recordio.NewScanner(r, c.F.RecordLen, isRecordStart, func(e *fixed.Error) {
		if e.Reason == fixed.ShortRecord {
			c.Incomplete = true
		}
		add(e)
	})
	sc.RecordType = c.F.Name
	return sc
}

// Reader streams a file, handing over only valid records.
type Reader[R any] struct {
	st recordio.Stream[R]
}

// NewReader reads r with checker c; decode turns a valid record (its type
// byte and bytes) into the format's record.
func NewReader[R any](r io.Reader, c *Checker, maxErrors int, decode func(typ byte, b []byte) R) *Reader[R] {
	z := &Reader[R]{}
	z.st.MaxErrors = maxErrors
	z.st.Scanner = c.scanner(r, z.st.Add)
	z.st.Decode = func(rec recordio.Record) (R, bool) {
		typ, valid := c.Check(rec)
		if !valid {
			var zero R
			return zero, false
		}
		return decode(typ, rec.Bytes), true
	}
	z.st.Finish = func() {
		sc := z.st.Scanner
		c.Finish(sc.Offset(), sc.Line(), sc.Records())
	}
	return z
}

// Next returns the next valid record, a *fixed.ErrorList for a broken one,
// or io.EOF at the end.
func (z *Reader[R]) Next() (R, error) { return z.st.Next() }

// Records iterates over the file.
func (z *Reader[R]) Records() iter.Seq2[R, error] { return z.st.All() }

// Separator is the record separator seen so far.
func (z *Reader[R]) Separator() recordio.Separator { return z.st.Scanner.Separator() }

// Offset is the number of bytes read so far.
func (z *Reader[R]) Offset() int64 { return z.st.Scanner.Offset() }

// Validate checks the whole of r with checker c without handing over any
// record, returning the separator and a *fixed.ErrorList of every error
// kept (up to maxErrors), or an I/O error.
func Validate(r io.Reader, c *Checker, maxErrors int) (recordio.Separator, error) {
	errs := fixed.NewErrorList(maxErrors)
	sc := c.scanner(r, func(e *fixed.Error) { errs.Add(e) })
	if err := recordio.Drain(sc, func(rec recordio.Record) { c.Check(rec) },
		func() { c.Finish(sc.Offset(), sc.Line(), sc.Records()) }); err != nil {
		return sc.Separator(), err
	}
	return sc.Separator(), errs.Err()
}

// HeaderDates checks what every header of these files holds: layout
// version 01, a valid BusinessDate and a valid YYYYMMDDhhmmss stamp in
// field stamp.
func (c *Checker) HeaderDates(l *fixed.Layout, b []byte, stamp string) {
	if Num(RefOf(l, "Version").Of(b)) != 1 {
		c.FieldErr(l, "Version", fixed.Invalid, "only layout version 01 is known")
	}
	if !DateOf(Num(RefOf(l, "BusinessDate").Of(b))).Valid() {
		c.FieldErr(l, "BusinessDate", fixed.Invalid, "not a valid YYYYMMDD date")
	}
	if !ValidStamp(RefOf(l, stamp).Of(b)) {
		c.FieldErr(l, stamp, fixed.Invalid, "not a valid YYYYMMDDhhmmss time")
	}
}
