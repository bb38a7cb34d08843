package filedrop

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/zengin"
)

// FuzzCheck feeds arbitrary bytes to the whole-file check a dropped file
// gets before anything is applied. It must never panic; every error it
// reports must point inside the file; and a file it accepts must be one
// the Zengin reader streams without error (so apply never meets a record
// the check did not see).
func FuzzCheck(f *testing.F) {
	fx := newFixture(f, nil)
	b, _ := fx.p.Bank("001")
	f.Add(zenginFile(f, zengin.KindTransfer, "0001", recs(3)))
	f.Add(zenginFile(f, zengin.KindSalary, "0001", recs(1)))
	for _, name := range []string{"transfer.txt", "salary.dat", "debit_request.txt", "multi_group.txt"} {
		if data, err := os.ReadFile("../../fixtures/zengin/" + name); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := fx.p.check(fx.ctx, b, bytes.NewReader(data), map[string]string{})
		var errs *fixed.ErrorList
		switch {
		case errors.As(err, &errs):
			if len(errs.Errs) == 0 {
				t.Fatal("empty error list")
			}
			for _, e := range errs.Errs {
				if e.Record < 0 || e.Offset < 0 || e.Offset > int64(len(data)) {
					t.Fatalf("error outside the file: %v", e)
				}
			}
		case err != nil:
			t.Fatalf("unexpected error kind: %v", err)
		default:
			for _, err := range zengin.NewReader(bytes.NewReader(data)).Records() {
				if err != nil {
					t.Fatalf("accepted file does not stream: %v", err)
				}
			}
		}
	})
}
