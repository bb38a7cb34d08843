package fixed

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/zcgw/zcgw/formats/charset"
)

// LayoutNamer can be implemented by a struct type to name its layout.
type LayoutNamer interface{ LayoutName() string }

// RecordLengther can be implemented by a struct type to declare its total
// length, which LayoutOf then checks.
type RecordLengther interface{ RecordLength() int }

type kind uint8

const (
	kString kind = iota + 1
	kInt
	kUint
	kNone // filler
)

type binding struct {
	index int
	kind  kind
	bits  int
}

type cached struct {
	l   *Layout
	err error
}

var layoutCache sync.Map // reflect.Type -> cached

// LayoutOf returns the layout declared by the struct tags of v (a struct or
// pointer to struct). Layouts are built once per type and cached.
func LayoutOf(v any) (*Layout, error) {
	t := reflect.TypeOf(v)
	if t == nil {
		return nil, errors.New("fixed: LayoutOf(nil)")
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return layoutOfType(t)
}

// MustLayoutOf is LayoutOf that panics on a bad declaration.
func MustLayoutOf(v any) *Layout {
	l, err := LayoutOf(v)
	if err != nil {
		panic(err)
	}
	return l
}

func layoutOfType(t reflect.Type) (*Layout, error) {
	if c, ok := layoutCache.Load(t); ok {
		c := c.(cached)
		return c.l, c.err
	}
	l, err := buildLayout(t)
	layoutCache.Store(t, cached{l, err})
	return l, err
}

func buildLayout(t reflect.Type) (*Layout, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("fixed: %v is not a struct", t)
	}
	name := t.Name()
	zero := reflect.New(t)
	if n, ok := zero.Elem().Interface().(LayoutNamer); ok {
		name = n.LayoutName()
	} else if n, ok := zero.Interface().(LayoutNamer); ok {
		name = n.LayoutName()
	}
	var fields []Field
	var binds []binding
	end := 0
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("fixed")
		if tag == "-" {
			continue
		}
		if !ok {
			return nil, fmt.Errorf("fixed: %v.%s has no fixed tag (use `fixed:\"-\"` to skip it)", t, sf.Name)
		}
		f, err := parseTag(tag)
		if err != nil {
			return nil, fmt.Errorf("fixed: %v.%s: %w", t, sf.Name, err)
		}
		if f.Name == "" {
			f.Name = sf.Name
		}
		if sf.Name == "_" && f.Type != Filler {
			return nil, fmt.Errorf("fixed: %v: blank field at %d must be FILLER", t, f.Start)
		}
		if f.Type == Filler && sf.Name == "_" {
			f.Name = ""
		}
		f.Label = sf.Tag.Get("label")
		b := binding{index: i}
		if f.Type == Filler {
			b.kind = kNone
		} else {
			if !sf.IsExported() {
				return nil, fmt.Errorf("fixed: %v.%s: tagged field must be exported", t, sf.Name)
			}
			b.kind, b.bits = goKind(sf.Type)
			if err := compatible(f.Type, b.kind, sf.Type); err != nil {
				return nil, fmt.Errorf("fixed: %v.%s: %w", t, sf.Name, err)
			}
		}
		fields = append(fields, f)
		binds = append(binds, b)
		if f.End() > end {
			end = f.End()
		}
	}
	length := end
	if n, ok := zero.Elem().Interface().(RecordLengther); ok {
		length = n.RecordLength()
	} else if n, ok := zero.Interface().(RecordLengther); ok {
		length = n.RecordLength()
	}
	l, err := NewLayout(name, length, fields...)
	if err != nil {
		return nil, err
	}
	// NewLayout sorted the fields; order the bindings the same way.
	l.bind = make([]binding, len(l.fields))
	for j, f := range fields {
		name := f.Name
		if name == "" {
			name = fmt.Sprintf("FILLER@%d", f.Start)
		}
		l.bind[l.byName[name]] = binds[j]
	}
	l.goType = t
	return l, nil
}

