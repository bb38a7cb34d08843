package zengin

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/formats/fixed"
)

// writeFile writes one group of kind with the data records, with the
// Writer w (or a default one).
func writeFile(t *testing.T, w *Writer, buf *bytes.Buffer, kind Kind, data ...DataRecord) {
	t.Helper()
	if w == nil {
		w = NewWriter(buf)
	}
	h := &Header{Kind: kind, ClientCode: "1", ClientName: "ｶ)ﾃｽﾄ", Date: Date{4, 1}, BankCode: "0001", BranchCode: "001", AccountType: 1, AccountNumber: "1234567"}
	for _, err := range []error{w.WriteHeader(h), func() error {
		for _, d := range data {
			if err := w.WriteData(d); err != nil {
				return err
			}
		}
		return nil
	}(), w.WriteTrailer(), w.WriteEnd(), w.Flush()} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// errorsOf validates b and returns its errors (nil when valid).
func errorsOf(t *testing.T, b []byte, o Options) []*fixed.Error {
	t.Helper()
	_, err := ValidateOptions(bytes.NewReader(b), o)
	if err == nil {
		return nil
	}
	var list *fixed.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("not an ErrorList: %v", err)
	}
	return list.Errs
}

func acct(typ uint8, name string) Account {
	return Account{BankCode: "0002", BranchCode: "010", AccountType: typ, AccountNumber: "7654321", Name: name}
}

// 口座振替 (91) debits 預金種目 1, 2, 3 (納税準備預金) and 9; 4 (貯蓄) is
// a 総合振込/給与 type only, and 3 is refused there.
func TestDebitAccountTypeTaxReserve(t *testing.T) {
	var buf bytes.Buffer
	writeFile(t, nil, &buf, KindDebit, &DebitData{Account: acct(3, "ﾉｳｾﾞｲ"), Amount: 1000})
	file := buf.Bytes()
	if errs := errorsOf(t, file, Options{}); errs != nil {
		t.Fatalf("91 with 預金種目 3 refused: %v", errs)
	}
	recs := readAll(t, file)
	if d := recs[1].(*DebitData); d.AccountType != 3 {
		t.Fatalf("預金種目 read as %d", d.AccountType)
	}
	// 4 in a 91 record: refused at column 43 of record 2.
	bad := bytes.Clone(file)
	bad[122+42] = '4'
	errs := errorsOf(t, bad, Options{})
	if len(errs) != 1 || errs[0].Record != 2 || errs[0].Offset != 122+42 || !strings.Contains(errs[0].Error(), "預金種目 must be 1, 2, 3 or 9 (口座振替)") {
		t.Fatalf("91 with 預金種目 4: %v", errs)
	}
	// 3 in a 総合振込 record: refused.
	buf.Reset()
	writeFile(t, nil, &buf, KindTransfer, &TransferData{Account: acct(1, "ﾀﾅｶ"), Amount: 1000})
	bad = bytes.Clone(buf.Bytes())
	bad[122+42] = '3'
	if errs := errorsOf(t, bad, Options{}); len(errs) != 1 || !strings.Contains(errs[0].Error(), "預金種目 must be 1, 2, 4 or 9") {
		t.Fatalf("21 with 預金種目 3: %v", errs)
	}
	// The Writer follows the same sets.
	if err := (&DebitData{Account: acct(4, "A")}).Validate(); err == nil || !strings.Contains(err.Error(), "1, 2, 3 or 9") {
		t.Fatalf("writer accepts 91 預金種目 4: %v", err)
	}
	if err := (&TransferData{Account: acct(3, "A")}).Validate(); err == nil {
		t.Fatal("writer accepts 21 預金種目 3")
	}
}

// 種別 71/72 (公務員 給与/賞与) are read and written where 11/12 are.
func TestCivilServantPayrollKinds(t *testing.T) {
	for _, kind := range []Kind{KindCivilSalary, KindCivilBonus} {
		var buf bytes.Buffer
		writeFile(t, nil, &buf, kind, &PayrollData{Account: acct(1, "ﾔﾏﾀﾞ ﾀﾛｳ"), Amount: 250000, EmployeeNumber: "42"})
		file := buf.Bytes()
		if got := string(file[1:3]); got != kind.String()[:2] {
			t.Fatalf("種別コード bytes %q", got)
		}
		if errs := errorsOf(t, file, Options{}); errs != nil {
			t.Fatalf("%s refused: %v", kind, errs)
		}
		recs := readAll(t, file)
		if h := recs[0].(*Header); h.Kind != kind {
			t.Fatalf("kind %v", h.Kind)
		}
		if d, ok := recs[1].(*PayrollData); !ok || d.EmployeeNumber != "0000000042" || d.Amount != 250000 {
			t.Fatalf("data %#v", recs[1])
		}
	}
	// 73 stays refused, at the 種別コード.
	var buf bytes.Buffer
	writeFile(t, nil, &buf, KindCivilSalary)
	bad := bytes.Clone(buf.Bytes())
	copy(bad[1:], "73")
	if errs := errorsOf(t, bad, Options{}); len(errs) == 0 || errs[0].Offset != 1 || !strings.Contains(errs[0].Error(), "11, 12, 21, 71, 72 or 91") {
		t.Fatalf("73: %v", errs)
	}
}

