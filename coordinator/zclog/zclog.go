package zclog

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/uuid"
)

// Redacted replaces the value of every secret key.
const Redacted = "[REDACTED]"

// maxDepth bounds how deep values are walked (guards against cycles).
const maxDepth = 16

// Options configures a Handler.
type Options struct {
	// Level is the minimum level written; nil means slog.LevelInfo.
	Level slog.Leveler
	// Clock stamps ts; nil uses the record's own time.
	Clock clock.Clock
}

// Handler is a slog.Handler writing one JSON line per record.
type Handler struct {
	mu     *sync.Mutex
	w      io.Writer
	opts   Options
	frames []frame  // baggage from With/WithAttrs, each under its groups
	groups []string // groups opened by WithGroup so far
}

// frame is a batch of baggage attributes and the group path they sit in.
type frame struct {
	groups []string
	attrs  []slog.Attr
}

// NewHandler returns a Handler writing to w.
func NewHandler(w io.Writer, opts Options) *Handler {
	return &Handler{mu: &sync.Mutex{}, w: w, opts: opts}
}

// New returns a logger writing JSON lines to w.
func New(w io.Writer, opts Options) *slog.Logger { return slog.New(NewHandler(w, opts)) }

// OrDiscard returns l, or a logger that drops everything when l is nil.
func OrDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// WithRequest returns a child logger whose lines carry request_id.
func WithRequest(l *slog.Logger, requestID string) *slog.Logger {
	return OrDiscard(l).With(slog.String(RequestIDKey, requestID))
}

// RequestIDKey is the fixed field naming the request a line belongs to.
const RequestIDKey = "request_id"

type ctxKey struct{}

// ContextWithRequestID returns a context carrying a request id; a record
// logged with that context (InfoContext etc.) and no request_id baggage
// uses it.
func ContextWithRequestID(ctx context.Context, requestID string) context.Context {
	return context.WithValue(ctx, ctxKey{}, requestID)
}

// RequestIDFrom returns the request id carried by ctx, or "".
func RequestIDFrom(ctx context.Context) string {
	if ctx == nil {
		return ""
	}
	s, _ := ctx.Value(ctxKey{}).(string)
	return s
}

// NewRequestID returns "req-" and a random UUIDv4, the id a request gets
// when it arrives without X-Request-Id (spec 004 リクエストトレーシング).
func NewRequestID() string { return "req-" + uuid.New() }

// IsSecretKey reports whether a key's value must be redacted: vault_ref,
// preimage, secret, password (any letter case) or any key ending in _pii.
func IsSecretKey(key string) bool {
	k := strings.ToLower(key)
	switch k {
	case "vault_ref", "preimage", "secret", "password":
		return true
	}
	return strings.HasSuffix(k, "_pii")
}

// piiKeys is the one declared list of attribute keys whose values are a
// bank customer's personal data: core account numbers, balances and names
// (spec 000 ch. 3 "PII セーフ": such keys are written "[REDACTED]"). Keys
// ending in one of piiSuffixes are PII too, so core_account, payer_account,
// balance_after and shadow_balance are covered without being listed.
// account_hash is not: it is the salted hash the spec puts on the wire
// instead of the number, and the key logs correlate on.
var (
	piiKeys = []string{
		"account", "account_number", "account_no", "balance",
		"holder_name", "account_name", "customer_name", "kana_name",
		"payer_name", "payee_name", "target_account_name", "name_to_verify", "name_provided",
	}
	piiSuffixes = []string{"_account", "_balance"}
)

// IsPIIKey reports whether a key's value is a customer's personal data
// (piiKeys, any letter case): it is written "[REDACTED]" like a secret.
func IsPIIKey(key string) bool {
	k := strings.ToLower(key)
	for _, p := range piiKeys {
		if k == p {
			return true
		}
	}
	for _, s := range piiSuffixes {
		if strings.HasSuffix(k, s) {
			return true
		}
	}
	return strings.HasPrefix(k, "balance_")
}

// redacted reports whether the value under key is never written: a secret
// or personal data.
func redacted(key string) bool { return IsSecretKey(key) || IsPIIKey(key) }

// Enabled reports whether level is written.
func (h *Handler) Enabled(_ context.Context, level slog.Level) bool {
	min := slog.LevelInfo
	if h.opts.Level != nil {
		min = h.opts.Level.Level()
	}
	return level >= min
}

