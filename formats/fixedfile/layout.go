package fixedfile

import (
	"fmt"

	"github.com/zcgw/zcgw/formats/fixed"
)

// Format names one file format and its record length; it builds the
// format's layouts and remembers their titles (for generated docs).
type Format struct {
	// Name is the RecordType of the format's record-level errors.
	Name      string
	RecordLen int
	titles    map[*fixed.Layout]string
}

// NewFormat starts a format of records of recordLen bytes.
func NewFormat(name string, recordLen int) *Format {
	return &Format{Name: name, RecordLen: recordLen, titles: map[*fixed.Layout]string{}}
}

// X is a text field (1-based start).
func X(name, label string, start, length int) fixed.Field {
	return fixed.Field{Name: name, Label: label, Start: start, Len: length, Type: fixed.X}
}

// N is a digits field (1-based start).
func N(name, label string, start, length int) fixed.Field {
	return fixed.Field{Name: name, Label: label, Start: start, Len: length, Type: fixed.N}
}

// RecordType is the record's first byte, constant value.
func RecordType(label, value string) fixed.Field {
	return fixed.Field{Name: "RecordType", Label: label, Start: 1, Len: 1, Type: fixed.X, Const: value}
}

// Filler is the blank rest of the record from start.
func (f *Format) Filler(start int) fixed.Field {
	return fixed.Field{Name: "Filler", Label: "空白", Start: start, Len: f.RecordLen - start + 1, Type: fixed.Filler}
}

// Layout builds (or panics on) a layout of the format with its title.
func (f *Format) Layout(name, title string, fields ...fixed.Field) *fixed.Layout {
	l := fixed.MustLayout(name, f.RecordLen, fields...)
	f.titles[l] = title
	return l
}

// Title is the one-line description of one of the format's layouts.
func (f *Format) Title(l *fixed.Layout) string { return f.titles[l] }

// Ref is a field's byte range in a record, for decoding validated bytes.
type Ref struct{ Lo, Hi int }

// RefOf is the range of field name of l; it panics on an unknown name
// (layouts are package variables: a wrong name fails at init).
func RefOf(l *fixed.Layout, name string) Ref {
	f, ok := l.Field(name)
	if !ok {
		panic(fmt.Sprintf("fixedfile: no field %s in %s", name, l.Name()))
	}
	return Ref{f.Start - 1, f.End()}
}

// Of is the field's bytes in record b.
func (r Ref) Of(b []byte) []byte { return b[r.Lo:r.Hi] }

// Num is the value of validated digits.
func Num(b []byte) int64 { v, _ := fixed.ParseDigits(b); return int64(v) }

// Date is a calendar date (YYYYMMDD in the file).
type Date struct{ Year, Month, Day int }

// IsZero reports whether d is the zero Date (00000000).
func (d Date) IsZero() bool { return d == Date{} }

// Valid reports whether d is a real calendar date with a 4-digit year.
func (d Date) Valid() bool {
	if d.Year < 1 || d.Year > 9999 || d.Month < 1 || d.Month > 12 || d.Day < 1 {
		return false
	}
	days := [13]int{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[d.Month]
	if d.Month == 2 && d.Year%4 == 0 && (d.Year%100 != 0 || d.Year%400 == 0) {
		days = 29
	}
	return d.Day <= days
}

func (d Date) String() string { return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day) }

// Digits is d as the number YYYYMMDD.
func (d Date) Digits() int64 { return int64(d.Year*10000 + d.Month*100 + d.Day) }

// DateOf reads the number YYYYMMDD (not checked: see Valid).
func DateOf(v int64) Date { return Date{int(v / 10000), int(v / 100 % 100), int(v % 100)} }

// ValidStamp checks YYYYMMDDhhmmss.
func ValidStamp(b []byte) bool {
	if len(b) != 14 || fixed.FirstNonDigit(b) >= 0 {
		return false
	}
	if !DateOf(Num(b[:8])).Valid() {
		return false
	}
	h, m, s := Num(b[8:10]), Num(b[10:12]), Num(b[12:14])
	return h < 24 && m < 60 && s < 60
}

// HashMod is the modulus of the hash total.
const HashMod = 1_000_000_000_000_000

// HashOf is the hash contribution of an account: 店番 and 口座番号 read as
// one 10-digit number.
func HashOf(branch, account []byte) int64 {
	b, _ := fixed.ParseDigits(branch)
	a, _ := fixed.ParseDigits(account)
	return int64(b)*10_000_000 + int64(a)
}

// ValidAccountType reports whether c is a 預金種目 digit: 1, 2, 4 or 9.
func ValidAccountType(c byte) bool { return c == '1' || c == '2' || c == '4' || c == '9' }
