package corebalance

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"iter"

	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/recordio"
)

// DefaultMaxErrors is how many errors Validate keeps.
const DefaultMaxErrors = 100

// Summary describes a file that was read or validated.
type Summary struct {
	Records   int
	Bytes     int64
	Separator recordio.Separator
	// Header is the file's header (zero when unreadable).
	Header Header
	// Computed over the details.
	Count, BalanceTotal, HashTotal int64
	// Trailer reports whether the trailer was seen.
	Trailer bool
}

type state uint8

const (
	stStart state = iota
	stDetails
	stDone
)

const maxCount, maxTotal, maxHash = 99_999_999, 999_999_999_999_999_999, HashMod - 1

func isRecordStart(c byte) bool { return c == 'H' || c == 'D' || c == 'T' }

// checker validates records in file context.
type checker struct {
	report     func(*fixed.Error)
	bad        bool
	st         state
	incomplete bool // a detail could not be read: totals not compared
	sum        Summary
	rec        recordio.Record
	prevKey    [11]byte
	havePrev   bool
	scratch    fixed.ErrorList
}

func newChecker(report func(*fixed.Error)) *checker {
	return &checker{report: report, scratch: fixed.ErrorList{Max: 1 << 30}}
}

func (c *checker) addErr(e *fixed.Error, msg string) {
	c.bad = true
	if e.Err == nil {
		e.Err = &recordio.LineError{Line: c.rec.Line, Msg: msg}
	} else {
		e.Err = &recordio.LineError{Line: c.rec.Line, Msg: msg, Err: e.Err}
	}
	c.report(e)
}

func (c *checker) pos() fixed.Pos { return fixed.Pos{Record: c.rec.Num, Offset: c.rec.Offset} }

func (c *checker) fieldErr(l *fixed.Layout, name string, reason fixed.Reason, msg string) {
	f, _ := l.Field(name)
	c.addErr(l.FieldError(f, c.rec.Bytes, c.pos(), reason, 0, nil), msg)
}

func (c *checker) recordErr(reason fixed.Reason, msg string) {
	c.addErr(&fixed.Error{Record: c.rec.Num, RecordType: "corebalance", Offset: c.rec.Offset, Column: 1,
		Bytes: recordio.Clip(c.rec.Bytes), Reason: reason}, msg)
}

func (c *checker) fields(l *fixed.Layout) bool {
	c.scratch.Errs = c.scratch.Errs[:0]
	if l.Validate(c.rec.Bytes, c.pos(), &c.scratch) {
		return true
	}
	for _, e := range c.scratch.Errs {
		c.addErr(e, e.Reason.String())
	}
	return false
}

func (c *checker) check(rec recordio.Record) (typ byte, ok bool) {
	c.rec, c.bad = rec, false
	c.sum.Records = rec.Num
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
		c.header(b)
	case c.st == stStart:
		c.recordErr(fixed.Invalid, "the file must start with a header (H)")
		c.st = stDetails
		c.incomplete = true
	case typ == 'D':
		c.detail(b)
	case typ == 'T':
		c.trailer(b)
	default:
		c.incomplete = true
		c.recordErr(fixed.UnknownRecordType, fmt.Sprintf("レコード区分 %q is not H, D or T", typ))
	}
	return typ, !c.bad
}

func (c *checker) header(b []byte) {
	c.st = stDetails
	if !c.fields(HeaderLayout) {
		return
	}
	if string(hType.of(b)) != FileType {
		c.fieldErr(HeaderLayout, "FileType", fixed.Invalid, "ファイル種別 must be CBAL")
	}
	if num(hVersion.of(b)) != 1 {
		c.fieldErr(HeaderLayout, "Version", fixed.Invalid, "only layout version 01 is known")
	}
	if !dateOf(num(hDate.of(b))).Valid() {
		c.fieldErr(HeaderLayout, "BusinessDate", fixed.Invalid, "not a valid YYYYMMDD date")
	}
	if !validStamp(hCutoff.of(b)) {
		c.fieldErr(HeaderLayout, "CutoffAt", fixed.Invalid, "not a valid YYYYMMDDhhmmss time")
	}
	if !c.bad {
		c.sum.Header = *decodeHeader(b)
	}
}

