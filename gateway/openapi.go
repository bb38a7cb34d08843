package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// OpenAPIPath serves the OpenAPI 3.1 document of every route.
const OpenAPIPath = "/api/openapi.json"

// errorComponent is the one schema of every error body.
const errorComponent = "domainerr.Body"

// ingressOps are the 13 bank ingress commands (bankapi.Commands), each
// with its request type (bankapi.NewRequest) and the response type of
// the adapter method that answers it (adapter.Dispatch calls
// (*Adapter).X(ctx, bankapi.XRequest) (bankapi.YResponse, error)).
func ingressOps() []op {
	resp := map[reflect.Type]reflect.Type{}
	ctxType, errType := reflect.TypeFor[context.Context](), reflect.TypeFor[error]()
	at := reflect.TypeFor[*adapter.Adapter]()
	for i := 0; i < at.NumMethod(); i++ {
		m := at.Method(i).Type // In(0) is the receiver
		if m.NumIn() == 3 && m.NumOut() == 2 && m.In(1) == ctxType && m.Out(1) == errType {
			resp[m.In(2)] = m.Out(0)
		}
	}
	ops := make([]op, 0, len(bankapi.Commands))
	for _, c := range bankapi.Commands {
		req, _ := bankapi.NewRequest(c)
		rt := reflect.TypeOf(req).Elem()
		out, ok := resp[rt]
		if !ok {
			panic(fmt.Sprintf("gateway/openapi: no adapter method answers %s (%s)", c, rt))
		}
		ops = append(ops, op{path: "/bank/{bank_id}/zc-ingress/" + string(c), summary: "Bank ingress: " + string(c),
			auth: authIngress, request: reflect.New(rt).Elem().Interface(), bodyOptional: true, openBody: true,
			responses: []response{{status: 200, body: reflect.New(out).Elem().Interface()}},
			errors:    []int{400, 401, 404, 409, 415, 502, 503}})
	}
	return ops
}

// OpenAPI returns the OpenAPI 3.1 document of s's routes (JSON), built
// from routeTable and the Go types of the bodies.
func (s *Server) OpenAPI() []byte {
	s.openapiOnce.Do(func() {
		b, err := json.MarshalIndent(buildOpenAPI(s.routeTable()), "", "  ")
		if err != nil {
			panic(fmt.Sprintf("gateway/openapi: %v", err))
		}
		s.openapiDoc = b
	})
	return s.openapiDoc
}

func (s *Server) serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	writeRaw(w, http.StatusOK, s.OpenAPI())
}

var requestIDHeader = map[string]any{"$ref": "#/components/headers/" + HeaderRequestID}

var pathParamRE = regexp.MustCompile(`\{([a-z_]+)\}`)

// openAPIDoc orders the document's top level as readers expect.
type openAPIDoc struct {
	OpenAPI    string                    `json:"openapi"`
	Info       map[string]any            `json:"info"`
	Paths      map[string]map[string]any `json:"paths"`
	Components map[string]any            `json:"components"`
}

