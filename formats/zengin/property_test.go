package zengin

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/formats/charset"
)

// textRunes are the name characters with ｰ (NamesLongVowel).
var textRunes = []rune("ｱｲｳｴｵｶｷｸｹｺｻｼｽｾｿﾀﾁﾂﾃﾄﾅﾆﾇﾈﾉﾊﾋﾌﾍﾎﾏﾐﾑﾒﾓﾔﾕﾖﾗﾘﾙﾚﾛﾜｦﾝﾞﾟｰABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ()-./")

// runeSets are the random text characters by name set (strict has no ｰ)
// and field (EDI情報 adds ｢ ｣ \ , ' + : ?).
var runeSets = func() (t [2][2][]rune) {
	strict := []rune(strings.ReplaceAll(string(textRunes), "ｰ", ""))
	t[NamesStrict][0], t[NamesLongVowel][0] = strict, textRunes
	t[NamesStrict][1] = append([]rune("｢｣\\,'+:?"), strict...)
	t[NamesLongVowel][1] = append([]rune("｢｣\\,'+:?"), textRunes...)
	return t
}()

// randText is a name (or, with edi, an EDI情報 text) of the name set.
func randText(r *rand.Rand, names NameChars, max int, edi ...bool) string {
	set := runeSets[names][0]
	if len(edi) > 0 && edi[0] {
		set = runeSets[names][1]
	}
	n := r.IntN(max + 1)
	var b strings.Builder
	for range n {
		b.WriteRune(set[r.IntN(len(set))])
	}
	return strings.TrimRight(b.String(), " ")
}

func randDigits(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + r.IntN(10))
	}
	return string(b)
}

func randOptDigits(r *rand.Rand, n int) string {
	if r.IntN(4) == 0 {
		return ""
	}
	return randDigits(r, n)
}

// randAccount is a random account; a debit (口座振替) one has 預金種目 1,
// 2, 3 or 9, any other 1, 2, 4 or 9.
func randAccount(r *rand.Rand, names NameChars, debit bool) Account {
	types := []uint8{1, 2, 4, 9}
	if debit {
		types = []uint8{1, 2, 3, 9}
	}
	return Account{
		BankCode: randDigits(r, 4), BankName: randText(r, names, 15), BranchCode: randDigits(r, 3), BranchName: randText(r, names, 15),
		AccountType: types[r.IntN(4)], AccountNumber: randDigits(r, 7), Name: randText(r, names, 30),
	}
}

func randGroup(r *rand.Rand, names NameChars) (recs []Record, result bool) {
	kind := []Kind{KindTransfer, KindSalary, KindBonus, KindCivilSalary, KindCivilBonus, KindDebit}[r.IntN(6)]
	h := &Header{Kind: kind, Encoding: Encoding(r.IntN(2)), ClientCode: randDigits(r, 10), ClientName: randText(r, names, 40),
		Date: Date{Month: 1 + r.IntN(12), Day: 1 + r.IntN(28)}, BankCode: randDigits(r, 4), BankName: randText(r, names, 15),
		BranchCode: randDigits(r, 3), BranchName: randText(r, names, 15), AccountType: []uint8{1, 2, 9}[r.IntN(3)], AccountNumber: randDigits(r, 7)}
	recs = append(recs, h)
	result = kind == KindDebit && r.IntN(2) == 0
	var count, total, done, doneAmt, failed, failedAmt int64
	for range r.IntN(6) {
		amount := r.Int64N(10_000_000_000)
		var d DataRecord
		switch kind {
		case KindTransfer:
			t := &TransferData{Account: randAccount(r, names, false), ClearingHouse: randOptDigits(r, 4), Amount: amount, NewCode: uint8(r.IntN(3)),
				TransferMode: []uint8{0, 7, 8}[r.IntN(3)]}
			if r.IntN(2) == 0 {
				t.IsEDI, t.EDI = true, randText(r, names, 20, true)
			} else {
				t.CustomerCode1, t.CustomerCode2 = randOptDigits(r, 10), randOptDigits(r, 10)
			}
			d = t
		case KindSalary, KindBonus, KindCivilSalary, KindCivilBonus:
			d = &PayrollData{Account: randAccount(r, names, false), ClearingHouse: randOptDigits(r, 4), Amount: amount, NewCode: uint8(r.IntN(3)),
				EmployeeNumber: randOptDigits(r, 10), DepartmentCode: randOptDigits(r, 10)}
		default:
			x := &DebitData{Account: randAccount(r, names, true), Amount: amount, NewCode: uint8(r.IntN(3)), CustomerNumber: randOptDigits(r, 20)}
			if result {
				x.Result = []ResultCode{0, 1, 2, 3, 4, 8, 9}[r.IntN(7)]
			}
			if x.Result == 0 {
				done, doneAmt = done+1, doneAmt+amount
			} else {
				failed, failedAmt = failed+1, failedAmt+amount
			}
			d = x
		}
		recs = append(recs, d)
		count++
		total += amount
	}
	if kind == KindDebit {
		t := &DebitTrailer{Count: count, Total: total}
		if result {
			t.DoneCount, t.DoneAmount, t.FailedCount, t.FailedAmount = done, doneAmt, failed, failedAmt
		}
		recs = append(recs, t)
	} else {
		recs = append(recs, &Trailer{Count: count, Total: total})
	}
	return append(recs, &End{}), result
}