func (c *checker) detail(b []byte) {
	c.sum.Count++
	if !c.fields(DetailLayout) {
		c.incomplete = true
		return
	}
	if seq := num(dSeq.of(b)); seq != c.sum.Count && !c.incomplete {
		c.fieldErr(DetailLayout, "Seq", fixed.Invalid, fmt.Sprintf("明細通番 %d, want %d (no gaps, from 1)", seq, c.sum.Count))
	}
	if t := b[dType.lo]; t != '1' && t != '2' && t != '4' && t != '9' {
		c.fieldErr(DetailLayout, "AccountType", fixed.Invalid, "預金種目 must be 1, 2, 4 or 9")
	}
	if s := Status(b[dStatus.lo]); s != Open && s != Closed {
		c.fieldErr(DetailLayout, "Status", fixed.Invalid, "口座状態 must be O or C")
	}
	key := keyBytes(b)
	if c.havePrev && bytes.Compare(key, c.prevKey[:]) <= 0 {
		c.fieldErr(DetailLayout, "AccountNumber", fixed.Invalid,
			"account not after the previous detail's: details ascend by 店番, 預金種目, 口座番号 with no account twice")
	}
	copy(c.prevKey[:], key)
	c.havePrev = true
	c.sum.HashTotal = (c.sum.HashTotal + hashOf(dBranch.of(b), dNumber.of(b))) % HashMod
	c.sum.BalanceTotal += num(dBalance.of(b))
}

func (c *checker) trailer(b []byte) {
	c.st = stDone
	c.sum.Trailer = true
	if !c.fields(TrailerLayout) || c.incomplete {
		return
	}
	eq := func(name string, field []byte, computed, max int64, what string) {
		if computed > max || computed < 0 {
			c.fieldErr(TrailerLayout, name, fixed.Overflow, fmt.Sprintf("%s %d does not fit the field", what, computed))
			return
		}
		if got := num(field); got != computed {
			reason := fixed.Invalid
			if name == "Count" {
				reason = fixed.LengthMismatch
			}
			c.fieldErr(TrailerLayout, name, reason, fmt.Sprintf("trailer says %d, the %s is %d", got, what, computed))
		}
	}
	s := &c.sum
	eq("Count", tCount.of(b), s.Count, maxCount, "number of details")
	eq("BalanceTotal", tTotal.of(b), s.BalanceTotal, maxTotal, "sum of balances")
	eq("HashTotal", tHash.of(b), s.HashTotal, maxHash, "hash total of 店番+口座番号")
}

func (c *checker) finish(size int64, line int64, last int) {
	c.sum.Bytes = size
	if c.st == stDone {
		return
	}
	msg := "missing trailer record"
	if last == 0 {
		msg = "empty file: no records"
	}
	c.report(&fixed.Error{Record: last, RecordType: "corebalance", Offset: size, Reason: fixed.Invalid,
		Err: &recordio.LineError{Line: line, Msg: msg}})
}

// Reader streams a core balance file, handing over only valid records.
// A consumer that acts on details as they come (a merge) must still treat
// the file as unproven until the trailer has been read without error.
type Reader struct {
	st recordio.Stream[Record]
	ck *checker
}

// NewReader reads a core balance file from r.
func NewReader(r io.Reader) *Reader {
	z := &Reader{}
	z.st.MaxErrors = DefaultMaxErrors
	z.ck = newChecker(z.st.Add)
	z.st.Scanner = recordio.NewScanner(r, RecordLen, isRecordStart, func(e *fixed.Error) {
		if e.Reason == fixed.ShortRecord {
			z.ck.incomplete = true
		}
		z.st.Add(e)
	})
	z.st.Scanner.RecordType = "corebalance"
	z.st.Decode = z.decode
	z.st.Finish = func() {
		sc := z.st.Scanner
		z.ck.finish(sc.Offset(), sc.Line(), sc.Records())
	}
	return z
}

func (z *Reader) decode(rec recordio.Record) (Record, bool) {
	typ, valid := z.ck.check(rec)
	if !valid {
		return nil, false
	}
	switch typ {
	case 'H':
		return decodeHeader(rec.Bytes), true
	case 'D':
		return decodeDetail(rec.Bytes), true
	default:
		return decodeTrailer(rec.Bytes), true
	}
}

// Next returns the next valid record, a *fixed.ErrorList for a broken one,
// or io.EOF at the end.
func (z *Reader) Next() (Record, error) { return z.st.Next() }