// WithAttrs returns a handler whose lines carry attrs as baggage.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	h2 := *h
	h2.frames = append(append([]frame(nil), h.frames...), frame{groups: h.groups, attrs: append([]slog.Attr(nil), attrs...)})
	return &h2
}

// WithGroup returns a handler nesting later attributes under name.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.groups = append(append([]string(nil), h.groups...), name)
	return &h2
}

// Handle writes one JSON line for r.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	ts := r.Time
	if h.opts.Clock != nil {
		ts = h.opts.Clock.Now()
	}
	body := &object{}
	for _, f := range h.frames {
		for _, a := range f.attrs {
			body.put(f.groups, a, 0)
		}
	}
	r.Attrs(func(a slog.Attr) bool {
		body.put(h.groups, a, 0)
		return true
	})

	line := &object{}
	tsVal := any(nil)
	if !ts.IsZero() {
		tsVal = clock.Stamp(ts)
	}
	line.set("ts", tsVal)
	line.set("level", strings.ToLower(r.Level.String()))
	line.set("event", r.Message)
	var reqID any
	if v, ok := body.take(RequestIDKey); ok {
		reqID = v
	} else if id := RequestIDFrom(ctx); id != "" {
		reqID = id
	}
	line.set(RequestIDKey, reqID)
	for _, kv := range body.fields {
		k := kv.key
		for line.has(k) { // never let an attribute overwrite a fixed field
			k = "_" + k
		}
		line.set(k, kv.val)
	}

	var buf bytes.Buffer
	if err := line.write(&buf); err != nil {
		return fmt.Errorf("zclog: encode %s: %w", r.Message, err)
	}
	buf.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(buf.Bytes())
	return err
}

// object is a JSON object that keeps insertion order.
type object struct {
	fields []field
}

type field struct {
	key string
	val any
}

func (o *object) index(k string) int {
	for i, f := range o.fields {
		if f.key == k {
			return i
		}
	}
	return -1
}

func (o *object) has(k string) bool { return o.index(k) >= 0 }

// set adds k or replaces its value in place.
func (o *object) set(k string, v any) {
	if i := o.index(k); i >= 0 {
		o.fields[i].val = v
		return
	}
	o.fields = append(o.fields, field{k, v})
}

// take removes a top-level key and returns its value.
func (o *object) take(k string) (any, bool) {
	i := o.index(k)
	if i < 0 {
		return nil, false
	}
	v := o.fields[i].val
	o.fields = append(o.fields[:i], o.fields[i+1:]...)
	return v, true
}

// child returns the nested object at k, creating it.
func (o *object) child(k string) *object {
	if i := o.index(k); i >= 0 {
		if c, ok := o.fields[i].val.(*object); ok {
			return c
		}
	}
	c := &object{}
	o.set(k, c)
	return c
}

// put places attribute a under the group path.
func (o *object) put(groups []string, a slog.Attr, depth int) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		attrs := a.Value.Group()
		if len(attrs) == 0 {
			return
		}
		if a.Key == "" { // inline group
			for _, ga := range attrs {
				o.put(groups, ga, depth)
			}
			return
		}
		if redacted(a.Key) {
			o.at(groups).set(a.Key, Redacted)
			return
		}
		sub := append(append([]string(nil), groups...), a.Key)
		for _, ga := range attrs {
			o.put(sub, ga, depth+1)
		}
		return
	}
	target := o.at(groups)
	if redacted(a.Key) {
		target.set(a.Key, Redacted)
		return
	}
	target.set(a.Key, sanitize(a.Value.Any(), depth))
}

func (o *object) at(groups []string) *object {
	cur := o
	for _, g := range groups {
		cur = cur.child(g)
	}
	return cur
}

