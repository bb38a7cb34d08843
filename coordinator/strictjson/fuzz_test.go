package strictjson

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// FuzzDecode: the decoder never panics; every refusal is INVALID_REQUEST
// with an *Error whose offset lies inside the input; every accepted
// document is valid UTF-8 JSON that encoding/json decodes to the same
// value, and its generic value survives a re-encode and strict decode.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"lane":"EXPRESS","amount":{"value":1200,"currency":"JPY"},"payer":{"bank_id":"001"}}`,
		`{"lane":"A","lane":"B"}`, `{"Amount":{}}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `{} {}`, `[[[[[]]]]]`,
		`{"tags":[{"bank_id":"1","bank_id":"1"}]}`, `"\u00e9"`, `12e3`, `{"any":{"x":[1,2,{"y":null}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r request
		err := Decode(b, &r, Options{DisallowUnknownFields: true})
		if err != nil {
			checkRefusal(t, b, err)
		} else {
			if !utf8.Valid(b) || !json.Valid(b) {
				t.Fatalf("accepted %q", b)
			}
			var std request
			if err := json.Unmarshal(b, &std); err != nil || !reflect.DeepEqual(std, r) {
				t.Fatalf("strict %+v != encoding/json %+v (%v)", r, std, err)
			}
		}
		v, err := Value(b)
		if err != nil {
			checkRefusal(t, b, err)
			return
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("re-encode %#v: %v", v, err)
		}
		v2, err := Value(out)
		if err != nil || !reflect.DeepEqual(v, v2) {
			t.Fatalf("round trip of %q: %#v vs %#v (%v)", b, v, v2, err)
		}
	})
}

func checkRefusal(t *testing.T, b []byte, err error) {
	t.Helper()
	de, ok := domainerr.As(err)
	e, ok2 := As(err)
	if !ok || !ok2 || de.Code != "INVALID_REQUEST" || e.Problem == "" || e.Offset < 0 || e.Offset > int64(len(b)) {
		t.Fatalf("refusal of %q is not typed or located: %v", b, err)
	}
}

// typed is settings without ",string" (whose quoted values only
// encoding/json can judge).
type typed struct {
	Name    string            `json:"name"`
	Workers int               `json:"workers"`
	Small   int8              `json:"small"`
	Count   uint16            `json:"count"`
	Ratio   float32           `json:"ratio"`
	On      bool              `json:"on"`
	Limit   *int64            `json:"limit"`
	Blob    []byte            `json:"blob"`
	Num     json.Number       `json:"num"`
	Banks   []settingsBank    `json:"banks"`
	Topics  map[string]string `json:"topics"`
	Any     any               `json:"any"`
}

// FuzzDecodeConfig: with Config the walk decides alone (whatever it accepts
// encoding/json decodes); a refusal is a located *Error with a line,
// column and reason; an accepted document decodes as encoding/json does.
func FuzzDecodeConfig(f *testing.F) {
	for _, s := range []string{
		`{"name":"n","workers":4,"small":-128,"count":1,"ratio":0.5,"on":true,"limit":null,"blob":"AQI=","num":1,"banks":[{"bank_id":"1","accounts":[{"opening_balance":5}]}],"topics":{"a":"b"}}`,
		`{"workers":10.5}`, `{"small":128}`, `{"count":-1}`, `{"ratio":1e39}`, `{"name":null}`, `{"blob":1}`, `{"num":"1"}`,
		`{"blob":"!"}`, `{"blob":null}`, `{"bankz":[]}`, `{"banks":[{"Bank_ID":"1"}]}`, `{"banks":[`, `null`, `{"any":[1,{"a":null}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r typed
		opts := Options{DisallowUnknownFields: true, Config: true}
		err := Decode(b, &r, opts)
		if walk := check(b, reflect.TypeFor[typed](), opts); (walk == nil) != (err == nil) {
			t.Fatalf("the walk (%v) and encoding/json (%v) disagree on %q", walk, err, b)
		}
		if err != nil {
			checkRefusal(t, b, err)
			e, _ := As(err)
			if l, c := Position(b, e.Offset); l < 1 || c < 1 || e.Reason() == "" {
				t.Fatalf("%v: position %d:%d reason %q", err, l, c, e.Reason())
			}
			return
		}
		var std typed
		if err := json.Unmarshal(b, &std); err != nil || !reflect.DeepEqual(std, r) {
			t.Fatalf("strict %+v != encoding/json %+v (%v)", r, std, err)
		}
	})
}
