package node

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// ConfigError says where node.json is wrong: the field path (as
// banks[1].accounts[0].opening_balance), the line and column where the
// offending key or value starts when known, and why.
type ConfigError struct {
	File      string // node.json, or its full path
	Path      string // "" for the whole document
	Line, Col int    // 0 when not known
	Problem   string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	if e.Path != "" {
		b.WriteString(": ")
		b.WriteString(e.Path)
	}
	b.WriteString(": ")
	b.WriteString(e.Problem)
	return b.String()
}

// decodeConfig decodes data into c strictly: an unknown key, a repeated
// key, a value of the wrong JSON type, an integer out of range and data
// after the document are refused with a *ConfigError naming the field path.
// It walks the document against Config's type first (reflection over the
// json tags), then decodes it with encoding/json.
func decodeConfig(data []byte, file string, c *Config) error {
	w := &walker{dec: json.NewDecoder(bytes.NewReader(data)), data: data, file: file}
	w.dec.UseNumber()
	if err := w.value(reflect.TypeOf(*c), ""); err != nil {
		return err
	}
	if _, err := w.dec.Token(); err != io.EOF {
		return w.fail("", "data after the JSON document")
	}
	if err := json.Unmarshal(data, c); err != nil {
		// Unreachable once the walk passed (FuzzNodeConfig checks that the
		// two agree); kept so nothing is swallowed.
		return &ConfigError{File: file, Problem: "encoding/json refused what the walk accepted: " + err.Error()}
	}
	return nil
}

type walker struct {
	dec  *json.Decoder
	data []byte
	file string
}

// next is the offset of the next token: the decoder's position past the
// white space and the ',' or ':' it has not consumed yet.
func (w *walker) next() int {
	off := int(w.dec.InputOffset())
	for off < len(w.data) && strings.IndexByte(" \t\r\n,:", w.data[off]) >= 0 {
		off++
	}
	return off
}

// fail is a ConfigError at the decoder's position.
func (w *walker) fail(path, problem string) error {
	return w.failAt(int(w.dec.InputOffset()), path, problem)
}

// failAt is a ConfigError at byte offset off.
func (w *walker) failAt(off int, path, problem string) error {
	line, col := 1, 1
	for _, ch := range w.data[:min(off, len(w.data))] {
		if ch == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &ConfigError{File: w.file, Path: path, Line: line, Col: col, Problem: problem}
}

func (w *walker) token(path string) (json.Token, error) {
	tok, err := w.dec.Token()
	if err == io.EOF {
		return nil, w.fail(path, "the document ends early")
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return nil, w.fail(path, "not valid JSON: "+se.Error())
	}
	if err != nil {
		return nil, w.fail(path, err.Error())
	}
	return tok, nil
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
		return fmt.Sprintf("%t", v)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

// value walks one JSON value that must fit t, at path.
func (w *walker) value(t reflect.Type, path string) error {
	start := w.next()
	tok, err := w.token(path)
	if err != nil {
		return err
	}
	if tok == nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map) {
		return nil
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	wrong := func(want string) error { return w.failAt(start, path, "want "+want+", got "+describe(tok)) }
	switch t.Kind() {
	case reflect.String:
		if _, ok := tok.(string); !ok {
			return wrong("a string")
		}
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			return wrong("true or false")
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		n, ok := tok.(json.Number)
		if !ok {
			return wrong("an integer")
		}
		if _, err := strconv.ParseInt(n.String(), 10, t.Bits()); err != nil {
			return wrong(fmt.Sprintf("an integer of %d bits", t.Bits()))
		}
	case reflect.Slice:
		if tok != json.Delim('[') {
			return wrong("an array")
		}
		for i := 0; w.dec.More(); i++ {
			if err := w.value(t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err = w.token(path)
		return err
	case reflect.Map:
		if tok != json.Delim('{') {
			return wrong("an object")
		}
		return w.members(path, func(string, int) (reflect.Type, error) { return t.Elem(), nil })
	case reflect.Struct:
		if tok != json.Delim('{') {
			return wrong("an object")
		}
		fields := jsonFields(t)
		return w.members(path, func(key string, at int) (reflect.Type, error) {
			ft, ok := fields[key]
			if !ok {
				return nil, w.failAt(at, join(path, key), "unknown field"+suggest(key, fields))
			}
			return ft, nil
		})
	default:
		return w.fail(path, "node: no JSON rule for "+t.String())
	}
	return nil
}

// members walks an object's members (after its '{'), each typed by typeOf
// (given the key and the offset where it starts).
func (w *walker) members(path string, typeOf func(key string, at int) (reflect.Type, error)) error {
	seen := map[string]bool{}
	for w.dec.More() {
		at := w.next()
		tok, err := w.token(path)
		if err != nil {
			return err
		}
		key := tok.(string) // object keys are strings
		if seen[key] {
			return w.failAt(at, join(path, key), "repeated key")
		}
		seen[key] = true
		ft, err := typeOf(key, at)
		if err != nil {
			return err
		}
		if err := w.value(ft, join(path, key)); err != nil {
			return err
		}
	}
	_, err := w.token(path)
	return err
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// jsonFields maps the JSON names of t's fields (embedded structs
// flattened, as encoding/json does) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// suggest lists the known fields, naming the closest one first when the
// key looks like a misspelling of it.
func suggest(key string, fields map[string]reflect.Type) string {
	names := make([]string, 0, len(fields))
	best, bestD := "", 3
	for n := range fields {
		names = append(names, n)
		if d := distance(key, n); d < bestD {
			best, bestD = n, d
		}
	}
	sort.Strings(names)
	s := " (known: " + strings.Join(names, ", ") + ")"
	if best != "" {
		s = fmt.Sprintf(": did you mean %q?", best) + s
	}
	return s
}

// distance is the optimal string alignment distance (a swap of two
// neighbours counts one edit).
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
