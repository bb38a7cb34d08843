package zengin

import (
	"io"
	"iter"

	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/recordio"
)

// DefaultMaxErrors is how many errors Validate keeps (the rest are
// counted in ErrorList.Dropped).
const DefaultMaxErrors = 100

// isRecordStart reports whether c can be the first byte of a record (a
// データ区分 in JIS or EBCDIC); used to locate stray bytes.
func isRecordStart(c byte) bool {
	switch c {
	case '1', '2', '8', '9', 0xF1, 0xF2, 0xF8, 0xF9:
		return true
	}
	return false
}

// Reader streams the records of a Zengin file with constant memory. Each
// record is fully validated (fields, order, encodings, trailer totals)
// before it is handed over; a record with an error is not handed over:
// Next returns the error instead and reading continues with the next
// record. To apply a file all or nothing, Validate it first.
type Reader struct {
	st recordio.Stream[Record]
	ck *checker
}

// NewReader reads a Zengin file from r with the default Options (strict
// names).
func NewReader(r io.Reader) *Reader { return NewReaderOptions(r, Options{}) }

// NewReaderOptions reads a Zengin file from r with a bank's Options.
func NewReaderOptions(r io.Reader, o Options) *Reader {
	z := &Reader{}
	z.st.MaxErrors = DefaultMaxErrors
	if o.MaxErrors > 0 {
		z.st.MaxErrors = o.MaxErrors
	}
	z.ck = newChecker(z.st.Add, o.Names)
	z.st.Scanner = recordio.NewScanner(r, RecordLen, isRecordStart, func(e *fixed.Error) { z.ck.lost(e); z.st.Add(e) })
	z.st.Scanner.RecordType = "zengin"
	z.st.Decode = z.decode
	z.st.Finish = func() { z.ck.finish(z.st.Scanner.Offset(), z.st.Scanner.Line()) }
	return z
}

func (z *Reader) decode(rec recordio.Record) (Record, bool) {
	b, kind, typ, valid := z.ck.check(rec)
	if !valid {
		return nil, false
	}
	switch typ {
	case TypeHeader:
		return decodeHeader(b), true
	case TypeData:
		return decodeData(kind, b), true
	case TypeTrailer:
		return decodeTrailer(kind, b), true
	default:
		return &End{}, true
	}
}

// Next returns the next valid record. It returns (nil, *fixed.ErrorList)
// for a record (or a gap between records) with errors, and (nil, io.EOF)
// at the end of the file, after any error found at the end (a missing end
// record). An I/O error is returned as is and ends reading.
func (z *Reader) Next() (Record, error) { return z.st.Next() }

// Records iterates over the file: each step yields a valid record with a
// nil error, or a nil record with the errors of a broken record (a
// *fixed.ErrorList) or an I/O error. Breaking out of the loop stops
// reading.
func (z *Reader) Records() iter.Seq2[Record, error] { return z.st.All() }

// Summary describes what has been read so far (the whole file once Next
// has returned io.EOF).
func (z *Reader) Summary() Summary {
	s := z.ck.sum
	s.Separator = z.st.Scanner.Separator()
	s.Bytes = z.st.Scanner.Offset()
	return s
}

// Validate reads the whole file and checks everything a Reader checks,
// without handing over any record. It returns the file's Summary and, when
// anything is wrong, a *fixed.ErrorList with every error (up to
// DefaultMaxErrors kept, the rest counted) in file order; or an I/O
// error. Memory does not grow with the file size.
func Validate(r io.Reader) (Summary, error) {
	return ValidateMax(r, DefaultMaxErrors)
}

// ValidateMax is Validate keeping up to maxErrors errors.
func ValidateMax(r io.Reader, maxErrors int) (Summary, error) {
	return ValidateOptions(r, Options{MaxErrors: maxErrors})
}

// ValidateOptions is Validate with a bank's Options (name character set,
// error cap).
func ValidateOptions(r io.Reader, o Options) (Summary, error) {
	if o.MaxErrors <= 0 {
		o.MaxErrors = DefaultMaxErrors
	}
	errs := fixed.NewErrorList(o.MaxErrors)
	ck := newChecker(func(e *fixed.Error) { errs.Add(e) }, o.Names)
	sc := recordio.NewScanner(r, RecordLen, isRecordStart, func(e *fixed.Error) { ck.lost(e); errs.Add(e) })
	sc.RecordType = "zengin"
	if err := recordio.Drain(sc, func(rec recordio.Record) { ck.check(rec) },
		func() { ck.finish(sc.Offset(), sc.Line()) }); err != nil {
		return ck.sum, err
	}
	sum := ck.sum
	sum.Separator = sc.Separator()
	return sum, errs.Err()
}
