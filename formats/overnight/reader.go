package overnight

import (
	"bufio"
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
	// Computed figures over the details.
	Count, DebitCount, DebitTotal, CreditCount, CreditTotal, HashTotal int64
	// Result files only: details answered 00 and otherwise.
	PostedCount, RejectedCount int64
	// Trailer reports whether the trailer was seen.
	Trailer bool
}

type state uint8

const (
	stStart state = iota
	stDetails
	stDone
)

const maxCount, maxTotal = 99_999_999, 999_999_999_999_999

func isRecordStart(c byte) bool { return c == 'H' || c == 'D' || c == 'T' }

// checker validates records in file context.
type checker struct {
	report     func(*fixed.Error)
	bad        bool
	st         state
	result     bool // a result file
	incomplete bool // a detail could not be read: totals not compared
	sum        Summary
	rec        recordio.Record
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
	c.addErr(&fixed.Error{Record: c.rec.Num, RecordType: "overnight", Offset: c.rec.Offset, Column: 1,
		Bytes: recordio.Clip(c.rec.Bytes), Reason: reason}, msg)
}

// fields runs the layout's type and constant checks.
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
	switch FileType(hType.of(b)) {
	case Postings:
	case Results:
		c.result = true
	default:
		c.fieldErr(HeaderLayout, "FileType", fixed.Invalid, "ファイル種別 must be POST or RSLT")
	}
	if num(hVersion.of(b)) != 1 {
		c.fieldErr(HeaderLayout, "Version", fixed.Invalid, "only layout version 01 is known")
	}
	if !dateOf(num(hDate.of(b))).Valid() {
		c.fieldErr(HeaderLayout, "BusinessDate", fixed.Invalid, "not a valid YYYYMMDD date")
	}
	if !validStamp(hCreated.of(b)) {
		c.fieldErr(HeaderLayout, "CreatedAt", fixed.Invalid, "not a valid YYYYMMDDhhmmss time")
	}
	if !c.bad {
		c.sum.Header = *decodeHeader(b)
	}
}

func (c *checker) detail(b []byte) {
	l := PostingLayout
	if c.result {
		l = ResultLayout
	}
	if !c.fields(l) {
		c.incomplete = true
		c.sum.Count++
		return
	}
	c.sum.Count++
	if seq := num(dSeq.of(b)); seq != c.sum.Count && !c.incomplete {
		c.fieldErr(l, "Seq", fixed.Invalid, fmt.Sprintf("明細通番 %d, want %d (no gaps, from 1)", seq, c.sum.Count))
	}
	kind, side := b[dKind.lo], b[dSide.lo]
	if kind != byte(Posting) && kind != byte(Reversal) {
		c.fieldErr(l, "Kind", fixed.Invalid, "取引区分 must be P or R")
	}
	if side != byte(Debit) && side != byte(Credit) {
		c.fieldErr(l, "Side", fixed.Invalid, "貸借区分 must be D or C")
	}
	if fixed.FirstNonBlank(dTx.of(b)) < 0 {
		c.fieldErr(l, "TxID", fixed.Invalid, "txid must not be blank")
	}
	if fixed.FirstNonBlank(dRef.of(b)) < 0 {
		c.fieldErr(l, "Ref", fixed.Invalid, "posting reference must not be blank")
	}
	if t := b[dAcctType.lo]; t != '1' && t != '2' && t != '4' && t != '9' {
		c.fieldErr(l, "AccountType", fixed.Invalid, "預金種目 must be 1, 2, 4 or 9")
	}
	amount := num(dAmount.of(b))
	if amount == 0 {
		c.fieldErr(l, "Amount", fixed.Invalid, "amount must be positive")
	}
	c.sum.HashTotal = (c.sum.HashTotal + hashOf(dBranch.of(b), dAcct.of(b))) % HashMod
	posted := true
	if c.result {
		code := ResultCode(num(rCode.of(b)))
		posted = code == Posted
		if !code.Valid() {
			c.fieldErr(l, "Code", fixed.Invalid, "undefined result code")
		}
		coreRef := fixed.FirstNonBlank(rCoreRef.of(b)) >= 0
		pd := num(rPosted.of(b))
		switch {
		case posted && !coreRef:
			c.fieldErr(l, "CoreRef", fixed.Invalid, "a posted detail carries the core's reference")
		case !posted && coreRef:
			c.fieldErr(l, "CoreRef", fixed.Invalid, "only a posted detail carries a core reference")
		case posted && !dateOf(pd).Valid():
			c.fieldErr(l, "PostedDate", fixed.Invalid, "a posted detail carries a valid YYYYMMDD posting date")
		case !posted && pd != 0:
			c.fieldErr(l, "PostedDate", fixed.Invalid, "only a posted detail carries a posting date")
		}
		if posted {
			c.sum.PostedCount++
		} else {
			c.sum.RejectedCount++
		}
	} else {
		orig := fixed.FirstNonBlank(pOrig.of(b)) >= 0
		switch {
		case kind == byte(Reversal) && !orig:
			c.fieldErr(l, "OriginalRef", fixed.Invalid, "a reversal names the reference it reverses")
		case kind == byte(Posting) && orig:
			c.fieldErr(l, "OriginalRef", fixed.Invalid, "only a reversal has an original reference")
		}
		if !dateOf(num(pValue.of(b))).Valid() {
			c.fieldErr(l, "ValueDate", fixed.Invalid, "not a valid YYYYMMDD date")
		}
	}
	if posted {
		if side == byte(Debit) {
			c.sum.DebitCount++
			c.sum.DebitTotal += amount
		} else if side == byte(Credit) {
			c.sum.CreditCount++
			c.sum.CreditTotal += amount
		}
	}
}