func parseTag(tag string) (Field, error) {
	parts := strings.Split(tag, ",")
	if len(parts) < 3 {
		return Field{}, fmt.Errorf("tag %q: want \"start,len,type\"", tag)
	}
	start, err := strconv.Atoi(strings.TrimSpace(parts[0]))
	if err != nil {
		return Field{}, fmt.Errorf("tag %q: start: %w", tag, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(parts[1]))
	if err != nil {
		return Field{}, fmt.Errorf("tag %q: len: %w", tag, err)
	}
	typ, err := ParseType(parts[2])
	if err != nil {
		return Field{}, fmt.Errorf("tag %q: %w", tag, err)
	}
	f := Field{Start: start, Len: n, Type: typ}
	for _, opt := range parts[3:] {
		k, v, _ := strings.Cut(opt, "=")
		switch strings.TrimSpace(k) {
		case "const":
			f.Const = v
		case "name":
			f.Name = v
		default:
			return Field{}, fmt.Errorf("tag %q: unknown option %q", tag, k)
		}
	}
	return f, nil
}

func goKind(t reflect.Type) (kind, int) {
	switch t.Kind() {
	case reflect.String:
		return kString, 0
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return kInt, t.Bits()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return kUint, t.Bits()
	}
	return 0, 0
}

func compatible(t Type, k kind, rt reflect.Type) error {
	ok := false
	switch t {
	case X, K:
		ok = k == kString
	case N:
		ok = k == kString || k == kInt || k == kUint
	case S:
		ok = k == kInt
	case P:
		ok = k == kInt || k == kUint
	}
	if !ok {
		return fmt.Errorf("Go type %v cannot hold a %v field", rt, t)
	}
	return nil
}

func structValue(v any, settable bool) (reflect.Value, error) {
	rv := reflect.ValueOf(v)
	if settable {
		if rv.Kind() != reflect.Pointer || rv.IsNil() {
			return reflect.Value{}, fmt.Errorf("fixed: Unmarshal needs a non-nil pointer to a struct, got %T", v)
		}
	}
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return reflect.Value{}, fmt.Errorf("fixed: nil %T", v)
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return reflect.Value{}, fmt.Errorf("fixed: %T is not a struct", v)
	}
	return rv, nil
}

// Marshal encodes v (a tagged struct or pointer to one) as one record in
// cs (nil cs: canonical bytes). Text is left-justified and space-padded,
// numbers right-justified and zero-padded; K fields convert full-width
// input that has a unique half-width form. A value that does not fit, a
// character outside the field's set or the charset, or a value that
// contradicts a Const is an *Error (Record 0).
func Marshal(v any, cs *charset.Charset) ([]byte, error) {
	rv, err := structValue(v, false)
	if err != nil {
		return nil, err
	}
	l, err := layoutOfType(rv.Type())
	if err != nil {
		return nil, err
	}
	out := make([]byte, l.length)
	if err := l.encode(out, rv, cs); err != nil {
		return nil, err
	}
	return out, nil
}

// MarshalTo is Marshal into dst, which must be exactly the layout length.
func MarshalTo(dst []byte, v any, cs *charset.Charset) error {
	rv, err := structValue(v, false)
	if err != nil {
		return err
	}
	l, err := layoutOfType(rv.Type())
	if err != nil {
		return err
	}
	if len(dst) != l.length {
		return fmt.Errorf("fixed: MarshalTo %s: dst has %d bytes, want %d", l.name, len(dst), l.length)
	}
	return l.encode(dst, rv, cs)
}

// Unmarshal decodes one record in cs (nil cs: canonical) into v, a pointer
// to a tagged struct. It is UnmarshalAt with a zero Pos.
func Unmarshal(rec []byte, v any, cs *charset.Charset) error {
	return UnmarshalAt(rec, v, cs, Pos{})
}

// UnmarshalAt decodes one record, reporting errors at the given record
// number and file offset. The whole record is validated first: on any
// error v is left untouched and the result is an *Error, or an *ErrorList
// when several fields are wrong (errors.As(err, **Error) finds the first).
func UnmarshalAt(rec []byte, v any, cs *charset.Charset, at Pos) error {
	rv, err := structValue(v, true)
	if err != nil {
		return err
	}
	l, err := layoutOfType(rv.Type())
	if err != nil {
		return err
	}
	return l.decode(rec, rv, cs, at)
}

