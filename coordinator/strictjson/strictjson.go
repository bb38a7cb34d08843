package strictjson

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// Problem names why a document was refused.
type Problem string

// The problems a document can have.
const (
	ProblemEmpty        Problem = "empty"
	ProblemSyntax       Problem = "syntax"
	ProblemUTF8         Problem = "invalid_utf8"
	ProblemSurrogate    Problem = "unpaired_surrogate"
	ProblemDuplicateKey Problem = "duplicate_key"
	ProblemKeyCase      Problem = "key_case_mismatch"
	ProblemUnknownField Problem = "unknown_field"
	ProblemTrailingData Problem = "trailing_data"
	ProblemType         Problem = "wrong_type"
	ProblemDepth        Problem = "too_deep"
	// ProblemRange is an integer that does not fit its field's type
	// (Options.Config only; otherwise encoding/json reports it as
	// ProblemType).
	ProblemRange Problem = "out_of_range"
)

// DefaultMaxDepth bounds the nesting of objects and arrays.
const DefaultMaxDepth = 32

// ReasonCode is the catalog code every refusal carries.
const ReasonCode = "INVALID_REQUEST"

// Error is a refused document: what is wrong, where (JSON Pointer of the
// member, "" for the root) and at which byte offset.
type Error struct {
	Problem Problem
	Path    string
	Offset  int64
	Detail  string
	Err     error
	// Field is the same place as Path written the way a configuration
	// file's reader names it: banks[1].accounts[0].opening_balance
	// (members joined by '.', array indices in brackets; "" for the root).
	Field string
	// Known lists the member names of the object holding an unknown or
	// case-mismatched member (sorted), and Suggest the one it most likely
	// meant ("" when none is close). Neither appears in Error() or in the
	// INVALID_REQUEST details: the HTTP edges' bodies do not carry them.
	Known   []string
	Suggest string
}

func (e *Error) Error() string {
	p := e.Path
	if p == "" {
		p = "/"
	}
	s := fmt.Sprintf("json %s at %s (byte %d)", e.Problem, p, e.Offset)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the underlying decoder error, if any.
func (e *Error) Unwrap() error { return e.Err }

// Options tunes Decode.
type Options struct {
	// DisallowUnknownFields refuses a member that names no field of the
	// target struct.
	DisallowUnknownFields bool
	// MaxDepth bounds nesting (0: DefaultMaxDepth).
	MaxDepth int
	// Config decodes a configuration file a person reads the refusal of.
	// Every value is checked against its target's type during the walk,
	// so the refusal names the member's exact place and the offset where
	// the value starts: a value of the wrong JSON type (null too, except
	// for pointers, slices, maps and interfaces) is ProblemType, an integer
	// that does not fit its type ProblemRange. A syntax error's Offset is
	// the offending byte's (from a full scan of the document). Without it
	// (the HTTP edges) type refusals come from encoding/json and a syntax
	// error's offset is the token decoder's count, as they always were.
	Config bool
}

// Decode decodes exactly one JSON document from data into v (a non-nil
// pointer) under the strict rules of the package. A refusal is a
// domainerr INVALID_REQUEST wrapping an *Error.
func Decode(data []byte, v any, opts Options) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return domainerr.New("INVARIANT_VIOLATION", fmt.Sprintf("strictjson: Decode target %T is not a non-nil pointer", v), nil)
	}
	if err := check(data, rv.Type().Elem(), opts); err != nil {
		return wrap(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if opts.DisallowUnknownFields {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return wrap(decodeError(err, dec.InputOffset()))
	}
	return nil
}

// Value decodes one JSON document into Go values (objects as
// map[string]any, numbers as json.Number) under the strict rules.
func Value(data []byte) (any, error) {
	if err := check(data, nil, Options{}); err != nil {
		return nil, wrap(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, wrap(decodeError(err, dec.InputOffset()))
	}
	return v, nil
}

func wrap(e *Error) error {
	return domainerr.Wrap(ReasonCode, e, "request body is not valid: "+e.Error(),
		map[string]any{"problem": string(e.Problem), "field": e.Path, "byte_offset": e.Offset})
}

// As returns the *Error in err's chain.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

func decodeError(err error, off int64) *Error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return &Error{Problem: ProblemSyntax, Offset: se.Offset, Detail: se.Error(), Err: err}
	case errors.As(err, &te):
		p := ""
		if te.Field != "" {
			p = "/" + strings.ReplaceAll(te.Field, ".", "/")
		}
		return &Error{Problem: ProblemType, Path: p, Field: te.Field, Offset: te.Offset, Detail: fmt.Sprintf("a JSON %s cannot be %s", te.Value, te.Type), Err: err}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &Error{Problem: ProblemUnknownField, Path: "/" + f, Field: f, Offset: off, Detail: err.Error(), Err: err}
	}
	return &Error{Problem: ProblemType, Offset: off, Detail: err.Error(), Err: err}
}

