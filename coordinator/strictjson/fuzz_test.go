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
