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

// settings is a configuration file's shape, for the Config option.
type settings struct {
	Name    string            `json:"name"`
	Workers int               `json:"workers"`
	Small   int8              `json:"small"`
	Count   uint16            `json:"count"`
	Ratio   float32           `json:"ratio"`
	On      bool              `json:"on"`
	Limit   *int64            `json:"limit"`
	Quoted  int64             `json:"quoted,string"`
	Blob    []byte            `json:"blob"`
	Num     json.Number       `json:"num"`
	Banks   []settingsBank    `json:"banks"`
	Topics  map[string]string `json:"topics"`
}

type settingsBank struct {
	BankID   string `json:"bank_id"`
	Accounts []struct {
		Balance int64 `json:"opening_balance"`
	} `json:"accounts"`
}

// With Config every wrong value is refused by the walk at its exact place
// (Field in the configuration-file form, offset where the value starts),
// out-of-range integers as their own problem; unknown members carry the
// known names and the likely one.
func TestDecodeConfig(t *testing.T) {
	cases := []struct {
		name, in string
		problem  Problem
		field    string
		offset   int64
		reason   string
	}{
		{"string for int", `{"banks":[{},{"accounts":[{"opening_balance":"1000"}]}]}`, ProblemType,
			"banks[1].accounts[0].opening_balance", 45, `want an integer, got the string "1000"`},
		{"fraction", `{"workers":10.5}`, ProblemType, "workers", 11, "want an integer, got the number 10.5"},
		{"exponent", `{"workers":1e3}`, ProblemType, "workers", 11, "want an integer, got the number 1e3"},
		{"int8 range", `{"small":128}`, ProblemRange, "small", 9, "want an integer from -128 to 127, got the number 128"},
		{"int range", `{"workers":9223372036854775808}`, ProblemRange, "workers", 11,
			"want an integer from -9223372036854775808 to 9223372036854775807, got the number 9223372036854775808"},
		{"negative uint", `{"count":-1}`, ProblemRange, "count", 9, "want an integer from 0 to 65535, got the number -1"},
		{"float32 range", `{"ratio":1e39}`, ProblemRange, "ratio", 9, "want a number of 32 bits, got the number 1e39"},
		{"null for a string", `{"name":null}`, ProblemType, "name", 8, "want a string, got null"},
		{"bool as string", `{"on":"yes"}`, ProblemType, "on", 6, `want true or false, got the string "yes"`},
		{"object for an array", `{"banks":{}}`, ProblemType, "banks", 9, "want an array, got an object"},
		{"array for a map", `{"topics":[]}`, ProblemType, "topics", 10, "want an object, got an array"},
		{"number for bytes", `{"blob":1}`, ProblemType, "blob", 8, "want a base64 string, got the number 1"},
		{"string for a Number", `{"num":"1"}`, ProblemType, "num", 7, `want a number, got the string "1"`},
		{"unknown with suggestion", "{\n  \"bankz\":[]}", ProblemUnknownField, "bankz", 4,
			`unknown field: did you mean "banks"? (known: banks, blob, count, limit, name, num, on, quoted, ratio, small, topics, workers)`},
		{"unknown nested, nothing close", `{"banks":[{"zzz":1}]}`, ProblemUnknownField, "banks[0].zzz", 11, "unknown field (known: accounts, bank_id)"},
		{"case mismatch", `{"banks":[{"Bank_ID":"1"}]}`, ProblemKeyCase, "banks[0].Bank_ID", 11,
			`unknown field (names are case-sensitive): did you mean "bank_id"? (known: accounts, bank_id)`},
		{"repeated", `{"topics":{"a":"x","a":"y"}}`, ProblemDuplicateKey, "topics.a", 19, "repeated key"},
		{"truncated", `{"banks":[`, ProblemSyntax, "", 10, "the document ends early"},
		{"syntax", `{"on":tru}`, ProblemSyntax, "on", 9, "not valid JSON: invalid character '}' in literal true (expecting 'e')"},
	}
	for _, c := range cases {
		var s settings
		err := Decode([]byte(c.in), &s, Options{DisallowUnknownFields: true, Config: true})
		e, ok := As(err)
		if !ok || domainerr.Code(err) != ReasonCode {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if e.Problem != c.problem || e.Field != c.field || e.Offset != c.offset || e.Reason() != c.reason {
			t.Errorf("%s:\n got %s %q @%d %q\nwant %s %q @%d %q", c.name, e.Problem, e.Field, e.Offset, e.Reason(), c.problem, c.field, c.offset, c.reason)
		}
	}
	// A good document decodes as encoding/json would; null is fine for a
	// pointer, a slice and a map; ",string" members hold quoted values.
	in := `{"name":"n","workers":-4,"small":-128,"count":65535,"ratio":0.5,"on":true,"limit":null,"quoted":"42",` +
		`"blob":"AQI=","num":1.5e3,"banks":[{"bank_id":"001","accounts":[{"opening_balance":9223372036854775807}]}],"topics":null}`
	var got, std settings
	if err := Decode([]byte(in), &got, Options{DisallowUnknownFields: true, Config: true}); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(in), &std); err != nil || !reflect.DeepEqual(got, std) || got.Quoted != 42 || got.Banks[0].Accounts[0].Balance != 1<<63-1 {
		t.Fatalf("decoded %+v, encoding/json %+v (%v)", got, std, err)
	}
	// Without Config the same wrong value is encoding/json's refusal, as
	// the HTTP edges have always reported it.
	var s settings
	e, _ := As(Decode([]byte(`{"small":128}`), &s, Options{}))
	if e == nil || e.Problem != ProblemType || e.Path != "/small" || e.Detail != "a JSON number 128 cannot be int8" {
		t.Fatalf("without Config: %+v", e)
	}
}

func TestPositionAndSuggest(t *testing.T) {
	doc := []byte("{\n  \"a\": 1,\n\t\"kafak\": {}\n}")
	for off, want := range map[int64][2]int{0: {1, 1}, 4: {2, 3}, 13: {3, 2}, int64(len(doc)): {4, 2}, 999: {4, 2}} {
		if l, c := Position(doc, off); l != want[0] || c != want[1] {
			t.Errorf("Position(%d) = %d:%d, want %d:%d", off, l, c, want[0], want[1])
		}
	}
	known := []string{"addr", "banks", "kafka", "topics"}
	for key, want := range map[string]string{"kafak": "kafka", "topic": "topics", "bank": "banks", "adr": "addr", "zzz": "", "kafkaaaa": ""} {
		if got := Suggest(key, known); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", key, got, want)
		}
	}
}
