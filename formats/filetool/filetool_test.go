package filetool

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../fixtures/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDetect(t *testing.T) {
	tests := []struct {
		head string
		want Format
	}{
		{"1210", Zengin},
		{"\xf1\xf2\xf1\xf1", Zengin},
		{"HPOST01", Overnight},
		{"HRSLT01", Overnight},
		{"HCBAL01", CoreBalance},
		{"HXXXX", Unknown},
		{"2000", Unknown},
		{"", Unknown},
	}
	for _, tc := range tests {
		if got := Detect([]byte(tc.head)); got != tc.want {
			t.Errorf("Detect(%q) = %v, want %v", tc.head, got, tc.want)
		}
	}
}

func TestDescribeZengin(t *testing.T) {
	var out bytes.Buffer
	res, err := Describe(&out, "transfer.txt", bytes.NewReader(fixture(t, "zengin/transfer.txt")), Options{})
	if err != nil || !res.OK() {
		t.Fatal(err, res.Errors)
	}
	want := `transfer.txt: Zengin 120-byte transfer file
size: 732 bytes, 6 records, separator CRLF
groups: 1, data records: 3, total: 10,000,150,000 yen
group 1 (header at record 1): 種別 21 総合振込, コード区分 0 JIS (Shift_JIS)
  委託者 1234567890 ｾﾞﾆｽｼﾖｳｼﾞ(ｶ, date 0415, bank 0128 ｸﾞﾝﾏ, branch 101 ﾎﾝﾃﾝ, account 1-1234567
  data records: 3, total: 10,000,150,000 yen
errors: none
`
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestDescribeOvernightResult(t *testing.T) {
	var out bytes.Buffer
	if _, err := Describe(&out, "result.dat", bytes.NewReader(fixture(t, "overnight/result.dat")), Options{}); err != nil {
		t.Fatal(err)
	}
	want := `result.dat: overnight posting/result file (200-byte records)
size: 1200 bytes, 6 records, separator none
result file: bank 0128, business date 2026-12-02, file 1, created 20261202213000
details: 4, debits: 1 (150,000 yen), credits: 2 (5,001 yen), hash total: 7382222221
posted: 3, rejected: 1 (totals count posted details only)
errors: none
`
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestValidateListsEveryError(t *testing.T) {
	b := bytes.Clone(fixture(t, "zengin/transfer.txt"))
	b[206] = 'A'
	b[244+54] = 0xA7
	b = b[:610]
	var out bytes.Buffer
	res, err := Validate(&out, "bad.txt", bytes.NewReader(b), Options{})
	if err != nil || res.OK() {
		t.Fatalf("err %v ok %v", err, res.OK())
	}
	want := `bad.txt: INVALID: Zengin 120-byte transfer file
errors: 3
  record 2 line 2 offset 206 col 85 [zengin.data.transfer Amount (振込金額)]: not numeric: bytes "0000A50000": 'A' (0x41) at column 85: 9(10) must be digits only
  record 3 line 3 offset 298 col 55 [zengin.data.transfer Name (受取人名)]: character not allowed: bytes 0x28 B6 29 C3 A7 C4 2E BC D6 B3 B6 B2 20 20 20 20 20 20 20 20 20 20 20 20 20 20 20 20 20 20: 'ｧ' (0xA7) at column 55 is not allowed (half-width katakana, A-Z, 0-9, space and ( ) - . / only)
  record 5 line 6 offset 610 [zengin]: invalid value: file ends after the trailer of the group started at record 1: missing end record
`
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestValidateOK(t *testing.T) {
	var out bytes.Buffer
	if _, err := Validate(&out, "p", bytes.NewReader(fixture(t, "overnight/posting.txt")), Options{}); err != nil {
		t.Fatal(err)
	}
	if want := "p: OK: overnight posting/result file (200-byte records), 6 records, 1212 bytes\n"; out.String() != want {
		t.Fatalf("got %q", out.String())
	}
}

// A file of neither format is an invalid file (checked as Zengin, errors
// with record and byte offset), not an I/O error.
func TestUnknownFormatIsAnInvalidFile(t *testing.T) {
	var out bytes.Buffer
	res, err := Describe(&out, "x", strings.NewReader("hello"), Options{})
	if err != nil || res.OK() || !res.Unrecognised || res.Format != Zengin {
		t.Fatalf("res %+v err %v", res, err)
	}
	if first := FormatError(res.Errors.Errs[0]); !strings.HasPrefix(first, "record 1 line 1 offset 0 col 1 [zengin]: ") {
		t.Fatalf("first error %q", first)
	}
	if !strings.HasPrefix(out.String(), "x: not a recognised file") {
		t.Fatalf("describe:\n%s", out.String())
	}
}

func TestConvertJISToEBCDICMatchesIconv(t *testing.T) {
	var out bytes.Buffer
	res, err := Convert(&out, bytes.NewReader(fixture(t, "zengin/transfer.txt")), ConvertOptions{Encoding: "ebcdic", Separator: "none"})
	if err != nil || !res.OK() {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), fixture(t, "zengin/transfer_ebcdic.dat")) {
		t.Fatal("JIS -> EBCDIC conversion differs from the iconv-made fixture")
	}
	var back bytes.Buffer
	if _, err := Convert(&back, bytes.NewReader(out.Bytes()), ConvertOptions{Encoding: "jis"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Bytes(), fixture(t, "zengin/transfer.txt")) {
		t.Fatal("EBCDIC -> JIS does not give the original back")
	}
}

func TestConvertOvernightSeparators(t *testing.T) {
	var crlf bytes.Buffer
	if _, err := Convert(&crlf, bytes.NewReader(fixture(t, "overnight/result.dat")), ConvertOptions{Separator: "crlf"}); err != nil {
		t.Fatal(err)
	}
	if crlf.Len() != 6*202 || !bytes.HasSuffix(crlf.Bytes(), []byte("\r\n")) {
		t.Fatalf("crlf output %d bytes", crlf.Len())
	}
	var none bytes.Buffer
	if _, err := Convert(&none, bytes.NewReader(crlf.Bytes()), ConvertOptions{Separator: "none"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(none.Bytes(), fixture(t, "overnight/result.dat")) {
		t.Fatal("round trip through CRLF differs")
	}
	if _, err := Convert(&none, bytes.NewReader(crlf.Bytes()), ConvertOptions{Encoding: "ebcdic"}); err == nil {
		t.Fatal("EBCDIC conversion of an overnight file must be refused")
	}
}

func TestConvertInvalidWritesNothing(t *testing.T) {
	b := bytes.Clone(fixture(t, "zengin/transfer.txt"))
	b[206] = 'A'
	var out bytes.Buffer
	res, err := Convert(&out, bytes.NewReader(b), ConvertOptions{})
	if err != nil || res.OK() || out.Len() != 0 {
		t.Fatalf("err %v ok %v wrote %d bytes", err, res.OK(), out.Len())
	}
}

func TestProgressBar(t *testing.T) {
	var bar bytes.Buffer
	b := fixture(t, "zengin/multi_group.txt")
	if _, err := Check(bytes.NewReader(b), Options{Progress: &bar, Size: int64(len(b))}); err != nil {
		t.Fatal(err)
	}
	want := "\r[##############################] 100% 0.0/0.0 MiB\n"
	if !strings.HasSuffix(bar.String(), want) || !strings.HasPrefix(bar.String(), "\r[") {
		t.Fatalf("bar = %q", bar.String())
	}
}

func TestYen(t *testing.T) {
	for v, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 10000150000: "10,000,150,000"} {
		if got := yen(v); got != want {
			t.Errorf("yen(%d) = %q", v, got)
		}
	}
}

func TestDescribeAndConvertCoreBalance(t *testing.T) {
	var out bytes.Buffer
	if _, err := Describe(&out, "balances.txt", bytes.NewReader(fixture(t, "corebalance/balances.txt")), Options{}); err != nil {
		t.Fatal(err)
	}
	want := `balances.txt: core balance file (100-byte records)
size: 714 bytes, 7 records, separator CRLF
balances: bank 0128, business date 2026-12-02, cutoff 20261202233000
accounts: 5, balance total: 1,000,001,249,999 yen, hash total: 7321234570
errors: none
`
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	var none, crlf bytes.Buffer
	if _, err := Convert(&none, bytes.NewReader(fixture(t, "corebalance/balances.txt")), ConvertOptions{Separator: "none"}); err != nil {
		t.Fatal(err)
	}
	if none.Len() != 7*100 {
		t.Fatalf("no-separator output %d bytes", none.Len())
	}
	if _, err := Convert(&crlf, bytes.NewReader(none.Bytes()), ConvertOptions{Separator: "crlf"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(crlf.Bytes(), fixture(t, "corebalance/balances.txt")) {
		t.Fatal("round trip through no separator differs")
	}
}
