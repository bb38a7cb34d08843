package zengin

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/zcgw/zcgw/formats/fixed"
)

func addFixtureSeeds(f *testing.F) {
	names, _ := filepath.Glob(filepath.Join(fixtureDir, "*"))
	for _, n := range names {
		if ext := filepath.Ext(n); ext == ".py" || ext == ".md" {
			continue
		}
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte("1\r\n"))
	f.Add([]byte("\n\n\r"))
}

func checkPositions(t *testing.T, err error, size int) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var list *fixed.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error is not a *fixed.ErrorList: %v", err)
	}
	for _, e := range list.Errs {
		if e.Offset < 0 || e.Offset > int64(size) || e.Record < 0 || e.Column < 0 || e.Column > RecordLen+2 {
			t.Fatalf("error position out of range (size %d): %v", size, e)
		}
		_ = e.Error()
	}
	return list.Len()
}

// FuzzValidate: Validate never panics, every error points inside the file,
// and the streaming Reader finds exactly the same errors.
func FuzzValidate(f *testing.F) {
	addFixtureSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		sum, err := ValidateMax(bytes.NewReader(b), 1<<20)
		nv := checkPositions(t, err, len(b))
		ns, good := 0, 0
		for rec, e := range NewReader(bytes.NewReader(b)).Records() {
			if e != nil {
				ns += checkPositions(t, e, len(b))
				continue
			}
			if rec == nil {
				t.Fatal("nil record without error")
			}
			good++
		}
		if nv != ns {
			t.Fatalf("Validate found %d errors, the Reader %d", nv, ns)
		}
		if err == nil && good != sum.Records {
			t.Fatalf("valid file: %d records streamed, summary says %d", good, sum.Records)
		}
	})
}

// FuzzReader: whatever the Reader accepts from a valid file, the Writer
// writes back in canonical form, and that form reads back equal.
func FuzzReader(f *testing.F) {
	addFixtureSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		sum, err := Validate(bytes.NewReader(b))
		if err != nil {
			return
		}
		var recs []Record
		for rec, err := range NewReader(bytes.NewReader(b)).Records() {
			if err != nil {
				t.Fatalf("Reader error on a valid file: %v", err)
			}
			recs = append(recs, rec)
		}
		var out bytes.Buffer
		w := NewWriter(&out)
		gi := 0
		for _, rec := range recs {
			if _, ok := rec.(*Header); ok {
				w.ResultFile = sum.Groups[min(gi, len(sum.Groups)-1)].Result
				gi++
			}
			if err := w.Write(rec); err != nil {
				t.Fatalf("Writer refuses a record of a valid file: %v", err)
			}
		}
		// A valid file may end after a trailer without an end record only
		// if invalid, so Flush must succeed.
		if err := w.Flush(); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		again := readAll(t, out.Bytes())
		if !reflect.DeepEqual(again, recs) {
			t.Fatalf("canonical rewrite reads back differently")
		}
	})
}
