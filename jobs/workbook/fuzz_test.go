package workbook

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadDecisions feeds arbitrary bytes to ReadDecisions as a reviewed
// workbook: it must refuse or accept, never panic, and whatever it accepts
// must only carry the three decisions.
func FuzzReadDecisions(f *testing.F) {
	dir := f.TempDir()
	p := filepath.Join(dir, FileName("2026-12-01"))
	if _, err := Write(p, sampleReport()); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte("PK\x03\x04"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "in.xlsx")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		rev, err := ReadDecisions(path, expect("2026-12-01"))
		if err != nil {
			return
		}
		for _, d := range rev.Decisions {
			if d.Resolution != Retry && d.Resolution != WriteOff && d.Resolution != Escalate {
				t.Fatalf("accepted resolution %q", d.Resolution)
			}
		}
	})
}