func (c *checker) trailer(b []byte) {
	c.st = stDone
	c.sum.Trailer = true
	l := TrailerLayout
	if c.result {
		l = ResultTrailerLayout
	}
	if !c.fields(l) || c.incomplete {
		return
	}
	eq := func(name string, field []byte, computed, max int64, what string) {
		if computed > max {
			c.fieldErr(l, name, fixed.Overflow, fmt.Sprintf("%s %d does not fit the field", what, computed))
			return
		}
		if got := num(field); got != computed {
			reason := fixed.Invalid
			if name == "Count" {
				reason = fixed.LengthMismatch
			}
			c.fieldErr(l, name, reason, fmt.Sprintf("trailer says %d, the %s is %d", got, what, computed))
		}
	}
	s := &c.sum
	eq("Count", tCount.of(b), s.Count, maxCount, "number of details")
	if c.result {
		eq("PostedCount", rtPosted.of(b), s.PostedCount, maxCount, "number of posted details")
		eq("RejectedCount", rtRejected.of(b), s.RejectedCount, maxCount, "number of rejected details")
		eq("DebitTotal", rtDebit.of(b), s.DebitTotal, maxTotal, "sum of posted debits")
		eq("CreditTotal", rtCredit.of(b), s.CreditTotal, maxTotal, "sum of posted credits")
	} else {
		eq("DebitCount", tDebitCount.of(b), s.DebitCount, maxCount, "number of debits")
		eq("DebitTotal", tDebitTotal.of(b), s.DebitTotal, maxTotal, "sum of debits")
		eq("CreditCount", tCreditCount.of(b), s.CreditCount, maxCount, "number of credits")
		eq("CreditTotal", tCreditTotal.of(b), s.CreditTotal, maxTotal, "sum of credits")
	}
	eq("HashTotal", tHash.of(b), s.HashTotal, maxTotal, "hash total of 店番+口座番号")
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
	c.report(&fixed.Error{Record: last, RecordType: "overnight", Offset: size, Reason: fixed.Invalid,
		Err: &recordio.LineError{Line: line, Msg: msg}})
}

// Reader streams an overnight file, handing over only valid records.
type Reader struct {
	st recordio.Stream[Record]
	ck *checker
}

// NewReader reads a posting or result file from r.
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
	z.st.Scanner.RecordType = "overnight"
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
	b := rec.Bytes
	switch {
	case typ == 'H':
		return decodeHeader(b), true
	case typ == 'D' && z.ck.result:
		return decodeResult(b), true
	case typ == 'D':
		return decodePosting(b), true
	case z.ck.result:
		return decodeResultTrailer(b), true
	default:
		return decodeTrailer(b), true
	}
}

// Next returns the next valid record, a *fixed.ErrorList for a broken one,
// or io.EOF at the end.
func (z *Reader) Next() (Record, error) { return z.st.Next() }

// Records iterates over the file (see zengin.Reader.Records).
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
	sc.RecordType = "overnight"
	if err := recordio.Drain(sc, func(rec recordio.Record) { ck.check(rec) },
		func() { ck.finish(sc.Offset(), sc.Line(), sc.Records()) }); err != nil {
		return ck.sum, err
	}
	s := ck.sum
	s.Separator = sc.Separator()
	return s, errs.Err()
}

