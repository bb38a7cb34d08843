package embedded

import (
	"bytes"
	"errors"
	"maps"
	"testing"
)

func TestPropertiesRoundTrip(t *testing.T) {
	cases := []map[string]string{
		nil,
		{"a": ""},
		{"bank": "0001", "kind": "posting", "zcgw.backout.reason": "日本語 reason"},
	}
	for _, props := range cases {
		enc := encodeProperties(props)
		got, err := decodeProperties(enc)
		if err != nil {
			t.Fatalf("%v: %v", props, err)
		}
		if !maps.Equal(got, props) {
			t.Fatalf("round trip %v -> %v", props, got)
		}
	}
	if !bytes.Equal(encodeProperties(map[string]string{"b": "2", "a": "1"}), []byte{1, 2, 1, 'a', 1, '1', 1, 'b', 1, '2'}) {
		t.Fatalf("encoding is not the documented sorted form: %x", encodeProperties(map[string]string{"b": "2", "a": "1"}))
	}
}

func TestPropertiesDecodeErrors(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		off  int
	}{
		{"empty", nil, 0},
		{"version", []byte{2, 0}, 0},
		{"truncated count", []byte{1}, 1},
		{"name past end", []byte{1, 1, 5, 'a'}, 2},
		{"bad name", []byte{1, 1, 1, '1', 0}, 3},
		{"reserved name", []byte{1, 1, 3, 'x', '-', 'a', 0}, 3},
		{"unsorted", []byte{1, 2, 1, 'b', 0, 1, 'a', 0}, 6},
		{"duplicate", []byte{1, 2, 1, 'a', 0, 1, 'a', 0}, 6},
		{"value past end", []byte{1, 1, 1, 'a', 9}, 4},
		{"trailing", []byte{1, 0, 0}, 2},
		{"huge count", []byte{1, 0xff, 0xff, 0x03}, 1},
		{"non-minimal varint", []byte{1, 0x80, 0x00}, 1},
	}
	for _, c := range cases {
		_, err := decodeProperties(c.in)
		var pe *PropertiesError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: err %v, want *PropertiesError", c.name, err)
		}
		if pe.Offset != c.off {
			t.Errorf("%s: offset %d, want %d (%v)", c.name, pe.Offset, c.off, err)
		}
	}
}

func FuzzDecodeProperties(f *testing.F) {
	f.Add(encodeProperties(nil))
	f.Add(encodeProperties(map[string]string{"bank": "0001", "kind": "posting"}))
	f.Add([]byte{1, 2, 1, 'b', 0, 1, 'a', 0})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		props, err := decodeProperties(b)
		if err != nil {
			var pe *PropertiesError
			if !errors.As(err, &pe) || pe.Offset < 0 || pe.Offset > len(b) {
				t.Fatalf("error %v is not a *PropertiesError within the input", err)
			}
			return
		}
		// The encoding is canonical: what decodes re-encodes to the same bytes.
		if again := encodeProperties(props); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding %x gives %x", b, again)
		}
	})
}
