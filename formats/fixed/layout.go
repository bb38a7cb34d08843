package fixed

import (
	"errors"
	"fmt"
	"reflect"
	"sort"

	"github.com/zcgw/zcgw/formats/charset"
)

// Field describes one field of a layout.
type Field struct {
	// Name identifies the field (a Go field name for struct layouts).
	Name string
	// Label is the field's meaning, e.g. "振込金額", used in errors and docs.
	Label string
	// Start is the 1-based position of the first byte; Len the byte length.
	Start, Len int
	// Type is the storage type.
	Type Type
	// Const, when set, is a literal the field must hold (unpadded: text is
	// left-justified, 9 is zero-padded to Len). Only X, K and 9.
	Const string

	constBytes []byte
}

// End is the 1-based position of the field's last byte.
func (f Field) End() int { return f.Start + f.Len - 1 }

// Bytes returns the field's slice of a record (nil when the record is too
// short).
func (f Field) Bytes(rec []byte) []byte {
	if f.Start < 1 || f.End() > len(rec) {
		return nil
	}
	return rec[f.Start-1 : f.End()]
}

// Picture is the COBOL-like picture, e.g. "X(15)", "9(10)", "S9(13)",
// "P(7)" (bytes), "K(30)", "FILLER(7)".
func (f Field) Picture() string { return fmt.Sprintf("%s(%d)", f.Type, f.Len) }

// Text renders the field of a canonical record for people: text trimmed
// and converted to UTF-8, numbers in decimal, packed as digits with sign.
// Bytes that are not valid for the type are shown as hex with a "!" mark.
func (f Field) Text(rec []byte) string {
	b := f.Bytes(rec)
	if b == nil {
		return "!short"
	}
	if r, _ := Check(f.Type, b); r != 0 {
		if f.Type == P {
			return fmt.Sprintf("!0x% X", b)
		}
		if s, err := charset.CanonicalString(b); err == nil {
			return "!" + s
		}
		return fmt.Sprintf("!0x% X", b)
	}
	switch f.Type {
	case N:
		return string(b)
	case S:
		v, _ := ParseOverpunch(b)
		return fmt.Sprint(v)
	case P:
		v, _ := ParsePacked(b)
		return fmt.Sprint(v)
	default:
		s, _ := charset.CanonicalString(TrimText(b))
		return s
	}
}

// Layout is a checked, immutable record layout. Use NewLayout, MustLayout
// or LayoutOf.
type Layout struct {
	name   string
	length int
	fields []Field
	byName map[string]int
	packed []charset.Span

	// struct binding (LayoutOf only)
	goType reflect.Type
	bind   []binding
}

// NewLayout checks and builds a layout: every field has a name (fillers may
// be unnamed), a known type, Start >= 1 and Len >= 1 within the numeric
// limits (9 <= 20 bytes, S9 <= 19, P <= 10); fields neither overlap nor
// leave gaps; they cover exactly length bytes; names are unique; Const
// values are valid for their field.
func NewLayout(name string, length int, fields ...Field) (*Layout, error) {
	if length < 1 {
		return nil, fmt.Errorf("fixed: layout %s: length %d < 1", name, length)
	}
	if len(fields) == 0 {
		return nil, fmt.Errorf("fixed: layout %s: no fields", name)
	}
	l := &Layout{name: name, length: length, byName: make(map[string]int, len(fields))}
	l.fields = make([]Field, len(fields))
	copy(l.fields, fields)
	sort.SliceStable(l.fields, func(i, j int) bool { return l.fields[i].Start < l.fields[j].Start })
	next := 1
	for i := range l.fields {
		f := &l.fields[i]
		if f.Name == "" {
			if f.Type != Filler {
				return nil, fmt.Errorf("fixed: layout %s: field at %d has no name", name, f.Start)
			}
			f.Name = fmt.Sprintf("FILLER@%d", f.Start)
		}
		if _, dup := l.byName[f.Name]; dup {
			return nil, fmt.Errorf("fixed: layout %s: duplicate field name %s", name, f.Name)
		}
		l.byName[f.Name] = i
		if f.Type < X || f.Type > Filler {
			return nil, fmt.Errorf("fixed: layout %s: field %s: unknown type %v", name, f.Name, f.Type)
		}
		if f.Start < 1 || f.Len < 1 {
			return nil, fmt.Errorf("fixed: layout %s: field %s: start %d len %d", name, f.Name, f.Start, f.Len)
		}
		if max := maxLen(f.Type); max > 0 && f.Len > max {
			return nil, fmt.Errorf("fixed: layout %s: field %s: %v field of %d bytes exceeds %d", name, f.Name, f.Type, f.Len, max)
		}
		switch {
		case f.Start < next:
			return nil, fmt.Errorf("fixed: layout %s: field %s (%d-%d) overlaps %s (ends at %d)", name, f.Name, f.Start, f.End(), l.fields[i-1].Name, next-1)
		case f.Start > next:
			return nil, fmt.Errorf("fixed: layout %s: gap at %d-%d before field %s", name, next, f.Start-1, f.Name)
		}
		next = f.End() + 1
		if f.Const != "" {
			cb, err := constBytes(*f)
			if err != nil {
				return nil, fmt.Errorf("fixed: layout %s: field %s: %w", name, f.Name, err)
			}
			f.constBytes = cb
		}
		if f.Type == P {
			l.packed = append(l.packed, charset.Span{Off: f.Start - 1, Len: f.Len})
		}
	}
	if next-1 != length {
		return nil, fmt.Errorf("fixed: layout %s: fields cover %d bytes, layout length is %d", name, next-1, length)
	}
	return l, nil
}