func (l *Layout) encode(dst []byte, rv reflect.Value, cs *charset.Charset) error {
	if l.bind == nil {
		return fmt.Errorf("fixed: layout %s is not bound to a struct", l.name)
	}
	for i := range l.fields {
		f := &l.fields[i]
		b := l.bind[i]
		seg := dst[f.Start-1 : f.End()]
		var fv reflect.Value
		if b.kind != kNone {
			fv = rv.Field(b.index)
		}
		if f.constBytes != nil && fv.IsZero() {
			copy(seg, f.constBytes)
			continue
		}
		if err := l.encodeField(f, b, seg, fv); err != nil {
			return err
		}
		if f.constBytes != nil && string(seg) != string(f.constBytes) {
			return l.marshalError(f, ConstMismatch, 0, fv, fmt.Errorf("want %q", f.Const))
		}
	}
	if cs == nil {
		return nil
	}
	var stack [512]byte
	var out []byte
	if len(dst) <= len(stack) {
		out = stack[:len(dst)]
	} else {
		out = make([]byte, len(dst))
	}
	if err := cs.FromCanonical(out, dst, l.packed); err != nil {
		err = l.charsetError(err, dst, Pos{}, "")
		var fe *Error
		if errors.As(err, &fe) {
			fe.Text, _ = charset.CanonicalString(fe.Bytes)
		}
		return err
	}
	copy(dst, out)
	return nil
}

func (l *Layout) marshalError(f *Field, r Reason, idx int, fv reflect.Value, err error) *Error {
	e := &Error{RecordType: l.name, Field: f.Name, Label: f.Label, Offset: int64(f.Start - 1 + idx),
		Column: f.Start + idx, Reason: r, Err: err}
	if fv.IsValid() {
		e.Bytes = []byte(fmt.Sprint(fv.Interface()))
	}
	return e
}

func (l *Layout) encodeField(f *Field, b binding, seg []byte, fv reflect.Value) error {
	switch f.Type {
	case Filler:
		PutText(seg, "")
		return nil
	case X, K:
		return l.encodeText(f, seg, fv)
	}
	// numeric
	var iv int64
	var uv uint64
	neg := false
	switch b.kind {
	case kString:
		s := fv.String()
		if len(s) == 0 || FirstNonDigit([]byte(s)) >= 0 {
			return l.marshalError(f, NotNumeric, 0, fv, errors.New("string value must be digits only"))
		}
		if len(s) > f.Len || f.Type != N {
			return l.marshalError(f, Overflow, 0, fv, fmt.Errorf("more than %d digits", f.Len))
		}
		for i := range seg[:f.Len-len(s)] {
			seg[i] = '0'
		}
		copy(seg[f.Len-len(s):], s)
		return nil
	case kInt:
		iv = fv.Int()
		neg = iv < 0
		uv = uint64(iv)
	case kUint:
		uv = fv.Uint()
		if uv > math.MaxInt64 && f.Type != N {
			return l.marshalError(f, Overflow, 0, fv, errors.New("exceeds int64"))
		}
		iv = int64(uv)
	}
	ok := true
	switch f.Type {
	case N:
		if neg {
			return l.marshalError(f, BadSign, 0, fv, errors.New("negative value in an unsigned field"))
		}
		ok = PutDigits(seg, uv)
	case S:
		ok = PutOverpunch(seg, iv)
	case P:
		ok = PutPacked(seg, iv, b.kind == kUint)
	}
	if !ok {
		return l.marshalError(f, Overflow, 0, fv, fmt.Errorf("does not fit %d digits", f.Type.MaxDigits(f.Len)))
	}
	return nil
}

