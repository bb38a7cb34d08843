package zengin

import (
	"fmt"

	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/recordio"
)

// ParseRecord decodes and validates one 120-byte record on its own (JIS,
// or EBCDIC when its first byte is an EBCDIC digit), as the data of a
// group of the given kind: every field, character and value is checked;
// what needs the file (record order, trailer totals) is not. It returns a
// *fixed.ErrorList naming every bad field.
func ParseRecord(kind Kind, b []byte) (Record, error) {
	if len(b) != RecordLen {
		reason := fixed.ShortRecord
		if len(b) > RecordLen {
			reason = fixed.LongRecord
		}
		return nil, &fixed.Error{RecordType: "zengin", Offset: int64(min(len(b), RecordLen)), Column: min(len(b), RecordLen) + 1,
			Bytes: recordio.Clip(b[min(len(b), RecordLen):]), Reason: reason,
			Err: &recordio.LineError{Msg: fmt.Sprintf("%d bytes, want %d", len(b), RecordLen)}}
	}
	errs := fixed.NewErrorList(DefaultMaxErrors)
	c := newChecker(func(e *fixed.Error) { errs.Add(e) }, NamesStrict)
	enc := JIS
	if b[0] >= ebcdic0 && b[0] <= ebcdic0+9 {
		enc = EBCDIC
	}
	// Put the checker in the state the record expects, with nothing to
	// compare totals against (Incomplete).
	switch b[0] {
	case byte(TypeData), ebcdic0 + 2, byte(TypeTrailer), ebcdic0 + 8:
		c.st, c.gEnc = stGroup, enc
		c.g.Header.Kind = kind
		c.g.Incomplete = true
	case byte(TypeEnd), ebcdic0 + 9:
		c.st = stTrailer
	}
	canon, k, typ, ok := c.check(recordio.Record{Bytes: b, Num: 0, Line: 0})
	if !ok {
		return nil, errs
	}
	switch typ {
	case TypeHeader:
		return decodeHeader(canon), nil
	case TypeData:
		return decodeData(k, canon), nil
	case TypeTrailer:
		return decodeTrailer(k, canon), nil
	}
	return &End{}, nil
}

// Validate checks that the record can be written: every value fits its
// field and every character is allowed.
func (h *Header) Validate() error { return validate(h) }

// Validate checks that the record can be written.
func (d *TransferData) Validate() error { return validate(d) }

// Validate checks that the record can be written.
func (d *PayrollData) Validate() error { return validate(d) }

// Validate checks that the record can be written.
func (d *DebitData) Validate() error { return validate(d) }

// Validate checks that the record can be written.
func (t *Trailer) Validate() error { return validate(t) }

// Validate checks that the record can be written.
func (t *DebitTrailer) Validate() error { return validate(t) }

func validate(r Record) error {
	var buf [RecordLen]byte
	_, err := r.AppendRecord(buf[:0])
	return err
}