func buildOpenAPI(table []route) openAPIDoc {
	g := newSchemaGen()
	errRef := g.ref(reflect.TypeFor[domainerr.Body]())
	// The error body's codes and categories are closed sets: the catalog.
	errProps := g.components[errorComponent].(map[string]any)["properties"].(map[string]any)
	codes := []string{domainerr.InternalReasonCode}
	for c := range domainerr.Codes() {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	errProps["reason_code"] = map[string]any{"type": "string", "enum": slices.Compact(codes)}
	errProps["category"] = map[string]any{"type": "string", "enum": domainerr.Categories}
	paths := map[string]map[string]any{}
	for _, r := range table {
		if r.fallback {
			continue
		}
		method, rpath := r.methodPath()
		for _, o := range r.ops {
			p := o.path
			if p == "" {
				p = rpath
			}
			if paths[p] == nil {
				paths[p] = map[string]any{}
			}
			paths[p][strings.ToLower(method)] = g.operation(method, p, o)
		}
	}
	errResp := map[string]any{"description": "the catalog error body (spec 004 エラーカタログ); request_id equals X-Request-Id",
		"headers": map[string]any{
			HeaderRequestID: requestIDHeader,
			"Retry-After":   map[string]any{"$ref": "#/components/headers/Retry-After"},
		},
		"content": map[string]any{"application/json": map[string]any{"schema": errRef}}}
	return openAPIDoc{
		OpenAPI: "3.1.0",
		Info: map[string]any{"title": "zcgw gateway", "version": SchemaCurrent,
			"description": "Every route of the zcgw gateway: /api, the bank ingress, /internal and the probes. " +
				"Generated from the gateway's route table and the Go types of its bodies (docs/gateway.md)."},
		Paths: paths,
		Components: map[string]any{
			"schemas":   g.components,
			"responses": map[string]any{"Error": errResp},
			"headers": map[string]any{
				HeaderRequestID: map[string]any{"required": true, "schema": map[string]any{"type": "string", "minLength": 1},
					"description": "the request's id: the client's when usable, else req-<uuid> (every response)"},
				"Retry-After": map[string]any{"schema": map[string]any{"type": "string"},
					"description": "seconds; on retryable errors (RATE_LIMIT, DOWNSTREAM, TIMEOUT)"},
				"Idempotent-Replayed": map[string]any{"schema": map[string]any{"type": "string", "enum": []string{"true"}},
					"description": "the stored answer of an earlier request with the same idempotency key"},
			},
			"securitySchemes": map[string]any{
				"apiKey":     map[string]any{"type": "apiKey", "in": "header", "name": "X-Api-Key"},
				"bearer":     map[string]any{"type": "http", "scheme": "bearer"},
				"cronSecret": map[string]any{"type": "apiKey", "in": "header", "name": HeaderCronSecret},
				"zcSignature": map[string]any{"type": "apiKey", "in": "header", "name": "X-ZC-Signature",
					"description": "Ed25519 (or HMAC) over the request, with X-ZC-Key-Id, X-ZC-Sig-Time and X-ZC-Sig-Nonce (spec 004)"},
			},
		},
	}
}

func (g *schemaGen) operation(method, path string, o op) map[string]any {
	out := map[string]any{"summary": o.summary, "operationId": operationID(method, path)}
	var params []any
	for _, m := range pathParamRE.FindAllStringSubmatch(path, -1) {
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
	}
	for _, p := range o.params {
		q := map[string]any{"name": p.name, "in": p.in, "schema": map[string]any{"type": "string"}}
		if p.required {
			q["required"] = true
		}
		if p.description != "" {
			q["description"] = p.description
		}
		params = append(params, q)
	}
	if len(params) > 0 {
		out["parameters"] = params
	}
	if o.request != nil {
		in := &schemaGen{components: g.components, names: g.names, input: true, openInput: o.openBody}
		out["requestBody"] = map[string]any{"required": !o.bodyOptional,
			"description": "an absent member is its zero value; the handler's validation (400) names any it needs",
			"content":     map[string]any{"application/json": map[string]any{"schema": in.of(reflect.TypeOf(o.request))}}}
	}
	switch o.auth {
	case authAPI, authParticipant, authOperator:
		out["security"] = []any{map[string]any{"apiKey": []string{}}, map[string]any{"bearer": []string{}}, map[string]any{"cronSecret": []string{}}}
	case authCron:
		out["security"] = []any{map[string]any{"cronSecret": []string{}}}
	case authIngress:
		out["security"] = []any{map[string]any{"zcSignature": []string{}}}
	case authBank:
		out["security"] = []any{map[string]any{"apiKey": []string{}}, map[string]any{"bearer": []string{}}}
	default:
		out["security"] = []any{}
	}
	responses := map[string]any{"default": map[string]any{"$ref": "#/components/responses/Error"}}
	for _, r := range o.responses {
		t := reflect.TypeOf(r.body)
		schema := g.of(t)
		if r.open {
			schema = g.open(t)
		}
		content := map[string]any{"application/json": map[string]any{"schema": schema}}
		if r.text {
			content["text/plain"] = map[string]any{"schema": map[string]any{"type": "string"}}
		}
		desc := r.description
		if desc == "" {
			desc = http.StatusText(r.status)
		}
		headers := map[string]any{HeaderRequestID: requestIDHeader}
		if r.replay {
			headers["Idempotent-Replayed"] = map[string]any{"$ref": "#/components/headers/Idempotent-Replayed"}
		}
		responses[strconv.Itoa(r.status)] = map[string]any{"description": desc, "headers": headers, "content": content}
	}
	errs := append([]int(nil), o.errors...)
	sort.Ints(errs)
	for _, st := range errs {
		responses[strconv.Itoa(st)] = map[string]any{"$ref": "#/components/responses/Error"}
	}
	out["responses"] = responses
	return out
}

// operationID is method plus the path's words in camel case:
// GET /api/transactions/{txid}/events is getApiTransactionsTxidEvents.
func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, w := range strings.FieldsFunc(path, func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9') }) {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}