func (l *Layout) encodeText(f *Field, seg []byte, fv reflect.Value) error {
	s := fv.String()
	n := 0
	pos := 0
	for _, r := range s {
		pos++
		var buf [2]byte
		var m int
		if f.Type == K {
			buf, m = charset.HalfWidth(r)
			if m == 0 {
				return l.marshalError(f, BadChar, min(n, f.Len-1), fv,
					&charset.RuneError{Rune: r, Pos: pos, Reason: "no half-width (JIS X 0201) form"})
			}
			for _, c := range buf[:m] {
				if !IsKana(c) {
					return l.marshalError(f, BadChar, min(n, f.Len-1), fv,
						&charset.RuneError{Rune: r, Pos: pos, Reason: "not in the Zengin character set (no lower case, no small kana)"})
				}
			}
		} else {
			c, ok := charset.CanonicalByte(r)
			if !ok {
				return l.marshalError(f, BadChar, min(n, f.Len-1), fv,
					&charset.RuneError{Rune: r, Pos: pos, Reason: "not a printable JIS X 0201 character"})
			}
			buf[0], m = c, 1
		}
		if n+m > f.Len {
			return l.marshalError(f, Overflow, f.Len-1, fv, fmt.Errorf("longer than %d bytes", f.Len))
		}
		copy(seg[n:], buf[:m])
		n += m
	}
	for i := n; i < len(seg); i++ {
		seg[i] = ' '
	}
	return nil
}

func (l *Layout) decode(rec []byte, rv reflect.Value, cs *charset.Charset, at Pos) error {
	if l.bind == nil {
		return fmt.Errorf("fixed: layout %s is not bound to a struct", l.name)
	}
	if e := l.CheckLength(rec, at); e != nil {
		return e
	}
	var stack [512]byte
	var canon []byte
	if cs == nil {
		canon = rec
	} else {
		if l.length <= len(stack) {
			canon = stack[:l.length]
		} else {
			canon = make([]byte, l.length)
		}
		if err := l.ToCanonical(canon, rec, cs, at); err != nil {
			return err
		}
	}
	var errs ErrorList
	if !l.Validate(canon, at, &errs) {
		// Report original bytes, with their text when it can be decoded.
		for _, e := range errs.Errs {
			if f, ok := l.Field(e.Field); ok {
				e.Bytes = append(e.Bytes[:0], f.Bytes(rec)...)
				if cs != nil {
					e.Charset = cs.Name()
					if f.Type != P {
						e.Text, _ = charset.CanonicalString(f.Bytes(canon))
					}
				}
			}
		}
		if len(errs.Errs) == 1 {
			return errs.Errs[0]
		}
		return &errs
	}
	// Decode into a copy so that a Go-type overflow leaves v untouched.
	tmp := reflect.New(rv.Type()).Elem()
	tmp.Set(rv)
	for i := range l.fields {
		f := &l.fields[i]
		b := l.bind[i]
		if b.kind == kNone {
			continue
		}
		seg := canon[f.Start-1 : f.End()]
		if err := l.decodeField(f, b, seg, tmp.Field(b.index), rec, at); err != nil {
			return err
		}
	}
	rv.Set(tmp)
	return nil
}

func (l *Layout) decodeField(f *Field, b binding, seg []byte, fv reflect.Value, rec []byte, at Pos) error {
	switch f.Type {
	case X, K:
		s, err := charset.CanonicalString(TrimText(seg))
		if err != nil {
			return l.FieldError(*f, rec, at, BadChar, 0, err)
		}
		fv.SetString(s)
		return nil
	}
	if b.kind == kString {
		fv.SetString(string(seg))
		return nil
	}
	var iv int64
	var uv uint64
	neg := false
	switch f.Type {
	case N:
		uv, _ = ParseDigits(seg)
	case S:
		iv, _ = ParseOverpunch(seg)
		neg, uv = iv < 0, uint64(iv)
	case P:
		iv, _ = ParsePacked(seg)
		neg, uv = iv < 0, uint64(iv)
	}
	switch b.kind {
	case kUint:
		if neg {
			return l.FieldError(*f, rec, at, BadSign, f.Len-1, errors.New("negative value for an unsigned Go field"))
		}
		if fv.OverflowUint(uv) {
			return l.FieldError(*f, rec, at, Overflow, 0, fmt.Errorf("%d overflows %v", uv, fv.Type()))
		}
		fv.SetUint(uv)
	case kInt:
		if !neg {
			if uv > math.MaxInt64 {
				return l.FieldError(*f, rec, at, Overflow, 0, fmt.Errorf("%d overflows %v", uv, fv.Type()))
			}
			iv = int64(uv)
		}
		if fv.OverflowInt(iv) {
			return l.FieldError(*f, rec, at, Overflow, 0, fmt.Errorf("%d overflows %v", iv, fv.Type()))
		}
		fv.SetInt(iv)
	}
	return nil
}