// check validates the document's encoding and structure against t (nil:
// no field names to match).
func check(data []byte, t reflect.Type, opts Options) *Error {
	if len(bytes.TrimSpace(data)) == 0 {
		return &Error{Problem: ProblemEmpty, Detail: "no JSON document"}
	}
	if !utf8.Valid(data) {
		return &Error{Problem: ProblemUTF8, Offset: invalidUTF8At(data), Detail: "the body is not UTF-8"}
	}
	if off, ok := unpairedSurrogate(data); ok {
		return &Error{Problem: ProblemSurrogate, Offset: off, Detail: "a \\u escape names half of a UTF-16 surrogate pair"}
	}
	max := opts.MaxDepth
	if max <= 0 {
		max = DefaultMaxDepth
	}
	w := &walker{data: data, dec: json.NewDecoder(bytes.NewReader(data)), opts: opts, max: max}
	w.dec.UseNumber()
	if err := w.value(t, "", "", 0); err != nil {
		if err.Problem == ProblemSyntax && opts.Config {
			var se *json.SyntaxError
			if errors.As(json.Unmarshal(data, new(any)), &se) {
				err.Offset, err.Detail = se.Offset, se.Error()
				if strings.HasPrefix(se.Error(), "invalid character") && se.Offset > 0 {
					err.Offset-- // the offending byte itself, not the count read
				}
			}
		}
		return err
	}
	off := w.dec.InputOffset()
	if _, err := w.dec.Token(); err != io.EOF {
		return &Error{Problem: ProblemTrailingData, Offset: skipSpace(data, off), Detail: "data after the JSON document"}
	}
	return nil
}

func invalidUTF8At(b []byte) int64 {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return int64(i)
		}
		i += n
	}
	return int64(len(b))
}

// unpairedSurrogate finds a \uD800-\uDFFF escape inside a string that is
// not a high surrogate immediately followed by a low one.
func unpairedSurrogate(b []byte) (int64, bool) {
	in := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !in {
			if c == '"' {
				in = true
			}
			continue
		}
		switch c {
		case '"':
			in = false
		case '\\':
			if i+1 >= len(b) {
				return 0, false
			}
			if b[i+1] != 'u' {
				i++
				continue
			}
			r, ok := hex4(b, i+2)
			if !ok {
				return 0, false // a syntax error the walker reports
			}
			switch {
			case r >= 0xD800 && r <= 0xDBFF:
				lo, ok := rune(0), false
				if i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
					lo, ok = hex4(b, i+8)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return int64(i), true
				}
				i += 11
			case r >= 0xDC00 && r <= 0xDFFF:
				return int64(i), true
			default:
				i += 5
			}
		}
	}
	return 0, false
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}

func skipSpace(b []byte, off int64) int64 {
	for off < int64(len(b)) && strings.IndexByte(" \t\r\n,:", b[off]) >= 0 {
		off++
	}
	return off
}

type walker struct {
	data []byte
	dec  *json.Decoder
	opts Options
	max  int
}

func (w *walker) token() (json.Token, int64, *Error) {
	start := skipSpace(w.data, w.dec.InputOffset())
	tok, err := w.dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		e := decodeError(err, start)
		if e.Problem != ProblemSyntax {
			e.Problem, e.Offset = ProblemSyntax, start
		}
		return nil, start, e
	}
	return tok, start, nil
}