// MustLayout is NewLayout that panics on a bad declaration (for package
// level variables; a bad layout is a programming error).
func MustLayout(name string, length int, fields ...Field) *Layout {
	l, err := NewLayout(name, length, fields...)
	if err != nil {
		panic(err)
	}
	return l
}

func maxLen(t Type) int {
	switch t {
	case N:
		return 20
	case S:
		return 19
	case P:
		return 10
	}
	return 0
}

func constBytes(f Field) ([]byte, error) {
	b := make([]byte, f.Len)
	switch f.Type {
	case X, K:
		c, err := charset.AppendCanonical(nil, f.Const)
		if err != nil {
			return nil, fmt.Errorf("const %q: %w", f.Const, err)
		}
		if !PutText(b, c) {
			return nil, fmt.Errorf("const %q longer than %d", f.Const, f.Len)
		}
	case N:
		if len(f.Const) > f.Len || FirstNonDigit([]byte(f.Const)) >= 0 {
			return nil, fmt.Errorf("const %q is not %d digits at most", f.Const, f.Len)
		}
		for i := range b {
			b[i] = '0'
		}
		copy(b[f.Len-len(f.Const):], f.Const)
	default:
		return nil, fmt.Errorf("const not supported for %v fields", f.Type)
	}
	if r, i := Check(f.Type, b); r != 0 {
		return nil, fmt.Errorf("const %q: %v at %d", f.Const, r, i)
	}
	return b, nil
}

// Name is the layout's name, used as RecordType in errors.
func (l *Layout) Name() string { return l.name }

// Length is the record length in bytes.
func (l *Layout) Length() int { return l.length }

// Fields returns the fields in record order (a copy).
func (l *Layout) Fields() []Field {
	out := make([]Field, len(l.fields))
	copy(out, l.fields)
	return out
}

// Field finds a field by name.
func (l *Layout) Field(name string) (Field, bool) {
	i, ok := l.byName[name]
	if !ok {
		return Field{}, false
	}
	return l.fields[i], true
}

// PackedSpans are the byte ranges of P fields, to skip when transcoding.
func (l *Layout) PackedSpans() []charset.Span { return l.packed }

// String is "name (length bytes, n fields)".
func (l *Layout) String() string {
	return fmt.Sprintf("%s (%d bytes, %d fields)", l.name, l.length, len(l.fields))
}

// fieldAt returns the field containing 0-based offset off.
func (l *Layout) fieldAt(off int) *Field {
	i := sort.Search(len(l.fields), func(i int) bool { return l.fields[i].End() > off })
	if i < len(l.fields) {
		return &l.fields[i]
	}
	return nil
}

// FieldError builds the Error for field f of record rec (canonical or
// original bytes) with the offending byte at index idx within the field.
func (l *Layout) FieldError(f Field, rec []byte, at Pos, reason Reason, idx int, err error) *Error {
	if idx < 0 {
		idx = 0
	}
	e := &Error{
		Record:     at.Record,
		RecordType: l.name,
		Field:      f.Name,
		Label:      f.Label,
		Offset:     at.Offset + int64(f.Start-1+idx),
		Column:     f.Start + idx,
		Reason:     reason,
		Err:        err,
	}
	if b := f.Bytes(rec); b != nil {
		e.Bytes = append([]byte(nil), b...)
	}
	return e
}

