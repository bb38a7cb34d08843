package domainerr

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The category table of spec 004 (カテゴリと HTTP ステータス対応), row for row.
func TestCategoryStatusAndRetry(t *testing.T) {
	cases := []struct {
		cat       Category
		status    int
		retryable bool
	}{
		{Validation, 400, false},
		{Auth, 401, false},
		{NotFound, 404, false},
		{Conflict, 409, false},
		{RateLimit, 429, true},
		{Invariant, 500, false},
		{Internal, 500, false},
		{Downstream, 502, true},
		{Timeout, 504, true},
	}
	if len(cases) != len(Categories) {
		t.Fatalf("table covers %d categories, package declares %d", len(cases), len(Categories))
	}
	for i, c := range cases {
		if Categories[i] != c.cat {
			t.Errorf("Categories[%d] = %s, spec order has %s", i, Categories[i], c.cat)
		}
		if got := HTTPStatus(c.cat); got != c.status {
			t.Errorf("HTTPStatus(%s) = %d, want %d", c.cat, got, c.status)
		}
		if got := Retryable(c.cat); got != c.retryable {
			t.Errorf("Retryable(%s) = %v, want %v", c.cat, got, c.retryable)
		}
	}
	if got := HTTPStatus("BOGUS"); got != 500 {
		t.Errorf("unknown category status = %d, want 500", got)
	}
}

// Spec 000 ch. 2 queue policy: DOWNSTREAM/TIMEOUT/RATE_LIMIT retry, every
// other DomainError is acked, any non-DomainError is retried.
func TestShouldRetry(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"validation", New("INVALID_AMOUNT", "neg", nil), false},
		{"auth", New("UNAUTHORIZED", "no key", nil), false},
		{"not found", New("TX_NOT_FOUND", "x", nil), false},
		{"conflict", New("H_LIMIT_EXCEEDED", "x", nil), false},
		{"rate limit", New("RATE_LIMITED", "x", nil), true},
		{"invariant", New("OWNERSHIP_VIOLATION", "x", nil), false},
		{"internal", New("ZC_SIGNING_NOT_CONFIGURED", "x", nil), false},
		{"downstream", New("BANK_ERROR", "x", nil), true},
		{"timeout", New("BANK_TIMEOUT", "x", nil), true},
		{"read-only quorum", New("SYSTEM_QUORUM_LOSS_READ_ONLY", "x", nil), true},
		{"read-only bcp", New("SYSTEM_BCP_READ_ONLY", "x", nil), true},
		{"wrapped downstream", fmt.Errorf("lane: %w", New("IGS_ERROR", "x", nil)), true},
		{"wrapped conflict", fmt.Errorf("lane: %w", New("STATE_GUARD", "x", nil)), false},
		{"plain error", errors.New("disk on fire"), true},
		{"nil", nil, false},
	}
	for _, c := range cases {
		if got := ShouldRetry(c.err); got != c.want {
			t.Errorf("%s: ShouldRetry = %v, want %v", c.name, got, c.want)
		}
	}
}

