package corebalance

import (
	"bufio"
	"bytes"
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
	// Computed over the details.
	Count, BalanceTotal, HashTotal int64
	// Trailer reports whether the trailer was seen.
	Trailer bool
}

const maxCount, maxTotal, maxHash = 99_999_999, 999_999_999_999_999_999, HashMod - 1

// body is what a core balance file's records must hold (fixedfile.Body).
type body struct {
	sum      Summary
	prevKey  [11]byte
	havePrev bool
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
	if string(hType.Of(b)) != FileType {
		c.FieldErr(HeaderLayout, "FileType", fixed.Invalid, "ファイル種別 must be CBAL")
	}
	c.HeaderDates(HeaderLayout, b, "CutoffAt")
	if !c.Bad() {
		s.sum.Header = *decodeHeader(b)
	}
}

func (s *body) Detail(c *fixedfile.Checker, b []byte) {
	s.sum.Count++
	if !c.Fields(DetailLayout) {
		c.Incomplete = true
		return
	}
	if seq := num(dSeq.Of(b)); seq != s.sum.Count && !c.Incomplete {
		c.FieldErr(DetailLayout, "Seq", fixed.Invalid, fmt.Sprintf("明細通番 %d, want %d (no gaps, from 1)", seq, s.sum.Count))
	}
	if !fixedfile.ValidAccountType(b[dType.Lo]) {
		c.FieldErr(DetailLayout, "AccountType", fixed.Invalid, "預金種目 must be 1, 2, 4 or 9")
	}
	if st := Status(b[dStatus.Lo]); st != Open && st != Closed {
		c.FieldErr(DetailLayout, "Status", fixed.Invalid, "口座状態 must be O or C")
	}
	key := keyBytes(b)
	if s.havePrev && bytes.Compare(key, s.prevKey[:]) <= 0 {
		c.FieldErr(DetailLayout, "AccountNumber", fixed.Invalid,
			"account not after the previous detail's: details ascend by 店番, 預金種目, 口座番号 with no account twice")
	}
	copy(s.prevKey[:], key)
	s.havePrev = true
	s.sum.HashTotal = (s.sum.HashTotal + hashOf(dBranch.Of(b), dNumber.Of(b))) % HashMod
	s.sum.BalanceTotal += num(dBalance.Of(b))
}

func (s *body) Trailer(c *fixedfile.Checker, b []byte) {
	if !c.Fields(TrailerLayout) || c.Incomplete {
		return
	}
	l := TrailerLayout
	c.Total(l, "Count", tCount.Of(b), s.sum.Count, maxCount, "number of details")
	c.Total(l, "BalanceTotal", tTotal.Of(b), s.sum.BalanceTotal, maxTotal, "sum of balances")
	c.Total(l, "HashTotal", tHash.Of(b), s.sum.HashTotal, maxHash, "hash total of 店番+口座番号")
}

// Reader streams a core balance file, handing over only valid records.
// A consumer that acts on details as they come (a merge) must still treat
// the file as unproven until the trailer has been read without error.
type Reader struct {
	rd   *fixedfile.Reader[Record]
	ck   *fixedfile.Checker
	body *body
}

// NewReader reads a core balance file from r.
func NewReader(r io.Reader) *Reader {
	ck, b := newChecker()
	return &Reader{rd: fixedfile.NewReader(r, ck, DefaultMaxErrors, decode), ck: ck, body: b}
}

func decode(typ byte, b []byte) Record {
	switch typ {
	case 'H':
		return decodeHeader(b)
	case 'D':
		return decodeDetail(b)
	default:
		return decodeTrailer(b)
	}
}

// Next returns the next valid record, a *fixed.ErrorList for a broken one,
// or io.EOF at the end.
func (z *Reader) Next() (Record, error) { return z.rd.Next() }

// Records iterates over the file.
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
	w.sum.HashTotal = (w.sum.HashTotal + hashOf(dBranch.Of(w.buf), dNumber.Of(w.buf))) % HashMod
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

// The writer's place in the file.
type state uint8

const (
	stStart state = iota
	stDetails
	stDone
)
