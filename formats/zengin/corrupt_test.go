package zengin

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/recordio"
)

// wantErr is the position an error must report.
type wantErr struct {
	record int
	line   int64
	offset int64
	column int
	field  string
	reason fixed.Reason
	bytes  string // the offending bytes ("" = not checked)
}

func (w wantErr) String() string {
	return fmt.Sprintf("record %d line %d offset %d column %d field %q reason %v bytes %q", w.record, w.line, w.offset, w.column, w.field, w.reason, w.bytes)
}

func gotErr(e *fixed.Error, withBytes bool) wantErr {
	w := wantErr{record: e.Record, line: recordio.LineOf(e), offset: e.Offset, column: e.Column, field: e.Field, reason: e.Reason}
	if withBytes {
		w.bytes = string(e.Bytes)
	}
	return w
}

// In transfer.txt every line is 122 bytes: record n starts at (n-1)*122.
func TestCorruptedFiles(t *testing.T) {
	golden := readFixture(t, "transfer.txt")
	const L = 122
	tests := []struct {
		name   string
		mutate func(b []byte) []byte
		want   []wantErr
	}{
		{"bad digit in an amount", func(b []byte) []byte {
			b[L+84] = 'A' // record 2, column 85 (振込金額 is 81-90)
			return b
		}, []wantErr{{2, 2, L + 84, 85, "Amount", fixed.NotNumeric, "0000A50000"}}},
		{"truncated record at end of file", func(b []byte) []byte {
			return b[:5*L+60] // the end record is cut after 60 bytes
		}, []wantErr{
			{6, 6, 5 * L, 1, "", fixed.ShortRecord, ""},
			{5, 6, 5*L + 60, 0, "", fixed.Invalid, ""}, // and so the end record is missing
		}},
		{"short record mid-file", func(b []byte) []byte {
			return append(b[:L+100:L+100], b[L+120:]...) // record 2 has 100 bytes then CRLF
		}, []wantErr{{2, 2, L, 1, "", fixed.ShortRecord, ""}}},
		{"wrong trailer total", func(b []byte) []byte {
			copy(b[4*L+7:], "000000000001") // 合計金額, columns 8-19
			return b
		}, []wantErr{{5, 5, 4*L + 7, 8, "Total", fixed.Invalid, "000000000001"}}},
		{"wrong trailer count", func(b []byte) []byte {
			copy(b[4*L+1:], "000004")
			return b
		}, []wantErr{{5, 5, 4*L + 1, 2, "Count", fixed.LengthMismatch, "000004"}}},
		{"small kana in a name", func(b []byte) []byte {
			b[2*L+54] = 0xA7 // ｧ in 受取人名 of record 3, column 55
			return b
		}, []wantErr{{3, 3, 2*L + 54, 55, "Name", fixed.BadChar, ""}}},
		{"lower case in a name", func(b []byte) []byte {
			b[3*L+50] = 'a' // record 4, column 51
			return b
		}, []wantErr{{4, 4, 3*L + 50, 51, "Name", fixed.BadChar, ""}}},
		{"stray byte between records", func(b []byte) []byte {
			return append(b[:2*L:2*L], append([]byte{'#'}, b[2*L:]...)...)
		}, []wantErr{{3, 3, 2 * L, 0, "", fixed.LongRecord, "#"}}},
		{"bare LF after a record", func(b []byte) []byte {
			return append(b[:L+120:L+120], b[L+121:]...) // drop the CR after record 2
		}, []wantErr{{2, 2, L + 120, 121, "", fixed.Invalid, "\n"}}},
		{"missing end record", func(b []byte) []byte {
			return b[:5*L]
		}, []wantErr{{5, 6, 5 * L, 0, "", fixed.Invalid, ""}}},
		{"invalid date 0230", func(b []byte) []byte {
			copy(b[54:], "0230")
			return b
		}, []wantErr{{1, 1, 54, 55, "Date", fixed.Invalid, "0230"}}},
		{"month 13", func(b []byte) []byte {
			copy(b[54:], "1301")
			return b
		}, []wantErr{{1, 1, 54, 55, "Date", fixed.Invalid, "1301"}}},
		{"non-numeric bank code", func(b []byte) []byte {
			b[L+2] = ' ' // 被仕向銀行番号 column 3
			return b
		}, []wantErr{{2, 2, L + 2, 3, "BankCode", fixed.NotNumeric, "0 01"}}},
		{"unknown record type", func(b []byte) []byte {
			b[3*L] = '3'
			return b
		}, []wantErr{
			{4, 4, 3 * L, 1, "", fixed.UnknownRecordType, ""},
		}},
		{"data after the trailer", func(b []byte) []byte {
			return append(b[:5*L:5*L], append(append([]byte{}, b[L:2*L]...), b[5*L:]...)...)
		}, []wantErr{{6, 6, 5 * L, 1, "", fixed.Invalid, ""}}},
		{"コード区分 1 on a JIS file", func(b []byte) []byte {
			b[3] = '1'
			return b
		}, []wantErr{{1, 1, 3, 4, "CodeType", fixed.Invalid, "1"}}},
		{"dummy not blank", func(b []byte) []byte {
			b[5*L+119] = 'X'
			return b
		}, []wantErr{{6, 6, 5*L + 119, 120, "Dummy2", fixed.NotBlank, ""}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mutate(bytes.Clone(golden))
			_, err := Validate(bytes.NewReader(b))
			var list *fixed.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("Validate = %v, want an ErrorList", err)
			}
			var got []string
			for _, e := range list.Errs {
				got = append(got, gotErr(e, false).String())
			}
			var want []string
			for i, w := range tc.want {
				want = append(want, wantErr{w.record, w.line, w.offset, w.column, w.field, w.reason, ""}.String())
				if w.bytes != "" && i < len(list.Errs) && string(list.Errs[i].Bytes) != w.bytes {
					t.Errorf("error %d bytes = %q, want %q", i, list.Errs[i].Bytes, w.bytes)
				}
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("errors:\n%s\nwant:\n%s\n(full: %v)", strings.Join(got, "\n"), strings.Join(want, "\n"), err)
			}
			// The streaming reader reports the same errors and hands over
			// no broken record.
			var streamed []string
			for rec, err := range NewReader(bytes.NewReader(b)).Records() {
				if err == nil {
					if rec == nil {
						t.Fatal("nil record without error")
					}
					continue
				}
				var l *fixed.ErrorList
				if !errors.As(err, &l) {
					t.Fatalf("stream error %v is not an ErrorList", err)
				}
				for _, e := range l.Errs {
					streamed = append(streamed, gotErr(e, false).String())
				}
			}
			if strings.Join(streamed, "\n") != strings.Join(want, "\n") {
				t.Fatalf("stream errors:\n%s\nwant:\n%s", strings.Join(streamed, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestErrorsCollectedAcrossFile(t *testing.T) {
	b := bytes.Clone(readFixture(t, "transfer.txt"))
	b[122+84] = 'A'      // record 2 amount
	b[244+50] = 'a'      // record 3 name
	b[366+1] = 'X'       // record 4 bank code
	copy(b[54:], "0000") // header date
	_, err := Validate(bytes.NewReader(b))
	var list *fixed.ErrorList
	if !errors.As(err, &list) || list.Len() != 4 {
		t.Fatalf("want 4 errors, got %v", err)
	}
	var recs []int
	for _, e := range list.Errs {
		recs = append(recs, e.Record)
	}
	if fmt.Sprint(recs) != "[1 2 3 4]" {
		t.Fatalf("records = %v", recs)
	}
	if !errors.Is(err, fixed.NotNumeric) || !errors.Is(err, fixed.BadChar) {
		t.Fatalf("errors.Is on the list fails: %v", err)
	}
}

func TestErrorCap(t *testing.T) {
	var b bytes.Buffer
	for range 50 {
		b.WriteString(strings.Repeat("Z", 120) + "\r\n")
	}
	_, err := ValidateMax(&b, 10)
	var list *fixed.ErrorList
	if !errors.As(err, &list) {
		t.Fatal(err)
	}
	if len(list.Errs) != 10 || list.Dropped != 40 { // 50 unknown record types
		t.Fatalf("kept %d dropped %d", len(list.Errs), list.Dropped)
	}
}

func TestEmptyFile(t *testing.T) {
	_, err := Validate(bytes.NewReader(nil))
	var list *fixed.ErrorList
	if !errors.As(err, &list) || len(list.Errs) != 1 || !strings.Contains(list.Errs[0].Error(), "empty file") {
		t.Fatalf("err = %v", err)
	}
}

func TestDebitResultTrailerMismatch(t *testing.T) {
	b := bytes.Clone(readFixture(t, "debit_result.txt"))
	// Claim 2 done / 1 failed although the codes say 1 done / 2 failed.
	copy(b[4*122+19:], "000002")
	_, err := Validate(bytes.NewReader(b))
	var list *fixed.ErrorList
	if !errors.As(err, &list) || len(list.Errs) != 1 {
		t.Fatalf("err = %v", err)
	}
	if e := list.Errs[0]; e.Field != "DoneCount" || e.Offset != 4*122+19 || e.Column != 20 {
		t.Fatalf("error = %v", e)
	}
}

func TestDebitRequestWithResultCode(t *testing.T) {
	b := bytes.Clone(readFixture(t, "debit_request.txt"))
	b[122+111] = '1' // a result code in a request
	_, err := Validate(bytes.NewReader(b))
	var list *fixed.ErrorList
	if !errors.As(err, &list) || len(list.Errs) != 1 || list.Errs[0].Field != "FailedCount" {
		t.Fatalf("err = %v", err)
	}
	b[122+111] = '5' // undefined code
	_, err = Validate(bytes.NewReader(b))
	if !errors.As(err, &list) || list.Errs[0].Field != "Result" || list.Errs[0].Offset != 122+111 {
		t.Fatalf("err = %v", err)
	}
}

func TestEBCDICUnmappableByte(t *testing.T) {
	b := bytes.Clone(readFixture(t, "transfer_ebcdic.dat"))
	b[120+55] = 0x00 // NUL inside 受取人名 of record 2 (no separators)
	_, err := Validate(bytes.NewReader(b))
	var list *fixed.ErrorList
	if !errors.As(err, &list) || len(list.Errs) != 1 {
		t.Fatalf("err = %v", err)
	}
	if e := list.Errs[0]; e.Field != "Name" || e.Offset != 175 || e.Column != 56 || e.Bytes[5] != 0x00 {
		t.Fatalf("error = %v", e)
	}
}