func (w *walker) value(t reflect.Type, path, field string, depth int) *Error {
	tok, start, err := w.token()
	if err != nil {
		err.Path, err.Field = path, field
		return err
	}
	if w.opts.Config {
		if err := checkType(t, tok); err != nil {
			err.Path, err.Field, err.Offset = path, field, start
			return err
		}
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if depth+1 > w.max {
		return &Error{Problem: ProblemDepth, Path: path, Field: field, Offset: start, Detail: fmt.Sprintf("nesting deeper than %d", w.max)}
	}
	t = target(t)
	switch d {
	case '{':
		return w.object(t, path, field, depth+1)
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; w.dec.More(); i++ {
			if err := w.value(elem, fmt.Sprintf("%s/%d", path, i), fmt.Sprintf("%s[%d]", field, i), depth+1); err != nil {
				return err
			}
		}
		_, _, err := w.token() // ']'
		return err
	}
	return nil
}

func (w *walker) object(t reflect.Type, path, field string, depth int) *Error {
	var fields map[string]reflect.Type
	var elem reflect.Type
	isStruct := t != nil && t.Kind() == reflect.Struct
	if isStruct {
		fields = fieldsOf(t)
	} else if t != nil && t.Kind() == reflect.Map {
		elem = t.Elem()
	}
	seen := map[string]struct{}{}
	for w.dec.More() {
		tok, start, err := w.token()
		if err != nil {
			err.Path, err.Field = path, field
			return err
		}
		key, _ := tok.(string)
		at, atField := path+"/"+escape(key), key
		if field != "" {
			atField = field + "." + key
		}
		if _, dup := seen[key]; dup {
			return &Error{Problem: ProblemDuplicateKey, Path: at, Field: atField, Offset: start, Detail: fmt.Sprintf("key %q appears twice in one object", key)}
		}
		seen[key] = struct{}{}
		child := elem
		if isStruct {
			ft, exact := fields[key]
			switch {
			case exact:
				child = ft
			case foldMatch(fields, key) != "":
				m := foldMatch(fields, key)
				return &Error{Problem: ProblemKeyCase, Path: at, Field: atField, Offset: start,
					Detail: fmt.Sprintf("key %q differs only in case from field %q", key, m), Known: names(fields), Suggest: m}
			case w.opts.DisallowUnknownFields:
				known := names(fields)
				return &Error{Problem: ProblemUnknownField, Path: at, Field: atField, Offset: start,
					Detail: fmt.Sprintf("unknown field %q", key), Known: known, Suggest: Suggest(key, known)}
			}
		}
		if err := w.value(child, at, atField, depth); err != nil {
			return err
		}
	}
	_, _, err := w.token() // '}'
	return err
}

// checkType refuses a token (a scalar or an opening delimiter) that cannot
// decode into t (nil: anything goes). Its Path, Field and Offset are the
// caller's to fill.
func checkType(t reflect.Type, tok json.Token) *Error {
	if tok == nil {
		if t == nil {
			return nil
		}
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			return nil
		}
	}
	t = target(t)
	if t == nil {
		return nil
	}
	if t == numberType {
		if _, ok := tok.(json.Number); !ok {
			return &Error{Problem: ProblemType, Detail: "want a number, got " + describe(tok)}
		}
		return nil
	}
	wrong := func(want string) *Error {
		return &Error{Problem: ProblemType, Detail: "want " + want + ", got " + describe(tok)}
	}
	switch t.Kind() {
	case reflect.String:
		if _, ok := tok.(string); !ok {
			return wrong("a string")
		}
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			return wrong("true or false")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, ok := tok.(json.Number)
		if !ok || strings.ContainsAny(n.String(), ".eE") {
			return wrong("an integer")
		}
		var err error
		var lo, hi string
		if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uintptr {
			_, err = strconv.ParseUint(n.String(), 10, t.Bits())
			lo, hi = "0", strconv.FormatUint(1<<t.Bits()-1, 10)
		} else {
			_, err = strconv.ParseInt(n.String(), 10, t.Bits())
			lo, hi = strconv.FormatInt(-1<<(t.Bits()-1), 10), strconv.FormatInt(1<<(t.Bits()-1)-1, 10)
		}
		if err != nil {
			return &Error{Problem: ProblemRange, Detail: fmt.Sprintf("want an integer from %s to %s, got %s", lo, hi, describe(tok))}
		}
	case reflect.Float32, reflect.Float64:
		n, ok := tok.(json.Number)
		if !ok {
			return wrong("a number")
		}
		if _, err := strconv.ParseFloat(n.String(), t.Bits()); err != nil {
			return &Error{Problem: ProblemRange, Detail: fmt.Sprintf("want a number of %d bits, got %s", t.Bits(), describe(tok))}
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && target(t.Elem()) != nil {
			// encoding/json: []byte is base64 text (null is nil)
			if v, ok := tok.(string); !ok && tok != nil {
				return wrong("a base64 string")
			} else if _, err := base64.StdEncoding.DecodeString(v); ok && err != nil {
				return &Error{Problem: ProblemType, Detail: "want a base64 string, got " + describe(tok) + ": " + err.Error()}
			}
			return nil
		}
		if tok != json.Delim('[') {
			return wrong("an array")
		}
	case reflect.Array:
		if tok != json.Delim('[') {
			return wrong("an array")
		}
	case reflect.Map, reflect.Struct:
		if tok != json.Delim('{') {
			return wrong("an object")
		}
	}
	return nil
}

func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "an array"
	case string:
		return fmt.Sprintf("the string %q", v)
	case json.Number:
		return "the number " + v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	return "null"
}

