package strictjson

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

type amount struct {
	Value    int64  `json:"value"`
	Currency string `json:"currency"`
}

type inner struct {
	BankID string `json:"bank_id"`
}

type base struct {
	Lane string `json:"lane"`
}

type request struct {
	base
	Amount  amount            `json:"amount"`
	Payer   *inner            `json:"payer"`
	Tags    []inner           `json:"tags"`
	Extra   map[string]inner  `json:"extra"`
	Raw     json.RawMessage   `json:"raw"`
	Any     any               `json:"any"`
	Skipped string            `json:"-"`
	Labels  map[string]string `json:"labels"`
}

func TestDecodeRefusals(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		unknown bool
		problem Problem
		path    string
		offset  int64
	}{
		{"duplicate top-level key", `{"lane":"A","lane":"B"}`, true, ProblemDuplicateKey, "/lane", 12},
		{"duplicate nested key", `{"amount":{"value":1,"value":2}}`, true, ProblemDuplicateKey, "/amount/value", 21},
		{"duplicate key inside an array element", `{"tags":[{"bank_id":"1"},{"bank_id":"1","bank_id":"2"}]}`, true, ProblemDuplicateKey, "/tags/1/bank_id", 40},
		{"duplicate key inside a map value", `{"extra":{"x":{"bank_id":"1","bank_id":"2"}}}`, true, ProblemDuplicateKey, "/extra/x/bank_id", 29},
		{"duplicate key inside a raw message", `{"raw":{"a":1,"a":2}}`, true, ProblemDuplicateKey, "/raw/a", 14},
		{"duplicate key inside an interface", `{"any":{"a":{"b":1,"b":1}}}`, true, ProblemDuplicateKey, "/any/a/b", 19},
		{"duplicate via escape", `{"lane":"A","l\u0061ne":"B"}`, true, ProblemDuplicateKey, "/lane", 12},
		{"key in another case", `{"Amount":{"value":1}}`, false, ProblemKeyCase, "/Amount", 1},
		{"nested key in another case", `{"payer":{"BANK_ID":"1"}}`, false, ProblemKeyCase, "/payer/BANK_ID", 10},
		{"promoted field in another case", `{"LANE":"x"}`, false, ProblemKeyCase, "/LANE", 1},
		{"unknown field when refused", `{"amount":{"value":1,"cents":2}}`, true, ProblemUnknownField, "/amount/cents", 21},
		{"tag '-' field is unknown", `{"Skipped":"x"}`, true, ProblemUnknownField, "/Skipped", 1},
		{"invalid UTF-8", "{\"lane\":\"a\xffb\"}", true, ProblemUTF8, "", 10},
		{"lone high surrogate", `{"lane":"\ud800x"}`, true, ProblemSurrogate, "", 9},
		{"lone low surrogate", `{"lane":"\udc00"}`, true, ProblemSurrogate, "", 9},
		{"trailing document", `{"lane":"A"} {}`, true, ProblemTrailingData, "", 13},
		{"trailing garbage", `{"lane":"A"}x`, true, ProblemTrailingData, "", 12},
		{"empty", ``, true, ProblemEmpty, "", 0},
		{"spaces", "  \n", true, ProblemEmpty, "", 0},
		{"syntax", `{"lane":`, true, ProblemSyntax, "/lane", 8},
		{"wrong type", `{"amount":{"value":"x"}}`, true, ProblemType, "/amount/value", 22},
		{"too deep", `{"any":` + repeat("[", 40) + repeat("]", 40) + `}`, true, ProblemDepth, "/any" + repeat("/0", 31), 38},
	}
	for _, c := range cases {
		var r request
		err := Decode([]byte(c.in), &r, Options{DisallowUnknownFields: c.unknown})
		de, ok := domainerr.As(err)
		e, ok2 := As(err)
		if !ok || !ok2 || de.Code != "INVALID_REQUEST" {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if e.Problem != c.problem || e.Path != c.path || e.Offset != c.offset {
			t.Errorf("%s: got %s %q @%d, want %s %q @%d (%v)", c.name, e.Problem, e.Path, e.Offset, c.problem, c.path, c.offset, err)
		}
		if de.Details["problem"] != string(c.problem) || de.Details["field"] != c.path || de.Details["byte_offset"] != c.offset {
			t.Errorf("%s: details %v", c.name, de.Details)
		}
	}
}

func repeat(s string, n int) string {
	out := ""
	for i := 0; i < n; i++ {
		out += s
	}
	return out
}

func TestDecodeAccepts(t *testing.T) {
	in := `{"lane":"EXPRESS","amount":{"value":1200,"currency":"JPY"},"payer":{"bank_id":"001"},` +
		`"tags":[{"bank_id":"1"},{"bank_id":"1"}],"extra":{"x":{"bank_id":"2"},"y":{"bank_id":"2"}},` +
		`"labels":{"Lane":"x","lane":"y"},"raw":{"a":[1,{"a":1}]},"any":"\ud83d\ude00 ok","unknown":{"k":1}}`
	var r request
	if err := Decode([]byte(in), &r, Options{}); err != nil {
		t.Fatal(err)
	}
	if r.Lane != "EXPRESS" || r.Amount.Value != 1200 || r.Payer.BankID != "001" || len(r.Tags) != 2 || r.Extra["y"].BankID != "2" ||
		r.Labels["Lane"] != "x" || r.Any != "😀 ok" {
		t.Fatalf("decoded %+v", r)
	}
	// The same document refuses its unknown member when asked to.
	if err := Decode([]byte(in), &r, Options{DisallowUnknownFields: true}); err == nil {
		t.Fatal("unknown member accepted with DisallowUnknownFields")
	}
	v, err := Value([]byte(`{"n":12345678901234567890,"s":"é"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v, map[string]any{"n": json.Number("12345678901234567890"), "s": "é"}) {
		t.Fatalf("Value = %#v", v)
	}
	if _, err := Value([]byte(`{"a":1,"a":1}`)); err == nil {
		t.Fatal("Value accepted a duplicate key")
	}
}

func TestCheckContentType(t *testing.T) {
	for ct, ok := range map[string]bool{
		"application/json":                  true,
		"application/json; charset=utf-8":   true,
		"Application/JSON; Charset=UTF-8":   true,
		"application/json;charset=latin-1":  false,
		"text/plain":                        false,
		"application/x-www-form-urlencoded": false,
		"application/jsonx":                 false,
		"":                                  false,
		"application/json; =":               false,
	} {
		if err := CheckContentType(ct); (err == nil) != ok {
			t.Errorf("%q: %v", ct, err)
		}
	}
}