// readSpecTable reads a tab-separated table copied verbatim from spec 004
// and returns code -> second column. "A / B" rows name two codes.
func readSpecTable(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if strings.HasPrefix(text, "#") || strings.HasPrefix(text, "reason_code\t") || text == "" {
			continue
		}
		cols := strings.Split(text, "\t")
		if len(cols) < 2 {
			t.Fatalf("%s:%d: want at least 2 tab-separated columns: %q", path, line, text)
		}
		for _, code := range strings.Split(cols[0], " / ") {
			code = strings.TrimSpace(code)
			if prev, dup := out[code]; dup && prev != cols[1] {
				t.Fatalf("%s:%d: %s listed as %s and %s", path, line, code, prev, cols[1])
			}
			out[code] = cols[1]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Every row of the spec's registered-code table is in the catalog with the
// spec's category.
func TestCatalogMatchesSpecRegisteredTable(t *testing.T) {
	spec := readSpecTable(t, "testdata/spec004_registered.tsv")
	if len(spec) < 100 {
		t.Fatalf("spec table has %d codes; testdata truncated?", len(spec))
	}
	for code, cat := range spec {
		if !Registered(code) {
			t.Errorf("%s: in spec 004 but not registered", code)
			continue
		}
		if got := CategoryOf(code); string(got) != cat {
			t.Errorf("%s: registered as %s, spec says %s", code, got, cat)
		}
		if _, direct := DirectStatus(code); direct {
			t.Errorf("%s: spec registers it by category, catalog marks it direct", code)
		}
	}
}

// Every row of the spec's direct-HTTP table is registered with its fixed
// status and the category the spec derives from that status.
func TestCatalogMatchesSpecDirectTable(t *testing.T) {
	spec := readSpecTable(t, "testdata/spec004_direct.tsv")
	for code, statusText := range spec {
		status, err := strconv.Atoi(statusText)
		if err != nil {
			t.Fatalf("%s: status %q", code, statusText)
		}
		got, ok := DirectStatus(code)
		if !ok || got != status {
			t.Errorf("%s: DirectStatus = %d,%v, spec says %d", code, got, ok, status)
		}
		if StatusOf(code) != status {
			t.Errorf("%s: StatusOf = %d, want %d", code, StatusOf(code), status)
		}
		if want := CategoryFromStatus(status); CategoryOf(code) != want {
			t.Errorf("%s: category %s, want %s", code, CategoryOf(code), want)
		}
		if e := New(code, "x", nil); e.HTTPStatus() != status {
			t.Errorf("%s: Error.HTTPStatus = %d, want %d", code, e.HTTPStatus(), status)
		}
	}
}

// The catalog holds nothing the spec does not name (the spec is the one
// source; additions go to the spec first).
func TestCatalogHasNoCodesOutsideSpec(t *testing.T) {
	reg := readSpecTable(t, "testdata/spec004_registered.tsv")
	dir := readSpecTable(t, "testdata/spec004_direct.tsv")
	// Codes the spec names outside the two tables: the intentional 422s in
	// the note under the category table, the 404 NOT_FOUND of 照会の認可, and
	// the 401s of the ZC→Bank ingress signature check.
	prose := map[string]int{
		"FOUR_EYES_REQUIRED": 422, "EVIDENCE_REQUIRED": 422, "A_OR_B_CONFIRMED": 422,
		"B_CONFIRMED": 422, "WINDOW_EXPIRED": 422, "NOT_CORRECTABLE": 422,
		"NOT_FOUND": 404, "INVALID_SIGNATURE": 401, "MISSING_SIGNATURE": 401,
	}
	for code, cat := range Codes() {
		_, inReg := reg[code]
		_, inDir := dir[code]
		status, inProse := prose[code]
		switch {
		case inReg || inDir:
		case inProse:
			if got, _ := DirectStatus(code); got != status {
				t.Errorf("%s: direct status %d, spec says %d", code, got, status)
			}
		default:
			t.Errorf("%s (%s) is registered but spec 004 does not name it", code, cat)
		}
	}
}

func TestCategoryFromStatus(t *testing.T) {
	cases := map[int]Category{400: Validation, 422: Validation, 401: Auth, 403: Auth, 404: NotFound,
		409: Conflict, 429: RateLimit, 502: Downstream, 504: Timeout, 500: Internal}
	for status, want := range cases {
		if got := CategoryFromStatus(status); got != want {
			t.Errorf("CategoryFromStatus(%d) = %s, want %s", status, got, want)
		}
	}
}

func TestJSONBody(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
		code int
	}{
		{
			name: "domain error with details",
			err: fmt.Errorf("reserve: %w", New("H_LIMIT_EXCEEDED", "h limit exceeded",
				map[string]any{"txid": "TX-001", "requested": 1000, "available": 500})),
			want: `{"error":"h limit exceeded","reason_code":"H_LIMIT_EXCEEDED","category":"CONFLICT","details":{"available":500,"requested":1000,"txid":"TX-001"},"request_id":"req-1"}`,
			code: 409,
		},
		{
			name: "nil details become an object",
			err:  Newf("TX_NOT_FOUND", "no transaction %s", "TX-9"),
			want: `{"error":"no transaction TX-9","reason_code":"TX_NOT_FOUND","category":"NOT_FOUND","details":{},"request_id":"req-2"}`,
			code: 404,
		},
		{
			name: "direct 422",
			err:  New("DAILY_LIMIT_EXCEEDED", "daily limit", nil),
			want: `{"error":"daily limit","reason_code":"DAILY_LIMIT_EXCEEDED","category":"VALIDATION","details":{},"request_id":"req-3"}`,
			code: 422,
		},
		{
			name: "plain error hides its text",
			err:  errors.New("sql: connection refused at 10.0.0.1"),
			want: `{"error":"internal error","reason_code":"INTERNAL","category":"INTERNAL","details":{},"request_id":"req-4"}`,
			code: 500,
		},
	}
	for i, c := range cases {
		b := JSON(c.err, fmt.Sprintf("req-%d", i+1))
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if string(raw) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, raw, c.want)
		}
		if b.Status != c.code {
			t.Errorf("%s: status %d, want %d", c.name, b.Status, c.code)
		}
	}
}

func TestWrapUnwrapAndIs(t *testing.T) {
	cause := errors.New("io")
	e := Wrap("BANK_ERROR", cause, "bank 5xx", map[string]any{"bank_id": "001"})
	wrapped := fmt.Errorf("call: %w", e)
	if !errors.Is(wrapped, cause) {
		t.Error("cause lost")
	}
	if !errors.Is(wrapped, New("BANK_ERROR", "", nil)) {
		t.Error("errors.Is by code failed")
	}
	if Code(wrapped) != "BANK_ERROR" || !Has(wrapped, "BANK_ERROR") || Has(wrapped, "BANK_TIMEOUT") {
		t.Errorf("Code/Has wrong: %q", Code(wrapped))
	}
	if e.Error() != "BANK_ERROR: bank 5xx: io" {
		t.Errorf("Error() = %q", e.Error())
	}
	if e.HTTPStatus() != 502 || !e.Retryable() {
		t.Error("BANK_ERROR should be 502 retryable")
	}
}

func ExampleJSON() {
	err := New("H_LIMIT_EXCEEDED", "h limit exceeded", map[string]any{"requested": 1000, "available": 500})
	body := JSON(fmt.Errorf("reserve: %w", err), "req-42")
	raw, _ := json.Marshal(body)
	fmt.Println(body.Status)
	fmt.Println(string(raw))
	// Output:
	// 409
	// {"error":"h limit exceeded","reason_code":"H_LIMIT_EXCEEDED","category":"CONFLICT","details":{"available":500,"requested":1000},"request_id":"req-42"}
}