// Writer writes a posting or result file in canonical form: CR LF after
// every record, trailer computed.
type Writer struct {
	bw     *bufio.Writer
	buf    []byte
	err    error
	st     state
	result bool
	sum    Summary
}

// NewWriter writes to w; call Close at the end to write the trailer.
func NewWriter(w io.Writer) *Writer {
	return &Writer{bw: bufio.NewWriterSize(w, 256<<10)}
}

func (w *Writer) emit(r Record) error {
	b, err := r.AppendRecord(w.buf[:0])
	if err != nil {
		w.err = fmt.Errorf("overnight: record %d: %w", w.sum.Records+1, err)
		return w.err
	}
	w.buf = append(b, '\r', '\n')
	if _, err := w.bw.Write(w.buf); err != nil {
		w.err = err
		return err
	}
	w.sum.Records++
	return nil
}

func (w *Writer) fail(format string, a ...any) error {
	w.err = fmt.Errorf("overnight: record %d: "+format, append([]any{w.sum.Records + 1}, a...)...)
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
	w.result = h.FileType == Results
	w.st = stDetails
	return w.emit(h)
}

func (w *Writer) detail(r Record, seq int64, side Side, amount int64, branch, acct string, posted bool) error {
	if w.err != nil {
		return w.err
	}
	if w.st != stDetails {
		return w.fail("detail outside header…trailer")
	}
	if seq != w.sum.Count+1 {
		return w.fail("明細通番 %d, want %d", seq, w.sum.Count+1)
	}
	if err := w.emit(r); err != nil {
		return err
	}
	w.sum.Count++
	w.sum.HashTotal = (w.sum.HashTotal + hashOf([]byte(branch), []byte(acct))) % HashMod
	if w.result {
		if posted {
			w.sum.PostedCount++
		} else {
			w.sum.RejectedCount++
		}
	}
	if posted && side == Debit {
		w.sum.DebitCount++
		w.sum.DebitTotal += amount
	} else if posted {
		w.sum.CreditCount++
		w.sum.CreditTotal += amount
	}
	return nil
}

// WritePosting writes a detail of a posting file.
func (w *Writer) WritePosting(p *PostingDetail) error {
	if w.result {
		return w.fail("posting detail in a result file")
	}
	return w.detail(p, p.Seq, p.Side, p.Amount, p.BranchCode, p.AccountNumber, true)
}

// WriteResult writes a detail of a result file.
func (w *Writer) WriteResult(r *ResultDetail) error {
	if !w.result {
		return w.fail("result detail in a posting file")
	}
	return w.detail(r, r.Seq, r.Side, r.Amount, r.BranchCode, r.AccountNumber, r.Code == Posted)
}

// Write writes any record; a given trailer must equal the computed one.
func (w *Writer) Write(r Record) error {
	switch v := r.(type) {
	case *Header:
		return w.WriteHeader(v)
	case *PostingDetail:
		return w.WritePosting(v)
	case *ResultDetail:
		return w.WriteResult(v)
	case *Trailer:
		if want := w.trailer(); w.result || *v != want {
			return w.fail("trailer %+v differs from the computed %+v", *v, want)
		}
		return w.Close()
	case *ResultTrailer:
		if want := w.resultTrailer(); !w.result || *v != want {
			return w.fail("trailer %+v differs from the computed %+v", *v, want)
		}
		return w.Close()
	}
	return w.fail("unknown record %T", r)
}

func (w *Writer) trailer() Trailer {
	s := w.sum
	return Trailer{Count: s.Count, DebitCount: s.DebitCount, DebitTotal: s.DebitTotal, CreditCount: s.CreditCount, CreditTotal: s.CreditTotal, HashTotal: s.HashTotal}
}

func (w *Writer) resultTrailer() ResultTrailer {
	s := w.sum
	return ResultTrailer{Count: s.Count, PostedCount: s.PostedCount, RejectedCount: s.RejectedCount, DebitTotal: s.DebitTotal, CreditTotal: s.CreditTotal, HashTotal: s.HashTotal}
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
	var t Record
	if w.result {
		rt := w.resultTrailer()
		t = &rt
	} else {
		pt := w.trailer()
		t = &pt
	}
	if err := w.emit(t); err != nil {
		return err
	}
	w.st = stDone
	return w.bw.Flush()
}
