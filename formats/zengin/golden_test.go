package zengin

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/recordio"
)

const fixtureDir = "../../fixtures/zengin"

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readAll streams a file and fails the test on any error.
func readAll(t testing.TB, b []byte) []Record {
	t.Helper()
	var out []Record
	for rec, err := range NewReader(bytes.NewReader(b)).Records() {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		out = append(out, rec)
	}
	return out
}

func TestGoldenFiles(t *testing.T) {
	tests := []struct {
		file      string
		sep       recordio.Separator
		groups    int
		count     int64
		total     int64
		records   int
		resultGrp bool
	}{
		{"transfer.txt", recordio.SepCRLF, 1, 3, 10000150000, 6, false},
		{"salary.dat", recordio.SepNone, 1, 2, 597500, 5, false},
		{"debit_request.txt", recordio.SepCRLF, 1, 3, 20800, 6, false},
		{"debit_result.txt", recordio.SepCRLF, 1, 3, 20800, 6, true},
		{"transfer_ebcdic.dat", recordio.SepNone, 1, 3, 10000150000, 6, false},
		{"multi_group.txt", recordio.SepCRLF, 3, 7, 10000150000 + 500000 + 20800, 15, false},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			b := readFixture(t, tc.file)
			sum, err := Validate(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if sum.Separator != tc.sep || sum.GroupCount != tc.groups || sum.DataCount != tc.count ||
				sum.DataTotal != tc.total || sum.Records != tc.records || sum.Bytes != int64(len(b)) {
				t.Fatalf("summary = %+v", sum)
			}
			if sum.Groups[0].Result != tc.resultGrp {
				t.Errorf("Result = %v, want %v", sum.Groups[0].Result, tc.resultGrp)
			}
			recs := readAll(t, b)
			if len(recs) != tc.records {
				t.Fatalf("streamed %d records, want %d", len(recs), tc.records)
			}
			// Canonical rewrite: CRLF after every record, same encoding.
			var out bytes.Buffer
			w := NewWriter(&out)
			w.ResultFile = tc.resultGrp
			for _, r := range recs {
				if err := w.Write(r); err != nil {
					t.Fatalf("Write: %v", err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if want := withCRLF(b, tc.sep); !bytes.Equal(out.Bytes(), want) {
				t.Fatalf("rewrite differs from the golden file:\n got %q\nwant %q", out.Bytes(), want)
			}
		})
	}
}

// withCRLF returns the file with CRLF after every 120-byte record.
func withCRLF(b []byte, sep recordio.Separator) []byte {
	if sep == recordio.SepCRLF {
		return b
	}
	var out []byte
	for i := 0; i+RecordLen <= len(b); i += RecordLen {
		out = append(out, b[i:i+RecordLen]...)
		out = append(out, '\r', '\n')
	}
	return out
}

func TestGoldenTransferContent(t *testing.T) {
	recs := readAll(t, readFixture(t, "transfer.txt"))
	h := recs[0].(*Header)
	wantH := &Header{Kind: KindTransfer, Encoding: JIS, ClientCode: "1234567890", ClientName: "ｾﾞﾆｽｼﾖｳｼﾞ(ｶ",
		Date: Date{4, 15}, BankCode: "0128", BankName: "ｸﾞﾝﾏ", BranchCode: "101", BranchName: "ﾎﾝﾃﾝ", AccountType: 1, AccountNumber: "1234567"}
	if !reflect.DeepEqual(h, wantH) {
		t.Errorf("header = %+v\nwant %+v", h, wantH)
	}
	d := recs[1].(*TransferData)
	want := &TransferData{Account: Account{BankCode: "0001", BankName: "ﾐｽﾞﾎ", BranchCode: "110", BranchName: "ﾄｳｷﾖｳ",
		AccountType: 1, AccountNumber: "7654321", Name: "ﾔﾏﾀﾞ ﾀﾛｳ"}, ClearingHouse: "0000", Amount: 150000,
		CustomerCode1: "0000000001", CustomerCode2: "0000000002", TransferMode: 7}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("data = %+v\nwant %+v", d, want)
	}
	if d := recs[2].(*TransferData); d.Amount != 9999999999 || d.Name != "(ｶ)ﾃｽﾄ.ｼﾖｳｶｲ" || d.CustomerCode1 != "" {
		t.Errorf("max amount record = %+v", d)
	}
	if d := recs[3].(*TransferData); !d.IsEDI || d.EDI != "INV-2026/0415" || d.Amount != 1 {
		t.Errorf("EDI record = %+v", d)
	}
	if tr := recs[4].(*Trailer); *tr != (Trailer{Count: 3, Total: 10000150000}) {
		t.Errorf("trailer = %+v", tr)
	}
}

func TestGoldenEBCDICEqualsJIS(t *testing.T) {
	jis := readAll(t, readFixture(t, "transfer.txt"))
	ebc := readAll(t, readFixture(t, "transfer_ebcdic.dat"))
	if h := ebc[0].(*Header); h.Encoding != EBCDIC {
		t.Fatalf("encoding = %v", h.Encoding)
	}
	ebc[0].(*Header).Encoding = JIS
	if !reflect.DeepEqual(jis, ebc) {
		t.Fatalf("EBCDIC file decodes differently from the JIS one")
	}
}

func TestGoldenDebitResult(t *testing.T) {
	recs := readAll(t, readFixture(t, "debit_result.txt"))
	var codes []ResultCode
	for _, r := range recs {
		if d, ok := r.(*DebitData); ok {
			codes = append(codes, d.Result)
		}
	}
	if !reflect.DeepEqual(codes, []ResultCode{ResultDone, ResultNoFunds, ResultNoAccount}) {
		t.Errorf("result codes = %v", codes)
	}
	want := DebitTrailer{Count: 3, Total: 20800, DoneCount: 1, DoneAmount: 5500, FailedCount: 2, FailedAmount: 15300}
	if tr := recs[4].(*DebitTrailer); *tr != want {
		t.Errorf("trailer = %+v", tr)
	}
	d := recs[1].(*DebitData)
	if d.CustomerNumber != "00000000000000000001" || d.Name != "ｺﾊﾞﾔｼ ｹﾝ" || d.BankCode != "0184" {
		t.Errorf("debit data = %+v", d)
	}
	if h := recs[0].(*Header); h.Date != (Date{2, 29}) {
		t.Errorf("29 February must be accepted: %+v", h.Date)
	}
}

func TestReaderEOF(t *testing.T) {
	r := NewReader(bytes.NewReader(readFixture(t, "salary.dat")))
	n := 0
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 5 {
		t.Fatalf("records = %d", n)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after EOF: %v", err)
	}
	if s := r.Summary(); s.DataCount != 2 || s.DataTotal != 597500 || s.Separator != recordio.SepNone {
		t.Fatalf("summary = %+v", s)
	}
}

var _ = fixed.NotNumeric