// CheckLength returns a ShortRecord or LongRecord error when len(rec) is
// not the layout length. For a short record Column/Offset point just past
// the last byte present; for a long one at the first extra byte, and Bytes
// holds the extra bytes (up to 32).
func (l *Layout) CheckLength(rec []byte, at Pos) *Error {
	switch {
	case len(rec) < l.length:
		return &Error{Record: at.Record, RecordType: l.name, Offset: at.Offset + int64(len(rec)), Column: len(rec) + 1,
			Reason: ShortRecord, Err: fmt.Errorf("%d bytes, want %d", len(rec), l.length)}
	case len(rec) > l.length:
		extra := rec[l.length:]
		if len(extra) > 32 {
			extra = extra[:32]
		}
		return &Error{Record: at.Record, RecordType: l.name, Offset: at.Offset + int64(l.length), Column: l.length + 1,
			Bytes: append([]byte(nil), extra...), Reason: LongRecord, Err: fmt.Errorf("%d bytes, want %d", len(rec), l.length)}
	}
	return nil
}

// Validate checks a canonical record: its length, every field's type and
// every constant. Each problem is added to errs (which may be nil to only
// get the answer); it returns true when the record is valid. A valid record
// costs no allocation.
func (l *Layout) Validate(rec []byte, at Pos, errs *ErrorList) bool {
	if e := l.CheckLength(rec, at); e != nil {
		if errs != nil {
			errs.Add(e)
		}
		return false
	}
	ok := true
	for i := range l.fields {
		f := &l.fields[i]
		b := rec[f.Start-1 : f.Start-1+f.Len]
		if r, idx := Check(f.Type, b); r != 0 {
			ok = false
			if errs != nil {
				errs.Add(l.FieldError(*f, rec, at, r, idx, nil))
			}
			continue
		}
		if f.constBytes != nil && string(b) != string(f.constBytes) {
			ok = false
			if errs != nil {
				errs.Add(l.FieldError(*f, rec, at, ConstMismatch, firstDiff(b, f.constBytes),
					fmt.Errorf("want %q", f.constBytes)))
			}
		}
	}
	return ok
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return 0
}

// ToCanonical transcodes a record from cs into dst (len(dst) >= len(rec);
// dst may be rec), skipping packed fields. A nil cs means rec is already
// canonical (copied). An unmappable byte gives an *Error (BadChar) naming
// the field, column and original bytes.
func (l *Layout) ToCanonical(dst, rec []byte, cs *charset.Charset, at Pos) error {
	if len(dst) < len(rec) {
		return charset.ErrShortBuffer
	}
	if cs == nil {
		copy(dst, rec)
		return nil
	}
	orig := rec
	err := cs.ToCanonical(dst, rec, l.packed)
	return l.charsetError(err, orig, at, cs.Name())
}

// FromCanonical transcodes a canonical record into cs (nil cs: copy),
// skipping packed fields.
func (l *Layout) FromCanonical(dst, rec []byte, cs *charset.Charset, at Pos) error {
	if len(dst) < len(rec) {
		return charset.ErrShortBuffer
	}
	if cs == nil {
		copy(dst, rec)
		return nil
	}
	return l.charsetError(cs.FromCanonical(dst, rec, l.packed), rec, at, "")
}

// charsetError locates a *charset.ByteError in its field; recCharset names
// the charset of rec ("" when rec is canonical).
func (l *Layout) charsetError(err error, rec []byte, at Pos, recCharset string) error {
	if err == nil {
		return nil
	}
	var be *charset.ByteError
	if !errors.As(err, &be) {
		return err
	}
	// Report the byte's absolute offset, like the Error around it.
	abs := *be
	abs.Offset = int(at.Offset) + be.Offset
	f := l.fieldAt(be.Offset)
	if f == nil {
		return &Error{Record: at.Record, RecordType: l.name, Offset: at.Offset + int64(be.Offset), Column: be.Offset + 1,
			Bytes: []byte{be.Byte}, Charset: recCharset, Reason: BadChar, Err: &abs}
	}
	e := l.FieldError(*f, rec, at, BadChar, be.Offset-(f.Start-1), &abs)
	e.Charset = recCharset
	return e
}
