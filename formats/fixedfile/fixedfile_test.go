package fixedfile

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/formats/fixed"
)

// A 20-byte test format: H, D with an amount, T with count and total.
var (
	tf      = NewFormat("test", 20)
	tHeader = tf.Layout("test.header", "Header", RecordType("H", "H"), tf.Filler(2))
	tDetail = tf.Layout("test.detail", "Detail", RecordType("D", "D"), N("Amount", "金額", 2, 5), tf.Filler(7))
	tTrail  = tf.Layout("test.trailer", "Trailer", RecordType("T", "T"), N("Count", "件数", 2, 3), N("Total", "合計", 5, 8), tf.Filler(13))
)

type testBody struct{ count, total int64 }

func (s *testBody) Header(c *Checker, b []byte) { c.Fields(tHeader) }
func (s *testBody) Detail(c *Checker, b []byte) {
	s.count++
	if !c.Fields(tDetail) {
		c.Incomplete = true
		return
	}
	s.total += Num(RefOf(tDetail, "Amount").Of(b))
}
func (s *testBody) Trailer(c *Checker, b []byte) {
	if !c.Fields(tTrail) || c.Incomplete {
		return
	}
	c.Total(tTrail, "Count", RefOf(tTrail, "Count").Of(b), s.count, 999, "number of details")
	c.Total(tTrail, "Total", RefOf(tTrail, "Total").Of(b), s.total, 99_999_999, "sum of amounts")
}

func rec(s string) string { return s + strings.Repeat(" ", 20-len(s)) + "\r\n" }

func TestCheckerFindsEachErrorWithItsPlace(t *testing.T) {
	good := rec("H") + rec("D00010") + rec("D00020") + rec("T00200000030")
	if _, err := Validate(strings.NewReader(good), NewChecker(tf, &testBody{}), 10); err != nil {
		t.Fatalf("good file: %v", err)
	}
	cases := []struct {
		name, file string
		record     int
		offset     int64
		field      string
		reason     fixed.Reason
		record0    string // RecordType of the error
	}{
		{"wrong total", rec("H") + rec("D00010") + rec("T00100000011"), 3, 44 + 4, "Total", fixed.Invalid, "test.trailer"},
		{"wrong count", rec("H") + rec("D00010") + rec("T00200000010"), 3, 44 + 1, "Count", fixed.LengthMismatch, "test.trailer"},
		{"second header", rec("H") + rec("H") + rec("T00000000000"), 2, 22, "", fixed.Invalid, "test"},
		{"no header", rec("D00010") + rec("T00100000010"), 1, 0, "", fixed.Invalid, "test"},
		{"record after trailer", rec("H") + rec("T00000000000") + rec("D00001"), 3, 44, "", fixed.Invalid, "test"},
		{"unknown type", rec("H") + "X" + strings.Repeat(" ", 19) + "\r\n" + rec("T00000000000"), 2, 22, "", fixed.UnknownRecordType, "test"},
		{"no trailer", rec("H") + rec("D00010"), 2, 44, "", fixed.Invalid, "test"},
		{"not digits", rec("H") + rec("D0001X") + rec("T00100000010"), 2, 22 + 5, "Amount", fixed.NotNumeric, "test.detail"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Validate(strings.NewReader(tc.file), NewChecker(tf, &testBody{}), 10)
			var list *fixed.ErrorList
			if !errors.As(err, &list) || list.Len() != 1 {
				t.Fatalf("want one error, got %v", err)
			}
			e := list.Errs[0]
			if e.Record != tc.record || e.Offset != tc.offset || e.Field != tc.field || e.Reason != tc.reason || e.RecordType != tc.record0 {
				t.Fatalf("error %+v: want record %d offset %d field %q reason %v type %s", e, tc.record, tc.offset, tc.field, tc.reason, tc.record0)
			}
			// The streaming reader reports the same error and hands over
			// only the valid records.
			z := NewReader(strings.NewReader(tc.file), NewChecker(tf, &testBody{}), 10, func(typ byte, b []byte) string { return string(b) })
			var got []*fixed.Error
			for {
				_, err := z.Next()
				if err == io.EOF {
					break
				}
				if errors.As(err, &list) {
					got = append(got, list.Errs...)
				} else if err != nil {
					t.Fatal(err)
				}
			}
			if len(got) != 1 || got[0].Error() != e.Error() {
				t.Fatalf("reader errors %v, validate %v", got, e)
			}
		})
	}
}

func TestEncoderNamesTheField(t *testing.T) {
	e, dst := NewEncoder(tTrail, []byte("x"))
	e.Num("Count", 5)
	if got := string(dst[1:]); got != "T005"+strings.Repeat(" ", 16) {
		t.Fatalf("encoded %q", got)
	}
	e.Num("Count", 1000)
	var fe *fixed.Error
	if !errors.As(e.Err, &fe) || fe.Field != "Count" {
		t.Fatalf("error %v: want one naming Count", e.Err)
	}
	e2, _ := NewEncoder(tDetail, nil)
	e2.Digits("Amount", "12")
	e2.PadDigits("Amount", "12")
	if !errors.As(e2.Err, &fe) || fe.Field != "Amount" || string(e2.Field("Amount")) != "00012" {
		t.Fatalf("digits: %v %q", e2.Err, e2.Field("Amount"))
	}
}

func TestDatesAndStamps(t *testing.T) {
	for s, ok := range map[string]bool{"20240229235959": true, "20230229000000": false, "20261201240000": false, "2026120100000": false} {
		if ValidStamp([]byte(s)) != ok {
			t.Errorf("ValidStamp(%s) = %v", s, !ok)
		}
	}
	if d := DateOf(20261203); d != (Date{Year: 2026, Month: 12, Day: 3}) || d.Digits() != 20261203 || !d.Valid() {
		t.Fatalf("DateOf: %v", d)
	}
}

// FuzzValidate: any input is read without panic, and the reader and
// Validate agree on whether the file is good.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(rec("H") + rec("D00010") + rec("T00100000010")))
	f.Add([]byte(rec("H") + rec("D0001")))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, verr := Validate(strings.NewReader(string(data)), NewChecker(tf, &testBody{}), 1000)
		z := NewReader(strings.NewReader(string(data)), NewChecker(tf, &testBody{}), 1000, func(typ byte, b []byte) byte { return typ })
		bad := false
		for {
			_, err := z.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				bad = true
			}
		}
		if bad != (verr != nil) {
			t.Fatalf("reader bad=%v, validate %v", bad, verr)
		}
	})
}
