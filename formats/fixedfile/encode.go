package fixedfile

import (
	"bytes"
	"fmt"

	"github.com/zcgw/zcgw/formats/fixed"
)

// Encoder fills one record of a layout; the first field that cannot be
// encoded is kept in Err as a *fixed.Error naming it.
type Encoder struct {
	L   *fixed.Layout
	B   []byte // the record's bytes (inside the slice Encode returned)
	Err error
}

// NewEncoder appends a blank record of l to dst with its constants set.
func NewEncoder(l *fixed.Layout, dst []byte) (*Encoder, []byte) {
	start := len(dst)
	dst = append(dst, bytes.Repeat([]byte{' '}, l.Length())...)
	e := &Encoder{L: l, B: dst[start:]}
	for _, f := range l.Fields() {
		if f.Const != "" {
			copy(f.Bytes(e.B), f.Const)
		}
	}
	return e, dst
}

// Fail records why field name cannot be encoded (the first reason wins).
func (e *Encoder) Fail(name, msg string) {
	if e.Err == nil {
		f, _ := e.L.Field(name)
		e.Err = e.L.FieldError(f, e.B, fixed.Pos{}, fixed.Invalid, 0, fmt.Errorf("%s", msg))
	}
}

// Field is field name's bytes in the record.
func (e *Encoder) Field(name string) []byte {
	f, _ := e.L.Field(name)
	return f.Bytes(e.B)
}

// Num writes v zero-padded.
func (e *Encoder) Num(name string, v int64) {
	f, _ := e.L.Field(name)
	if v < 0 || !fixed.PutDigits(f.Bytes(e.B), uint64(v)) {
		e.Fail(name, fmt.Sprintf("%d does not fit %s", v, f.Picture()))
	}
}

// Digits writes s, which must be exactly the field's width of digits.
func (e *Encoder) Digits(name, s string) {
	dst := e.Field(name)
	if len(s) != len(dst) || fixed.FirstNonDigit([]byte(s)) >= 0 {
		e.Fail(name, fmt.Sprintf("%q is not %d digits", s, len(dst)))
		return
	}
	copy(dst, s)
}

// PadDigits writes s, 1 to the field's width of digits, zero-padded.
func (e *Encoder) PadDigits(name, s string) {
	dst := e.Field(name)
	if len(s) == 0 || len(s) > len(dst) || fixed.FirstNonDigit([]byte(s)) >= 0 {
		e.Fail(name, fmt.Sprintf("%q is not 1 to %d digits", s, len(dst)))
		return
	}
	for i := range dst {
		dst[i] = '0'
	}
	copy(dst[len(dst)-len(s):], s)
}

// Date writes d as YYYYMMDD; the zero Date is 00000000 when zeroOK.
func (e *Encoder) Date(name string, d Date, zeroOK bool) {
	if !(zeroOK && d.IsZero()) && !d.Valid() {
		e.Fail(name, "invalid date "+d.String())
	}
	e.Num(name, d.Digits())
}

// Stamp writes a YYYYMMDDhhmmss time.
func (e *Encoder) Stamp(name, s string) {
	if !ValidStamp([]byte(s)) {
		e.Fail(name, fmt.Sprintf("%q is not YYYYMMDDhhmmss", s))
		return
	}
	e.Digits(name, s)
}

// AccountType writes a 預金種目 (1, 2, 4 or 9).
func (e *Encoder) AccountType(name string, t uint8) {
	if t != 1 && t != 2 && t != 4 && t != 9 {
		e.Fail(name, fmt.Sprintf("預金種目 %d is not 1, 2, 4 or 9", t))
	}
	e.Num(name, int64(t))
}
