package coreacct

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Key
		why  string
	}{
		{"100-1-0000001", Key{"100", 1, "0000001"}, ""},
		{"999-9-1234567", Key{"999", 9, "1234567"}, ""},
		{"100-3-0000001", Key{}, "account type 3"},
		{"100-1-000001", Key{}, "wrong shape"},
		{"10a-1-0000001", Key{}, "not digits"},
		{"", Key{}, "wrong shape"},
		{"100-1-0000001-1", Key{}, "wrong shape"},
	} {
		got, err := Parse(tc.in)
		if tc.why == "" {
			if err != nil || got != tc.want || got.String() != tc.in {
				t.Errorf("Parse(%q) = %+v, %v", tc.in, got, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("Parse(%q) err = %v, want *Error with %q", tc.in, err, tc.why)
			continue
		}
		if len(tc.in) > 4 && strings.Contains(err.Error(), tc.in) {
			t.Errorf("Parse(%q) error %q holds the full input", tc.in, err)
		}
	}
}

func TestMask(t *testing.T) {
	for in, want := range map[string]string{
		"100-1-1234567":         "100-1-***4567",
		"123":                   "***",
		"ABCDEFGH":              "****EFGH",
		"x\n\x00yz":             "*****",
		strings.Repeat("9", 40): strings.Repeat("*", 16) + "9999",
	} {
		if got := Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
	if got := (Key{"1", 2, "89"}).Masked(); got != "001-2-***0089" {
		t.Errorf("Masked = %q", got)
	}
}

func ExampleMask() {
	fmt.Println(Mask("100-1-1234567"))
	// Output: 100-1-***4567
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"100-1-0000001", "100-3-0000001", "", "---", "100-1-00000019"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := Parse(s)
		if err == nil && k.String() != s {
			t.Fatalf("Parse(%q).String() = %q", s, k.String())
		}
		var e *Error
		if err != nil && (!errors.As(err, &e) || len(s) > 4 && !strings.Contains(s, "*") && strings.Contains(e.Value, s)) {
			t.Fatalf("error %q: want an *Error whose value does not hold the input", err)
		}
	})
}
