package corebalance

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/zcgw/zcgw/formats/fixed"
)

// FuzzReader: whatever the bytes, the Reader and Validate agree, never
// panic, report only *fixed.ErrorList errors, and a file they accept is
// rewritten by the Writer to a file that validates with the same summary
// figures.
func FuzzReader(f *testing.F) {
	b := golden(f)
	f.Add(b)
	f.Add(b[:len(b)-(RecordLen+2)])
	f.Add(bytes.ReplaceAll(b, []byte("\r\n"), nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		sum, verr := ValidateMax(bytes.NewReader(data), 1<<20)
		var list *fixed.ErrorList
		if verr != nil && !errors.As(verr, &list) {
			t.Fatalf("Validate: %T %v", verr, verr)
		}
		r := NewReader(bytes.NewReader(data))
		var recs []Record
		bad := false
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if !errors.As(err, &list) {
					t.Fatalf("Next: %T %v", err, err)
				}
				bad = true
				continue
			}
			recs = append(recs, rec)
		}
		if bad != (verr != nil) {
			t.Fatalf("Reader bad=%v, Validate err=%v", bad, verr)
		}
		if bad {
			return
		}
		var out bytes.Buffer
		w := NewWriter(&out)
		for _, rec := range recs {
			switch v := rec.(type) {
			case *Header:
				if err := w.WriteHeader(v); err != nil {
					t.Fatal(err)
				}
			case *Detail:
				if err := w.WriteDetail(v); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		again, err := Validate(&out)
		if err != nil {
			t.Fatalf("rewritten file refused: %v", err)
		}
		if again.Count != sum.Count || again.BalanceTotal != sum.BalanceTotal || again.HashTotal != sum.HashTotal || again.Header != sum.Header {
			t.Fatalf("rewritten %+v, original %+v", again, sum)
		}
	})
}
