package ident

import (
	"testing"
	"unicode/utf8"
)

// FuzzCheck: Check never panics, accepts only bytes of the kind's charset
// within its bound, and its refusal is always INVALID_REQUEST.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"TX-1", "TX-1\n", "\x00", "日本", "h:abc", "FD:0:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, k := range Kinds {
			err := Check(k, k.Name, v)
			if err == nil {
				if len(v) > k.Max || !utf8.ValidString(v) {
					t.Fatalf("%s accepted %q", k.Name, v)
				}
				for i := 0; i < len(v); i++ {
					if v[i] <= ' ' || v[i] > '~' {
						t.Fatalf("%s accepted byte 0x%02x", k.Name, v[i])
					}
				}
			}
		}
	})
}
