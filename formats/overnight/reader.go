package overnight

import (
	"bufio"
	"fmt"
	"io"
	"iter"

	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/fixedfile"
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

const maxCount, maxTotal = 99_999_999, 999_999_999_999_999

// body is what an overnight file's records must hold (fixedfile.Body).
type body struct {
	sum    Summary
	result bool // a result file
}

func newChecker() (*fixedfile.Checker, *body) {
	b := &body{}
	return fixedfile.NewChecker(format, b), b
}

// summary is what ck and its body found.
func (s *body) summary(ck *fixedfile.Checker) Summary {
	out := s.sum
	out.Records, out.Trailer, out.Bytes = ck.Records, ck.Trailer, ck.Bytes
	return out
}

func (s *body) Header(c *fixedfile.Checker, b []byte) {
	if !c.Fields(HeaderLayout) {
		return
	}
	switch FileType(hType.Of(b)) {
	case Postings:
	case Results:
		s.result = true
	default:
		c.FieldErr(HeaderLayout, "FileType", fixed.Invalid, "ファイル種別 must be POST or RSLT")
	}
	c.HeaderDates(HeaderLayout, b, "CreatedAt")
	if !c.Bad() {
		s.sum.Header = *decodeHeader(b)
	}
}

func (s *body) Detail(c *fixedfile.Checker, b []byte) {
	l := PostingLayout
	if s.result {
		l = ResultLayout
	}
	if !c.Fields(l) {
		c.Incomplete = true
		s.sum.Count++
		return
	}
	s.sum.Count++
	if seq := num(dSeq.Of(b)); seq != s.sum.Count && !c.Incomplete {
		c.FieldErr(l, "Seq", fixed.Invalid, fmt.Sprintf("明細通番 %d, want %d (no gaps, from 1)", seq, s.sum.Count))
	}
	kind, side := b[dKind.Lo], b[dSide.Lo]
	if kind != byte(Posting) && kind != byte(Reversal) {
		c.FieldErr(l, "Kind", fixed.Invalid, "取引区分 must be P or R")
	}
	if side != byte(Debit) && side != byte(Credit) {
		c.FieldErr(l, "Side", fixed.Invalid, "貸借区分 must be D or C")
	}
	if fixed.FirstNonBlank(dTx.Of(b)) < 0 {
		c.FieldErr(l, "TxID", fixed.Invalid, "txid must not be blank")
	}
	if fixed.FirstNonBlank(dRef.Of(b)) < 0 {
		c.FieldErr(l, "Ref", fixed.Invalid, "posting reference must not be blank")
	}
	if !fixedfile.ValidAccountType(b[dAcctType.Lo]) {
		c.FieldErr(l, "AccountType", fixed.Invalid, "預金種目 must be 1, 2, 4 or 9")
	}
	amount := num(dAmount.Of(b))
	if amount == 0 {
		c.FieldErr(l, "Amount", fixed.Invalid, "amount must be positive")
	}
	s.sum.HashTotal = (s.sum.HashTotal + hashOf(dBranch.Of(b), dAcct.Of(b))) % HashMod
	posted := true
	if s.result {
		code := ResultCode(num(rCode.Of(b)))
		posted = code == Posted
		if !code.Valid() {
			c.FieldErr(l, "Code", fixed.Invalid, "undefined result code")
		}
		coreRef := fixed.FirstNonBlank(rCoreRef.Of(b)) >= 0
		pd := num(rPosted.Of(b))
		switch {
		case posted && !coreRef:
			c.FieldErr(l, "CoreRef", fixed.Invalid, "a posted detail carries the core's reference")
		case !posted && coreRef:
			c.FieldErr(l, "CoreRef", fixed.Invalid, "only a posted detail carries a core reference")
		case posted && !dateOf(pd).Valid():
			c.FieldErr(l, "PostedDate", fixed.Invalid, "a posted detail carries a valid YYYYMMDD posting date")
		case !posted && pd != 0:
			c.FieldErr(l, "PostedDate", fixed.Invalid, "only a posted detail carries a posting date")
		}
		if posted {
			s.sum.PostedCount++
		} else {
			s.sum.RejectedCount++
		}
	} else {
		orig := fixed.FirstNonBlank(pOrig.Of(b)) >= 0
		switch {
		case kind == byte(Reversal) && !orig:
			c.FieldErr(l, "OriginalRef", fixed.Invalid, "a reversal names the reference it reverses")
		case kind == byte(Posting) && orig:
			c.FieldErr(l, "OriginalRef", fixed.Invalid, "only a reversal has an original reference")
		}
		if !dateOf(num(pValue.Of(b))).Valid() {
			c.FieldErr(l, "ValueDate", fixed.Invalid, "not a valid YYYYMMDD date")
		}
	}
	if posted {
		if side == byte(Debit) {
			s.sum.DebitCount++
			s.sum.DebitTotal += amount
		} else if side == byte(Credit) {
			s.sum.CreditCount++
			s.sum.CreditTotal += amount
		}
	}
}

func (s *body) Trailer(c *fixedfile.Checker, b []byte) {
	l := TrailerLayout
	if s.result {
		l = ResultTrailerLayout
	}
	if !c.Fields(l) || c.Incomplete {
		return
	}
	eq := func(name string, field []byte, computed, max int64, what string) {
		c.Total(l, name, field, computed, max, what)
	}
	t := &s.sum
	eq("Count", tCount.Of(b), t.Count, maxCount, "number of details")
	if s.result {
		eq("PostedCount", rtPosted.Of(b), t.PostedCount, maxCount, "number of posted details")
		eq("RejectedCount", rtRejected.Of(b), t.RejectedCount, maxCount, "number of rejected details")
		eq("DebitTotal", rtDebit.Of(b), t.DebitTotal, maxTotal, "sum of posted debits")
		eq("CreditTotal", rtCredit.Of(b), t.CreditTotal, maxTotal, "sum of posted credits")
	} else {
		eq("DebitCount", tDebitCount.Of(b), t.DebitCount, maxCount, "number of debits")
		eq("DebitTotal", tDebitTotal.Of(b), t.DebitTotal, maxTotal, "sum of debits")
		eq("CreditCount", tCreditCount.Of(b), t.CreditCount, maxCount, "number of credits")
		eq("CreditTotal", tCreditTotal.Of(b), t.CreditTotal, maxTotal, "sum of credits")
	}
	eq("HashTotal", tHash.Of(b), t.HashTotal, maxTotal, "hash total of 店番+口座番号")
}

// Reader streams an overnight file, handing over only valid records.
type Reader struct {
	rd   *fixedfile.Reader[Record]
	ck   *fixedfile.Checker
	body *body
}

// NewReader reads a posting or result file from r.
func NewReader(r io.Reader) *Reader {
	ck, b := newChecker()
	return &Reader{rd: fixedfile.NewReader(r, ck, DefaultMaxErrors, b.decode), ck: ck, body: b}
}

func (s *body) decode(typ byte, b []byte) Record {
	switch {
	case typ == 'H':
		return decodeHeader(b)
	case typ == 'D' && s.result:
		return decodeResult(b)
	case typ == 'D':
		return decodePosting(b)
	case s.result:
		return decodeResultTrailer(b)
	default:
		return decodeTrailer(b)
	}
}

// Next returns the next valid record, a *fixed.ErrorList for a broken one,
// or io.EOF at the end.
func (z *Reader) Next() (Record, error) { return z.rd.Next() }

// Records iterates over the file (see zengin.Reader.Records).
func (z *Reader) Records() iter.Seq2[Record, error] { return z.rd.Records() }

// Summary describes what has been read so far.
func (z *Reader) Summary() Summary {
	s := z.body.summary(z.ck)
	s.Separator, s.Bytes = z.rd.Separator(), z.rd.Offset()
	return s
}

// Validate checks a whole file without handing over any record, returning
// its Summary and a *fixed.ErrorList of every error (or an I/O error).
func Validate(r io.Reader) (Summary, error) { return ValidateMax(r, DefaultMaxErrors) }

// ValidateMax is Validate keeping up to maxErrors errors.
func ValidateMax(r io.Reader, maxErrors int) (Summary, error) {
	ck, b := newChecker()
	sep, err := fixedfile.Validate(r, ck, maxErrors)
	s := b.summary(ck)
	s.Separator = sep
	return s, err
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

// The writer's place in the file.
type state uint8

const (
	stStart state = iota
	stDetails
	stDone
)
