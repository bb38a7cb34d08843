package zengin

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/zcgw/zcgw/formats/charset"
	"github.com/zcgw/zcgw/formats/fixed"
)

func TestParseRecord(t *testing.T) {
	b := readFixture(t, "debit_result.txt")
	rec, err := ParseRecord(KindDebit, b[2*122:2*122+120])
	if err != nil {
		t.Fatal(err)
	}
	if d := rec.(*DebitData); d.Result != ResultNoFunds || d.Amount != 12000 {
		t.Fatalf("record = %+v", d)
	}
	if tr, err := ParseRecord(KindDebit, b[4*122:4*122+120]); err != nil || tr.(*DebitTrailer).FailedAmount != 15300 {
		t.Fatalf("trailer = %+v, %v", tr, err)
	}
	if h, err := ParseRecord(0, b[:120]); err != nil || h.(*Header).Kind != KindDebit {
		t.Fatalf("header = %+v, %v", h, err)
	}
	if _, err := ParseRecord(KindDebit, b[:119]); !errors.Is(err, fixed.ShortRecord) {
		t.Fatalf("short: %v", err)
	}
	bad := bytes.Clone(b[122 : 122+120])
	bad[85] = 'x'
	bad[10] = 'a'
	_, err = ParseRecord(KindDebit, bad)
	var list *fixed.ErrorList
	if !errors.As(err, &list) || len(list.Errs) != 2 || list.Errs[0].Field != "BankName" || list.Errs[1].Field != "Amount" || list.Errs[1].Column != 86 {
		t.Fatalf("err = %v", err)
	}
}

func TestRecordValidate(t *testing.T) {
	d := &TransferData{Account: Account{BankCode: "1", BranchCode: "1", AccountType: 3, AccountNumber: "1"}}
	if err := d.Validate(); err == nil {
		t.Fatal("預金種目 3 accepted")
	}
	d.AccountType = 4
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseRecord: one record alone never panics, and what it accepts
// re-encodes to the same canonical bytes.
func FuzzParseRecord(f *testing.F) {
	for _, name := range []string{"transfer.txt", "debit_result.txt", "salary.dat"} {
		b := readFixture(f, name)
		for i := 0; i+120 <= len(b); i += 122 {
			f.Add(uint8(21), b[i:i+120])
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, b []byte) {
		rec, err := ParseRecord(Kind(kind), b)
		if err != nil {
			return
		}
		out, err := rec.AppendRecord(nil)
		if err != nil {
			t.Fatalf("accepted record does not encode: %v", err)
		}
		if b[0] >= 0xF0 { // EBCDIC in, EBCDIC out
			if err := charset.EBCDIC290.FromCanonical(out, out, nil); err != nil {
				t.Fatal(err)
			}
		}
		again, err := ParseRecord(Kind(kind), out)
		if err != nil || !reflect.DeepEqual(again, rec) {
			t.Fatalf("re-parse: %v", err)
		}
	})
}
