package signing

import (
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"

	"golang.org/x/text/unicode/norm"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/strictjson"
)

// Canonicalization is the value of signature.canonicalization this package
// implements (spec 002 §12.6.2).
const Canonicalization = "FIXED"

// Decode parses a JSON document keeping numbers exact (json.Number), as
// Canonical needs them, with coordinator/strictjson's rules: a repeated
// key, invalid UTF-8 or trailing data is refused (INVALID_REQUEST naming
// the problem, field and byte offset), so the signed document has one
// reading only.
func Decode(doc []byte) (any, error) {
	return strictjson.Value(doc)
}

// LeafPointers lists, in ascending byte order, the JSON Pointer of every
// leaf of doc: every member whose value is not an object, and every empty
// object. Arrays are leaves (Canonical joins their elements). The root
// itself is "" when doc is not an object.
func LeafPointers(doc any) []string {
	var out []string
	var walk func(prefix string, v any, root bool)
	walk = func(prefix string, v any, root bool) {
		m, ok := v.(map[string]any)
		if !ok || (len(m) == 0 && !root) {
			out = append(out, prefix)
			return
		}
		for k, sub := range m {
			walk(prefix+"/"+escapePointer(k), sub, false)
		}
	}
	walk("", doc, true)
	sort.Strings(out)
	return out
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func unescapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~1", "/"), "~0", "~")
}

// Resolve returns the value at pointer in doc and whether it exists.
func Resolve(doc any, pointer string) (any, bool) {
	if pointer == "" {
		return doc, true
	}
	if pointer[0] != '/' {
		return nil, false
	}
	cur := doc
	for _, tok := range strings.Split(pointer[1:], "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = m[unescapePointer(tok)]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// Canonical is the FIXED canonicalization (spec 002 §12.6.2): the value at
// each pointer, in the order given, stringified — strings as is (NFC),
// integers in plain decimal, booleans true/false, null or absent as "",
// arrays and objects by applying the procedure recursively and joining the
// elements with "," (object members in ascending key order) — then joined
// with "|" and encoded as UTF-8. A non-integer number is refused
// (INVALID_REQUEST): floating point is never signed.
func Canonical(doc any, pointers []string) ([]byte, error) {
	var b strings.Builder
	for i, p := range pointers {
		if i > 0 {
			b.WriteByte('|')
		}
		v, _ := Resolve(doc, p)
		s, err := stringify(v, p)
		if err != nil {
			return nil, err
		}
		b.WriteString(s)
	}
	return []byte(b.String()), nil
}

func stringify(v any, at string) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return norm.NFC.String(x), nil
	case bool:
		if x {
			return "true", nil
		}
		return "false", nil
	case json.Number:
		return integer(string(x), at)
	case float64:
		return integer(fmt.Sprint(x), at)
	case int64:
		return fmt.Sprint(x), nil
	case int:
		return fmt.Sprint(x), nil
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, err := stringify(e, fmt.Sprintf("%s/%d", at, i))
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	case []string:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = norm.NFC.String(e)
		}
		return strings.Join(parts, ","), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			s, err := stringify(x[k], at+"/"+escapePointer(k))
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	}
	return "", domainerr.New("INVALID_REQUEST", fmt.Sprintf("value at %s cannot be signed (%T)", at, v), map[string]any{"field": at})
}

// integer renders a JSON number in plain decimal without leading zeros; a
// fraction or exponent is refused.
func integer(s, at string) (string, error) {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return "", domainerr.New("INVALID_REQUEST",
			fmt.Sprintf("value at %s is not an integer (%s): floating point is never signed (spec 002 §12.6.2)", at, s),
			map[string]any{"field": at})
	}
	return n.String(), nil
}