// Records iterates over the file.
func (z *Reader) Records() iter.Seq2[Record, error] { return z.st.All() }

// Summary describes what has been read so far.
func (z *Reader) Summary() Summary {
	s := z.ck.sum
	s.Separator, s.Bytes = z.st.Scanner.Separator(), z.st.Scanner.Offset()
	return s
}

// Validate checks a whole file without handing over any record, returning
// its Summary and a *fixed.ErrorList of every error (or an I/O error).
func Validate(r io.Reader) (Summary, error) { return ValidateMax(r, DefaultMaxErrors) }

// ValidateMax is Validate keeping up to maxErrors errors.
func ValidateMax(r io.Reader, maxErrors int) (Summary, error) {
	errs := fixed.NewErrorList(maxErrors)
	ck := newChecker(func(e *fixed.Error) { errs.Add(e) })
	sc := recordio.NewScanner(r, RecordLen, isRecordStart, func(e *fixed.Error) {
		if e.Reason == fixed.ShortRecord {
			ck.incomplete = true
		}
		errs.Add(e)
	})
	sc.RecordType = "corebalance"
	if err := recordio.Drain(sc, func(rec recordio.Record) { ck.check(rec) },
		func() { ck.finish(sc.Offset(), sc.Line(), sc.Records()) }); err != nil {
		return ck.sum, err
	}
	s := ck.sum
	s.Separator = sc.Separator()
	return s, errs.Err()
}

// Writer writes a core balance file in canonical form: CR LF after every
// record, details numbered, order checked, trailer computed.
type Writer struct {
	bw       *bufio.Writer
	buf      []byte
	err      error
	st       state
	sum      Summary
	prevKey  [11]byte
	havePrev bool
}

// NewWriter writes to w; call Close at the end to write the trailer.
func NewWriter(w io.Writer) *Writer { return &Writer{bw: bufio.NewWriterSize(w, 256<<10)} }

func (w *Writer) encode(r Record) error {
	b, err := r.AppendRecord(w.buf[:0])
	if err != nil {
		w.err = fmt.Errorf("corebalance: record %d: %w", w.sum.Records+1, err)
		return w.err
	}
	w.buf = append(b, '\r', '\n')
	return nil
}

func (w *Writer) emit(r Record) error {
	if err := w.encode(r); err != nil {
		return err
	}
	return w.write()
}

func (w *Writer) write() error {
	if _, err := w.bw.Write(w.buf); err != nil {
		w.err = err
		return err
	}
	w.sum.Records++
	return nil
}

func (w *Writer) fail(format string, a ...any) error {
	w.err = fmt.Errorf("corebalance: record %d: "+format, append([]any{w.sum.Records + 1}, a...)...)
	return w.err
}

// WriteHeader starts the file.
func (w *Writer) WriteHeader(h *Header) error {
	if w.err != nil {
		return w.err
	}
	if w.st != stStart {
		return w.fail("second header")
	}
	w.st = stDetails
	return w.emit(h)
}

// WriteDetail writes the next account; its Seq is set to the next number.
// Accounts must come in ascending key order.
func (w *Writer) WriteDetail(d *Detail) error {
	if w.err != nil {
		return w.err
	}
	if w.st != stDetails {
		return w.fail("detail outside header…trailer")
	}
	d.Seq = w.sum.Count + 1
	if err := w.encode(d); err != nil {
		return err
	}
	key := keyBytes(w.buf)
	if w.havePrev && bytes.Compare(key, w.prevKey[:]) <= 0 {
		return w.fail("account %s not after the previous one (details ascend by account key)", d.Account.Masked())
	}
	if err := w.write(); err != nil {
		return err
	}
	copy(w.prevKey[:], key)
	w.havePrev = true
	w.sum.Count++
	w.sum.BalanceTotal += d.Balance
	w.sum.HashTotal = (w.sum.HashTotal + hashOf(dBranch.of(w.buf), dNumber.of(w.buf))) % HashMod
	return nil
}

// Close writes the computed trailer and flushes. It does not close the
// underlying writer.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if w.st != stDetails {
		return w.fail("no header written")
	}
	if err := w.emit(&Trailer{Count: w.sum.Count, BalanceTotal: w.sum.BalanceTotal, HashTotal: w.sum.HashTotal}); err != nil {
		return err
	}
	w.st = stDone
	return w.bw.Flush()
}