// TestPropertyRoundTrip: decode(encode(x)) == x for random valid files
// (random kinds, encodings, texts, optional fields and result codes),
// with either name character set.
func TestPropertyRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		names := NameChars(i % 2)
		var want []Record
		var buf bytes.Buffer
		w := NewWriter(&buf)
		w.Names = names
		for range 1 + r.IntN(3) {
			g, result := randGroup(r, names)
			w.ResultFile = result
			for _, rec := range g {
				if err := w.Write(rec); err != nil {
					t.Fatalf("case %d: write %#v: %v", i, rec, err)
				}
			}
			want = append(want, g...)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if _, err := ValidateOptions(bytes.NewReader(buf.Bytes()), Options{Names: names}); err != nil {
			t.Fatalf("case %d: written file does not validate: %v", i, err)
		}
		var got []Record
		for rec, err := range NewReaderOptions(bytes.NewReader(buf.Bytes()), Options{Names: names}).Records() {
			if err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
			got = append(got, rec)
		}
		if !reflect.DeepEqual(got, want) {
			for j := range min(len(got), len(want)) {
				if !reflect.DeepEqual(got[j], want[j]) {
					t.Fatalf("case %d record %d:\n got %#v\nwant %#v", i, j+1, got[j], want[j])
				}
			}
			t.Fatalf("case %d: %d records, want %d", i, len(got), len(want))
		}
	}
}

func TestWriterRefuses(t *testing.T) {
	h := &Header{Kind: KindTransfer, ClientCode: "1", ClientName: "ｱ", Date: Date{1, 1}, BankCode: "1", BranchCode: "1", AccountType: 1, AccountNumber: "1"}
	tests := []struct {
		name string
		recs []Record
		want string
	}{
		{"amount over 10 digits", []Record{h, &TransferData{Account: Account{BankCode: "1", BranchCode: "1", AccountType: 1, AccountNumber: "1"}, Amount: 10_000_000_000}}, "does not fit 9(10)"},
		{"negative amount", []Record{h, &TransferData{Account: Account{BankCode: "1", BranchCode: "1", AccountType: 1, AccountNumber: "1"}, Amount: -1}}, "does not fit"},
		{"lower case", []Record{h, &TransferData{Account: Account{BankCode: "1", BranchCode: "1", AccountType: 1, AccountNumber: "1", Name: "abc"}}}, "not allowed"},
		{"small kana", []Record{h, &TransferData{Account: Account{BankCode: "1", BranchCode: "1", AccountType: 1, AccountNumber: "1", Name: "ｷｬ"}}}, "not allowed"},
		{"kanji", []Record{h, &TransferData{Account: Account{BankCode: "1", BranchCode: "1", AccountType: 1, AccountNumber: "1", Name: "山田"}}}, "no half-width"},
		{"name too long", []Record{h, &TransferData{Account: Account{BankCode: "1", BranchCode: "1", AccountType: 1, AccountNumber: "1", Name: strings.Repeat("ｱ", 31)}}}, "longer than 30"},
		{"bank code not digits", []Record{h, &TransferData{Account: Account{BankCode: "12a", BranchCode: "1", AccountType: 1, AccountNumber: "1"}}}, "not at most 4 digits"},
		{"payroll in a transfer group", []Record{h, &PayrollData{Account: Account{BankCode: "1", BranchCode: "1", AccountType: 1, AccountNumber: "1"}}}, "in a group of 種別コード"},
		{"data before header", []Record{&TransferData{}}, "outside a header"},
		{"bad date", []Record{&Header{Kind: KindTransfer, ClientCode: "1", Date: Date{2, 30}, BankCode: "1", BranchCode: "1", AccountType: 1, AccountNumber: "1"}}, "invalid MMDD"},
		{"wrong trailer", []Record{h, &Trailer{Count: 1}}, "differs from the computed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWriter(&bytes.Buffer{})
			var err error
			for _, rec := range tc.recs {
				if err = w.Write(rec); err != nil {
					break
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestWriterConvertsFullWidth(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	h := &Header{Kind: KindTransfer, ClientCode: "1", ClientName: "ゼニス　ＡＢ", Date: Date{12, 31}, BankCode: "1", BranchCode: "1", AccountType: 1, AccountNumber: "1"}
	if err := w.WriteHeader(h); err != nil {
		t.Fatal(err)
	}
	_ = w.Flush() // reports the unfinished group; the header is written
	if got := buf.String()[14:24]; got != "\xbe\xde\xc6\xbd AB   " {
		t.Fatalf("name bytes = %q", got)
	}
}

func TestAppendHalfWidthFastAgrees(t *testing.T) {
	for _, s := range []string{"", "ABC 123", "ﾔﾏﾀﾞ ﾀﾛｳ", "｡ｦｰﾟ", string(textRunes)} {
		fast, ok := appendHalfWidthFast(nil, s)
		if !ok {
			t.Fatalf("fast path refused %q", s)
		}
		slow, err := charset.AppendHalfWidth(nil, s)
		if err != nil || string(fast) != string(slow) {
			t.Fatalf("%q: fast %x slow %x (%v)", s, fast, slow, err)
		}
	}
	for _, s := range []string{"ガ", "山", "Ａ", "\xef\xbd"} {
		if _, ok := appendHalfWidthFast(nil, s); ok {
			t.Fatalf("fast path accepted %q", s)
		}
	}
}