func (o *object) write(buf *bytes.Buffer) error {
	buf.WriteByte('{')
	for i, f := range o.fields {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(f.key)
		buf.Write(kb)
		buf.WriteByte(':')
		if err := writeValue(buf, f.val); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

func writeValue(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case *object:
		return x.write(buf)
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeValue(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	default:
		enc := json.NewEncoder(buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(x); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		return nil
	}
}

var (
	errorType     = reflect.TypeFor[error]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
	timeType      = reflect.TypeFor[time.Time]()
)

// sanitize turns a value into something writeValue can encode with every
// secret key redacted: maps become sorted objects, structs objects keyed
// by their JSON names, errors the flattened four fields.
func sanitize(v any, depth int) any {
	if v == nil {
		return nil
	}
	if depth > maxDepth {
		return "[TOO_DEEP]"
	}
	switch x := v.(type) {
	case error:
		return flattenError(x, depth)
	case slog.Value:
		return sanitize(x.Resolve().Any(), depth)
	case time.Time:
		return clock.Stamp(x)
	case time.Duration:
		return x.String()
	case string, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64, json.Number:
		return x
	case json.RawMessage:
		var decoded any
		if err := json.Unmarshal(x, &decoded); err != nil {
			return string(x)
		}
		return sanitize(decoded, depth)
	}
	rv := reflect.ValueOf(v)
	return sanitizeValue(rv, depth)
}

func sanitizeValue(rv reflect.Value, depth int) any {
	if depth > maxDepth {
		return "[TOO_DEEP]"
	}
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return nil
		}
		if rv.Type().Implements(errorType) {
			return flattenError(rv.Interface().(error), depth)
		}
		rv = rv.Elem()
	}
	if rv.CanInterface() {
		switch x := rv.Interface().(type) {
		case error:
			return flattenError(x, depth)
		case time.Time:
			return clock.Stamp(x)
		}
		if rv.Type() != timeType && rv.Type().Implements(marshalerType) {
			// A type with its own JSON form: re-read it so nested secret
			// keys are still redacted.
			raw, err := rv.Interface().(json.Marshaler).MarshalJSON()
			if err != nil {
				return fmt.Sprintf("[UNENCODABLE %T: %v]", rv.Interface(), err)
			}
			var decoded any
			if err := json.Unmarshal(raw, &decoded); err != nil {
				return string(raw)
			}
			return sanitize(decoded, depth+1)
		}
	}
	switch rv.Kind() {
	case reflect.Map:
		if rv.IsNil() {
			return nil
		}
		obj := &object{}
		keys := rv.MapKeys()
		names := make([]string, len(keys))
		for i, k := range keys {
			names[i] = fmt.Sprint(k.Interface())
		}
		idx := make([]int, len(keys))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool { return names[idx[a]] < names[idx[b]] })
		for _, i := range idx {
			if redacted(names[i]) {
				obj.set(names[i], Redacted)
				continue
			}
			obj.set(names[i], sanitizeValue(rv.MapIndex(keys[i]), depth+1))
		}
		return obj
	case reflect.Struct:
		obj := &object{}
		t := rv.Type()
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			name := sf.Name
			omitEmpty := false
			if tag, ok := sf.Tag.Lookup("json"); ok {
				parts := strings.Split(tag, ",")
				if parts[0] == "-" && len(parts) == 1 {
					continue
				}
				if parts[0] != "" {
					name = parts[0]
				}
				for _, p := range parts[1:] {
					if p == "omitempty" || p == "omitzero" {
						omitEmpty = true
					}
				}
			}
			fv := rv.Field(i)
			if omitEmpty && fv.IsZero() {
				continue
			}
			if redacted(name) || redacted(sf.Name) {
				obj.set(name, Redacted)
				continue
			}
			obj.set(name, sanitizeValue(fv, depth+1))
		}
		return obj
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil
		}
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			if rv.Kind() == reflect.Array {
				b := make([]byte, rv.Len())
				reflect.Copy(reflect.ValueOf(b), rv)
				return hex.EncodeToString(b) // fixed-size digests read better as hex
			}
			return rv.Bytes() // encoded as base64, like encoding/json
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = sanitizeValue(rv.Index(i), depth+1)
		}
		return out
	case reflect.String:
		return rv.String()
	case reflect.Bool:
		return rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint()
	case reflect.Float32, reflect.Float64:
		return rv.Float()
	case reflect.Invalid:
		return nil
	default:
		return fmt.Sprintf("%v", rv)
	}
}

// flattenError renders an error as {name, message, reason_code, details}
// (spec 000 ch. 3). name is "DomainError" when the chain holds one, else the
// error's Go type; reason_code and details come from the first DomainError
// in the chain and are null otherwise.
func flattenError(err error, depth int) *object {
	obj := &object{}
	name := fmt.Sprintf("%T", err)
	var code, details any
	if de, ok := domainerr.As(err); ok {
		name = "DomainError"
		code = de.Code
		if de.Details != nil {
			details = sanitize(de.Details, depth+1)
		}
	}
	obj.set("name", name)
	obj.set("message", err.Error())
	obj.set("reason_code", code)
	obj.set("details", details)
	return obj
}