// EDI情報 has its own character set: the name set plus ｢ ｣ ¥ , ' + : ?.
func TestEDICharset(t *testing.T) {
	const edi = "ｾｲｷｭｳ｢A-1｣¥,'+:?"
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.FoldSmallKana = true
	writeFile(t, w, &buf, KindTransfer, &TransferData{Account: acct(1, "ﾀﾅｶ"), Amount: 1, IsEDI: true, EDI: edi})
	file := buf.Bytes()
	if got := string(file[122+91 : 122+111]); got != "\xbe\xb2\xb7\xd5\xb3\xa2A-1\xa3\\,'+:?    " {
		t.Fatalf("EDI bytes %q", got)
	}
	if errs := errorsOf(t, file, Options{}); errs != nil {
		t.Fatalf("EDI with ｢ ｣ ¥ , ' + : ? refused: %v", errs)
	}
	if d := readAll(t, file)[1].(*TransferData); d.EDI != `ｾｲｷﾕｳ｢A-1｣\,'+:?` {
		t.Fatalf("EDI read as %q", d.EDI)
	}
	// The same characters stay refused in a name.
	for _, ch := range []byte("\xa2\xa3\\,'+:?") {
		bad := bytes.Clone(file)
		bad[122+50] = ch
		errs := errorsOf(t, bad, Options{})
		if len(errs) != 1 || errs[0].Field != "Name" || errs[0].Offset != 122+50 {
			t.Fatalf("name with 0x%02X: %v", ch, errs)
		}
	}
	// And lower case or small kana in EDI情報 are refused.
	bad := bytes.Clone(file)
	bad[122+95] = 'a'
	if errs := errorsOf(t, bad, Options{}); len(errs) != 1 || errs[0].Field != "EDI" || !strings.Contains(errs[0].Error(), "EDI情報") {
		t.Fatalf("EDI with 'a': %v", errs)
	}
}

// The Writer refuses small kana by default and folds them full size with
// FoldSmallKana (キュウヨ -> ｷﾕｳﾖ), the way banks convert names.
func TestWriterFoldSmallKana(t *testing.T) {
	d := &TransferData{Account: acct(1, "キュウヨ ｷｬｯｼｭ ヵﾞ ァ"), Amount: 1}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	h := &Header{Kind: KindTransfer, ClientCode: "1", Date: Date{4, 1}, BankCode: "1", BranchCode: "1", AccountType: 1, AccountNumber: "1"}
	if err := w.WriteHeader(h); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteData(&TransferData{Account: acct(1, "キュウヨ"), Amount: 1}); err == nil || !strings.Contains(err.Error(), "character 'ｭ' not allowed") {
		t.Fatalf("default writer: %v", err)
	}
	buf.Reset()
	w = NewWriter(&buf)
	w.FoldSmallKana = true
	writeFile(t, w, &buf, KindTransfer, d)
	if got := string(buf.Bytes()[122+50 : 122+50+15]); got != "\xb7\xd5\xb3\xd6 \xb7\xd4\xc2\xbc\xd5 \xb6\xde \xb1" {
		t.Fatalf("folded name bytes %q", got)
	}
	if n := readAll(t, buf.Bytes())[1].(*TransferData).Name; n != "ｷﾕｳﾖ ｷﾔﾂｼﾕ ｶﾞ ｱ" {
		t.Fatalf("name read back %q", n)
	}
}

// ｰ in names is a per-bank option: refused by default (strict set),
// accepted with NamesLongVowel, by the reader and the writer alike.
func TestLongVowelIsAPerBankOption(t *testing.T) {
	d := &TransferData{Account: acct(1, "ｽｰﾊﾟｰ"), Amount: 1}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Names = NamesLongVowel
	writeFile(t, w, &buf, KindTransfer, d)
	file := buf.Bytes()

	errs := errorsOf(t, file, Options{})
	if len(errs) != 1 || errs[0].Record != 2 || errs[0].Offset != 122+51 || errs[0].Field != "Name" ||
		!strings.Contains(errs[0].Error(), "'ｰ' (0xB0) at column 52 is not allowed") ||
		!strings.Contains(errs[0].Error(), "long-vowel name set") {
		t.Fatalf("strict (default): %v", errs)
	}
	if errs := errorsOf(t, file, Options{Names: NamesLongVowel}); errs != nil {
		t.Fatalf("long-vowel: %v", errs)
	}
	n := 0
	for rec, err := range NewReaderOptions(bytes.NewReader(file), Options{Names: NamesLongVowel}).Records() {
		if err != nil {
			t.Fatal(err)
		}
		if td, ok := rec.(*TransferData); ok && td.Name == "ｽｰﾊﾟｰ" {
			n++
		}
	}
	if n != 1 {
		t.Fatal("long-vowel reader did not hand over the record")
	}
	// The default Writer refuses ｰ.
	if err := d.Validate(); err == nil || !strings.Contains(err.Error(), "'ｰ' not allowed") {
		t.Fatalf("default writer: %v", err)
	}
	// Names parse from configuration.
	for s, want := range map[string]NameChars{"": NamesStrict, "strict": NamesStrict, "long-vowel": NamesLongVowel} {
		if got, err := ParseNameChars(s); err != nil || got != want {
			t.Fatalf("ParseNameChars(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseNameChars("lenient"); err == nil {
		t.Fatal("ParseNameChars accepted lenient")
	}
}