// foldMatch is the field key names case-insensitively (the first in
// sort order if several do).
func foldMatch(fields map[string]reflect.Type, key string) string {
	match := ""
	for name := range fields {
		if strings.EqualFold(name, key) && (match == "" || name < match) {
			match = name
		}
	}
	return match
}

func names(fields map[string]reflect.Type) []string {
	out := make([]string, 0, len(fields))
	for n := range fields {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Suggest returns the name in names that key most likely misspells: the
// closest within two edits (a swap of neighbours counting one), the first
// in names on a tie; "" when none is that close.
func Suggest(key string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := distance(key, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// distance is the optimal string alignment distance between a and b.
func distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// Position is the 1-based line and column of byte offset off in data
// (columns count bytes, as Go's own tools do), for a file's reader.
func Position(data []byte, off int64) (line, col int) {
	line, col = 1, 1
	for _, c := range data[:min(max(off, 0), int64(len(data)))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// Reason says in words what is wrong, for the reader of a file that
// names the place itself (file:line:col: field: reason), with the
// suggestion and the known names for an unknown member:
// `unknown field: did you mean "kafka"? (known: addr, banks, kafka)`.
func (e *Error) Reason() string {
	switch e.Problem {
	case ProblemUnknownField, ProblemKeyCase:
		s := "unknown field"
		if e.Problem == ProblemKeyCase {
			s = "unknown field (names are case-sensitive)"
		}
		if e.Suggest != "" {
			s += fmt.Sprintf(": did you mean %q?", e.Suggest)
		}
		if len(e.Known) > 0 {
			s += " (known: " + strings.Join(e.Known, ", ") + ")"
		}
		return s
	case ProblemDuplicateKey:
		return "repeated key"
	case ProblemSyntax:
		if errors.Is(e.Err, io.ErrUnexpectedEOF) {
			return "the document ends early"
		}
		return "not valid JSON: " + e.Detail
	case ProblemUTF8:
		return "not valid UTF-8"
	case ProblemEmpty:
		return "empty: no JSON document"
	}
	return e.Detail
}

func escape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

var (
	unmarshaler     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	numberType      = reflect.TypeFor[json.Number]()
)

// target resolves pointers and returns nil for types whose field names
// this package cannot know (custom unmarshalers, interfaces).
func target(t reflect.Type) reflect.Type {
	for t != nil {
		if t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler) ||
			t.Implements(textUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
			return nil
		}
		switch t.Kind() {
		case reflect.Pointer:
			t = t.Elem()
		case reflect.Interface:
			return nil
		default:
			return t
		}
	}
	return nil
}

var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// fieldsOf returns the JSON member names of struct t with their types,
// following encoding/json's rules: exported fields, the tag's name, "-"
// skipped, untagged embedded structs promoted (the shallower field wins).
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	depthOf := map[string]int{}
	var walk func(t reflect.Type, depth int, visited map[reflect.Type]bool)
	walk = func(t reflect.Type, depth int, visited map[reflect.Type]bool) {
		if visited[t] {
			return
		}
		visited[t] = true
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				et := f.Type
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if et.Kind() == reflect.Struct {
					walk(et, depth+1, visited)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if d, ok := depthOf[name]; ok && d <= depth {
				continue
			}
			ft := f.Type
			if quotedScalar(ft, opts) {
				ft = nil // `json:",string"`: the value is a string holding it
			}
			out[name], depthOf[name] = ft, depth
		}
	}
	walk(t, 0, map[reflect.Type]bool{})
	fieldCache.Store(t, out)
	return out
}

// quotedScalar reports whether the tag options ask for a scalar field's
// value quoted in a string (encoding/json ignores ",string" on other kinds).
func quotedScalar(t reflect.Type, opts string) bool {
	if !strings.Contains(","+opts+",", ",string,") {
		return false
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// MediaType is the only media type the JSON routes accept.
const MediaType = "application/json"

// CheckContentType accepts application/json with no charset or charset
// utf-8 (any case) and refuses anything else, including a missing header.
func CheckContentType(ct string) error {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != MediaType {
		return domainerr.New(ReasonCode, "Content-Type must be "+MediaType, map[string]any{"content_type": ct, "accepted": MediaType})
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return domainerr.New(ReasonCode, "only the utf-8 charset is accepted", map[string]any{"content_type": ct, "accepted": MediaType})
	}
	return nil
}
