package gateway

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/zcgw/zcgw/coordinator/zclog"
)

// schemaGen turns Go wire types into JSON Schema 2020-12 (the dialect of
// OpenAPI 3.1), so the document describes exactly what encoding/json
// writes and reads for them. A named struct becomes a component
// ("pkg.Type") referenced by $ref; everything else is inlined.
//
// The rules follow encoding/json: the json tag names a member ("-"
// skips it), an untagged exported field is named by its Go name, an
// embedded struct without a tag is flattened into its parent. A member
// is required unless it is omitempty, or it is one that a read route may
// withhold from a party (Visibility, secret keys). Nil slices and maps
// encode as null, pointers may be null. Objects are closed
// (additionalProperties false), so a member written on the wire but not
// declared on the type fails the response validation test.
//
// A request body (input) is described inline and requires no member: a
// handler decodes an absent member as its zero value, and its own
// validation (400, naming the field) says which it needs. Its objects are
// closed where the handler refuses unknown members, open where it ignores
// them (openInput: the bank ingress).
type schemaGen struct {
	components map[string]any
	names      map[reflect.Type]string
	input      bool
	openInput  bool
}

func newSchemaGen() *schemaGen {
	return &schemaGen{components: map[string]any{}, names: map[reflect.Type]string{}}
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// of returns the schema of values of t.
func (g *schemaGen) of(t reflect.Type) map[string]any {
	if t == rawMessageType {
		return map[string]any{} // any JSON value
	}
	switch t.Kind() {
	case reflect.Pointer:
		return orNull(g.of(t.Elem()))
	case reflect.Interface:
		return map[string]any{}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		return orNull(map[string]any{"type": "array", "items": g.of(t.Elem())})
	case reflect.Array:
		return map[string]any{"type": "array", "items": g.of(t.Elem()), "minItems": t.Len(), "maxItems": t.Len()}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			panic(fmt.Sprintf("gateway/openapi: map key %s is not a string", t.Key()))
		}
		return orNull(map[string]any{"type": "object", "additionalProperties": g.of(t.Elem())})
	case reflect.Struct:
		if t.Name() == "" || g.input {
			return g.object(t, g.input && g.openInput)
		}
		return g.ref(t)
	}
	panic(fmt.Sprintf("gateway/openapi: no schema for %s", t))
}

// ref registers the named struct t as a component and returns its $ref.
func (g *schemaGen) ref(t reflect.Type) map[string]any {
	name, ok := g.names[t]
	if !ok {
		name = componentName(t)
		for other, n := range g.names {
			if n == name {
				panic(fmt.Sprintf("gateway/openapi: %s and %s share the component name %s", t.PkgPath(), other.PkgPath(), name))
			}
		}
		g.names[t] = name
		g.components[name] = nil // placeholder: breaks recursion
		g.components[name] = g.object(t, false)
	}
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

func componentName(t reflect.Type) string {
	pkg := t.PkgPath()
	if i := strings.LastIndex(pkg, "/"); i >= 0 {
		pkg = pkg[i+1:]
	}
	return pkg + "." + t.Name()
}

// open is the schema of t's object with further members allowed (a
// response that merges another value's members into t's).
func (g *schemaGen) open(t reflect.Type) map[string]any { return g.object(t, true) }

func (g *schemaGen) object(t reflect.Type, open bool) map[string]any {
	props := map[string]any{}
	required := []string{}
	g.fields(t, props, &required, false)
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	if !open {
		s["additionalProperties"] = false
	}
	return s
}

// fields adds t's members to props; optional marks members of an embedded
// pointer (absent when it is nil).
func (g *schemaGen) fields(t reflect.Type, props map[string]any, required *[]string, optional bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.fields(ft, props, required, optional || f.Type.Kind() == reflect.Pointer)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.of(f.Type)
		if g.input || optional || hasOpt(opts, "omitempty") || hasOpt(opts, "omitzero") || withheld(name) {
			continue
		}
		*required = append(*required, name)
	}
}

func hasOpt(opts, want string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// withheld reports whether a read route may remove member name for some
// party (Visibility, and secret keys that nobody is served).
func withheld(name string) bool {
	if zclog.IsSecretKey(name) {
		return true
	}
	for _, r := range Visibility {
		field := r.Field
		if _, member, ok := strings.Cut(field, "."); ok {
			field = member
		}
		if field == name && !(r.Payer && r.Payee && r.Operator) {
			return true
		}
	}
	return false
}

// orNull lets s be null too.
func orNull(s map[string]any) map[string]any {
	if typ, ok := s["type"].(string); ok {
		out := make(map[string]any, len(s))
		for k, v := range s {
			out[k] = v
		}
		out["type"] = []string{typ, "null"}
		return out
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}
