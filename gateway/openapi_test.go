package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/dns"
)

// loadOpenAPI parses and validates b as an OpenAPI 3.1 document.
func loadOpenAPI(t *testing.T, b []byte) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(b)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document is not valid OpenAPI: %v", err)
	}
	return doc
}

// fullConfig mounts a job runner and the DNS service as a node does, so
// the delegated routes are registered too.
func fullConfig(c *Config) {
	c.Jobs = http.NotFoundHandler()
	c.DNS = dns.New(c.DB, finality.New(c.Clock), openGate{}, c.Clock, nil).Handler()
	c.FX = newFXService(c)
}

// openGate is a writable gate that lets every write through.
type openGate struct{}

func (openGate) CheckWritable(context.Context, *store.Tx) error { return nil }

var pathParam = regexp.MustCompile(`\{[a-z_]+\}`)

// TestOpenAPIMatchesTheMux: every operation of the document reaches a
// registered, non-fallback pattern of the real mux (and, behind the bank
// ingress and DNS patterns, a path their own handler serves: a known
// ingress command, a DNS action), and every registered pattern is reached
// by some operation. It fails when a route is missing from the document
// or the document names a route that does not exist.
func TestOpenAPIMatchesTheMux(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*Config)
	}{{"bare", nil}, {"node", fullConfig}} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, c.mod)
			doc := loadOpenAPI(t, f.srv.OpenAPI())
			table := map[string]route{}
			for _, r := range f.srv.routeTable() {
				if !r.fallback && len(r.ops) == 0 {
					t.Errorf("route %q is registered without a description (ops)", r.pattern)
				}
				table[r.pattern] = r
			}
			mux := f.srv.routes()
			reached := map[string]bool{}
			ingress := map[bankapi.Command]bool{}
			for path, item := range doc.Paths.Map() {
				for method := range item.Operations() {
					req := httptest.NewRequest(method, pathParam.ReplaceAllString(path, "p1"), nil)
					_, pattern := mux.Handler(req)
					r, ok := table[pattern]
					if !ok || r.fallback {
						t.Errorf("the document names %s %s, but the mux serves it with %q (no such route)", method, path, pattern)
						continue
					}
					reached[pattern] = true
					switch pattern {
					case "POST /bank/{bank_id}/zc-ingress/{command}":
						cmd := bankapi.Command(path[strings.LastIndex(path, "/")+1:])
						if !cmd.Valid() {
							t.Errorf("the document names ingress command %q, which is not one of bankapi.Commands", cmd)
						}
						if _, p := adapter.Mux().(interface {
							Handler(*http.Request) (http.Handler, string)
						}).Handler(req); p != pattern {
							t.Errorf("the adapter serves %s with %q, the gateway with %q", path, p, pattern)
						}
						ingress[cmd] = true
					case "POST /internal/dns/{action}", "GET /internal/boj-positions":
						if _, p := f.cfg.DNS.(*http.ServeMux).Handler(req); p == "" {
							t.Errorf("the document names %s %s, which the DNS handler does not serve", method, path)
						}
					}
				}
			}
			for _, r := range f.srv.routeTable() {
				if !r.fallback && !reached[r.pattern] {
					t.Errorf("route %q is missing from the document", r.pattern)
				}
			}
			for _, cmd := range bankapi.Commands {
				if !ingress[cmd] {
					t.Errorf("ingress command %s is missing from the document", cmd)
				}
			}
		})
	}
}

// TestOpenAPINamesEveryDNSAction: the DNS handler serves no POST action
// the document leaves out (the gateway mounts it under one pattern).
func TestOpenAPINamesEveryDNSAction(t *testing.T) {
	f := newFixture(t, fullConfig)
	doc := loadOpenAPI(t, f.srv.OpenAPI())
	src, err := os.ReadFile(filepath.Join("..", "jobs", "dns", "http.go"))
	if err != nil {
		t.Fatal(err)
	}
	actions := regexp.MustCompile(`post\("(/internal/dns/[a-z-]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(actions) == 0 {
		t.Fatal("found no DNS action in jobs/dns/http.go")
	}
	for _, a := range actions {
		if doc.Paths.Find(a[1]) == nil || doc.Paths.Find(a[1]).Post == nil {
			t.Errorf("DNS action POST %s is missing from the document", a[1])
		}
	}
}

// TestRoutesRegisterOnlyThroughTheTable: the gateway registers routes in
// one place (routes, from routeTable), so the document cannot miss one
// registered beside the table.
func TestRoutesRegisterOnlyThroughTheTable(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	var found []string
	re := regexp.MustCompile(`\.(HandleFunc|Handle)\(`)
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if re.MatchString(line) {
				found = append(found, name+":"+strings.TrimSpace(line)+" (line "+strconv.Itoa(i+1)+")")
			}
		}
	}
	sort.Strings(found)
	if len(found) != 1 || !strings.HasPrefix(found[0], "routes.go:mux.HandleFunc(r.pattern, r.handler)") {
		t.Errorf("routes are registered outside routeTable: %q", found)
	}
}

// TestOpenAPIServedWithoutCredentials: GET /api/openapi.json answers the
// document to a caller with no credentials (it carries no business data).
func TestOpenAPIServedWithoutCredentials(t *testing.T) {
	f := newFixture(t, nil)
	r := f.do("GET", OpenAPIPath, nil, "")
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %d %s %.200s", OpenAPIPath, r.status, r.header.Get("Content-Type"), r.body)
	}
	doc := loadOpenAPI(t, r.body)
	if doc.Paths.Find("/api/transfers") == nil || doc.Components.Schemas[errorComponent] == nil {
		t.Errorf("served document lacks /api/transfers or the error component")
	}
}

// TestOpenAPITimeoutSweepWithoutRunner: the route a node never registers
// (POST /internal/cron/timeout-sweep, only without a job runner) answers
// what the document says, validated by kin-openapi like the node's routes
// in gateway/node TestOpenAPIResponsesOfARealNode.
func TestOpenAPITimeoutSweepWithoutRunner(t *testing.T) {
	f := newFixture(t, nil)
	doc := loadOpenAPI(t, f.srv.OpenAPI())
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		hdr    map[string]string
		status int
	}{{map[string]string{HeaderCronSecret: cron}, 200}, {nil, 403}} {
		r := f.do("POST", "/internal/cron/timeout-sweep", c.hdr, "")
		if r.status != c.status {
			t.Fatalf("timeout-sweep: %d %s, want %d", r.status, r.body, c.status)
		}
		req := httptest.NewRequest("POST", "/internal/cron/timeout-sweep", nil)
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Fatal(err)
		}
		if route.Path != "/internal/cron/timeout-sweep" || route.Operation.Responses.Status(r.status) == nil {
			t.Fatalf("the document routes it to %s without status %d", route.Path, r.status)
		}
		in := &openapi3filter.ResponseValidationInput{RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
			Status: r.status, Header: r.header, Options: &openapi3filter.Options{IncludeResponseStatus: true}}
		in.SetBodyBytes(r.body)
		if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
			t.Errorf("%d %s does not match the document: %v", r.status, r.body, err)
		}
	}
}
