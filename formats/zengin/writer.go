package zengin

import (
	"bufio"
	"fmt"
	"io"

	"github.com/zcgw/zcgw/formats/charset"
	"github.com/zcgw/zcgw/formats/fixed"
)

// Writer writes a Zengin file in the canonical form: 120-byte records each
// followed by CR LF, every group's trailer computed from its data records,
// the group's コード区分 deciding JIS or EBCDIC bytes. It refuses records
// out of order, data of the wrong kind, values that do not fit and
// characters outside the Zengin set; after the first error every call
// returns that error.
type Writer struct {
	bw  *bufio.Writer
	buf []byte
	err error
	st  state
	num int

	kind                             Kind
	enc                              Encoding
	count, total                     int64
	done, doneAmt, failed, failedAmt int64
	// ResultFile makes WriteTrailer write 口座振替 trailers with the
	// 振替済/振替不能 figures (a result file). Otherwise they are zero (a
	// request), and every 振替結果コード must be 0.
	ResultFile bool
	// Names is the counterpart bank's name character set (default
	// NamesStrict: ｰ is refused).
	Names NameChars
	// FoldSmallKana writes small kana full size (ｷｭｳﾖ -> ｷﾕｳﾖ, ァ -> ｱ,
	// ヵ -> ｶ), as banks do when they convert names, instead of refusing
	// them (the default).
	FoldSmallKana bool
}

// NewWriter writes to w; call Flush at the end.
func NewWriter(w io.Writer) *Writer {
	return &Writer{bw: bufio.NewWriterSize(w, 256<<10), buf: make([]byte, 0, RecordLen+2)}
}

func (w *Writer) fail(format string, args ...any) error {
	w.err = fmt.Errorf("zengin: record %d: "+format, append([]any{w.num + 1}, args...)...)
	return w.err
}

// emit encodes one record in the group's encoding, with CR LF.
func (w *Writer) emit(rec Record) error {
	b, err := rec.appendWith(w.buf[:0], encodeOptions{names: w.Names, fold: w.FoldSmallKana})
	if err != nil {
		if fe, ok := err.(*fixed.Error); ok {
			fe.Record = w.num + 1
		}
		w.err = fmt.Errorf("zengin: writing %s: %w", rec.RecordType(), err)
		return w.err
	}
	if w.enc == EBCDIC {
		if err := charset.EBCDIC290.FromCanonical(b, b, nil); err != nil {
			w.err = fmt.Errorf("zengin: record %d: %w", w.num+1, err)
			return w.err
		}
	}
	b = append(b, '\r', '\n')
	w.buf = b
	if _, err := w.bw.Write(b); err != nil {
		w.err = err
		return err
	}
	w.num++
	return nil
}

// WriteHeader starts a group.
func (w *Writer) WriteHeader(h *Header) error {
	if w.err != nil {
		return w.err
	}
	if w.st == stGroup {
		return w.fail("header while the previous group has no trailer")
	}
	w.enc = h.Encoding
	if err := w.emit(h); err != nil {
		return err
	}
	w.st, w.kind = stGroup, h.Kind
	w.count, w.total, w.done, w.doneAmt, w.failed, w.failedAmt = 0, 0, 0, 0, 0, 0
	return nil
}

// WriteData writes a data record of the group's kind.
func (w *Writer) WriteData(d DataRecord) error {
	if w.err != nil {
		return w.err
	}
	if w.st != stGroup {
		return w.fail("data record outside a header…trailer group")
	}
	ok := false
	switch d.(type) {
	case *TransferData:
		ok = w.kind == KindTransfer
	case *PayrollData:
		ok = w.kind.Payroll()
	case *DebitData:
		ok = w.kind == KindDebit
	}
	if !ok {
		return w.fail("%T in a group of 種別コード %s", d, w.kind)
	}
	if w.count >= maxCount {
		return w.fail("more than %d data records in one group", maxCount)
	}
	if dd, isDebit := d.(*DebitData); isDebit {
		if dd.Result == ResultDone {
			w.done++
			w.doneAmt += dd.Amount
		} else {
			w.failed++
			w.failedAmt += dd.Amount
		}
	}
	if err := w.emit(d); err != nil {
		return err
	}
	w.count++
	w.total += d.Yen()
	if w.total > maxTotal {
		return w.fail("合計金額 %d does not fit 12 digits", w.total)
	}
	return nil
}

// WriteTrailer writes the group's trailer, computed from its data.
func (w *Writer) WriteTrailer() error {
	if w.err != nil {
		return w.err
	}
	if w.st != stGroup {
		return w.fail("trailer without a header")
	}
	var t Record = &Trailer{Count: w.count, Total: w.total}
	if w.kind == KindDebit {
		dt := &DebitTrailer{Count: w.count, Total: w.total}
		if !w.ResultFile && w.failed > 0 {
			return w.fail("%d data record(s) with a non-zero 振替結果コード in a request (set ResultFile to write a result file)", w.failed)
		}
		if w.ResultFile {
			dt.DoneCount, dt.DoneAmount, dt.FailedCount, dt.FailedAmount = w.done, w.doneAmt, w.failed, w.failedAmt
		}
		t = dt
	}
	if err := w.emit(t); err != nil {
		return err
	}
	w.st = stTrailer
	return nil
}

// WriteEnd writes the end record after a trailer.
func (w *Writer) WriteEnd() error {
	if w.err != nil {
		return w.err
	}
	if w.st != stTrailer {
		return w.fail("end record without a trailer")
	}
	if err := w.emit(&End{}); err != nil {
		return err
	}
	w.st = stStart
	return nil
}

// Write writes any record: a header, a data record, a trailer (which must
// equal the computed one; the computed one is written) or an end record.
// It lets a file read with a Reader be copied in canonical form.
func (w *Writer) Write(rec Record) error {
	if w.err != nil {
		return w.err
	}
	switch r := rec.(type) {
	case *Header:
		return w.WriteHeader(r)
	case DataRecord:
		return w.WriteData(r)
	case *Trailer:
		if w.kind == KindDebit || r.Count != w.count || r.Total != w.total {
			return w.fail("trailer %+v differs from the computed one (件数 %d, 金額 %d)", *r, w.count, w.total)
		}
		return w.WriteTrailer()
	case *DebitTrailer:
		result := r.DoneCount|r.DoneAmount|r.FailedCount|r.FailedAmount != 0
		want := DebitTrailer{Count: w.count, Total: w.total}
		if result {
			want.DoneCount, want.DoneAmount, want.FailedCount, want.FailedAmount = w.done, w.doneAmt, w.failed, w.failedAmt
		}
		if w.kind != KindDebit || *r != want {
			return w.fail("trailer %+v differs from the computed one %+v", *r, want)
		}
		saved := w.ResultFile
		w.ResultFile = result
		err := w.WriteTrailer()
		w.ResultFile = saved
		return err
	case *End:
		return w.WriteEnd()
	}
	return w.fail("unknown record %T", rec)
}

// Flush writes buffered data; it reports an error when the last group is
// not closed by a trailer and an end record.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		return err
	}
	if w.st != stStart {
		return w.fail("file not finished: missing trailer or end record")
	}
	return nil
}
