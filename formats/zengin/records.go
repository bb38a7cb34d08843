package zengin

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/zcgw/zcgw/formats/charset"
	"github.com/zcgw/zcgw/formats/fixed"
)

// RecordType is the データ区分 byte of a record.
type RecordType byte

// The four record types.
const (
	TypeHeader  RecordType = '1'
	TypeData    RecordType = '2'
	TypeTrailer RecordType = '8'
	TypeEnd     RecordType = '9'
)

func (t RecordType) String() string {
	switch t {
	case TypeHeader:
		return "header"
	case TypeData:
		return "data"
	case TypeTrailer:
		return "trailer"
	case TypeEnd:
		return "end"
	}
	return fmt.Sprintf("RecordType(%q)", byte(t))
}

// Kind is the 種別コード of a header: which business the group carries.
type Kind uint8

// Kinds.
const (
	KindSalary      Kind = 11 // 給与 (民間)
	KindBonus       Kind = 12 // 賞与 (民間)
	KindTransfer    Kind = 21 // 総合振込
	KindCivilSalary Kind = 71 // 給与 (公務員)
	KindCivilBonus  Kind = 72 // 賞与 (公務員)
	KindDebit       Kind = 91 // 口座振替
)

// Valid reports whether k is a supported 種別コード.
func (k Kind) Valid() bool {
	return k == KindTransfer || k == KindDebit || k.Payroll()
}

// Payroll reports whether k is 給与 or 賞与 (民間 11, 12 or 公務員 71,
// 72): its data records are PayrollData.
func (k Kind) Payroll() bool {
	return k == KindSalary || k == KindBonus || k == KindCivilSalary || k == KindCivilBonus
}

func (k Kind) String() string {
	switch k {
	case KindSalary:
		return "11 給与"
	case KindBonus:
		return "12 賞与"
	case KindCivilSalary:
		return "71 給与 (公務員)"
	case KindCivilBonus:
		return "72 賞与 (公務員)"
	case KindTransfer:
		return "21 総合振込"
	case KindDebit:
		return "91 口座振替"
	}
	return fmt.Sprintf("%02d (unknown)", uint8(k))
}

// Encoding is the コード区分 of a header.
type Encoding uint8

// Encodings.
const (
	JIS    Encoding = 0 // Shift_JIS single-byte (JIS X 0201)
	EBCDIC Encoding = 1 // Japanese katakana EBCDIC, CCSID 290
)

func (e Encoding) String() string {
	if e == EBCDIC {
		return "1 EBCDIC (IBM290)"
	}
	return "0 JIS (Shift_JIS)"
}

// Charset is the character set of the encoding.
func (e Encoding) Charset() *charset.Charset {
	if e == EBCDIC {
		return charset.EBCDIC290
	}
	return charset.ShiftJIS
}

// Date is an MMDD date (振込指定日, 引落日); Zengin dates carry no year.
type Date struct {
	Month, Day int
}

// Valid reports whether the month is 1–12 and the day exists in that month
// (29 February is allowed: the year is not known).
func (d Date) Valid() bool {
	if d.Month < 1 || d.Month > 12 || d.Day < 1 {
		return false
	}
	return d.Day <= daysIn[d.Month]
}

var daysIn = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

func (d Date) String() string { return fmt.Sprintf("%02d%02d", d.Month, d.Day) }

// ResultCode is the 振替結果コード of a 口座振替 data record.
type ResultCode uint8

// Result codes.
const (
	ResultDone            ResultCode = 0 // 振替済 (and every request record)
	ResultNoFunds         ResultCode = 1 // 資金不足
	ResultNoAccount       ResultCode = 2 // 預金取引なし
	ResultStoppedByPayer  ResultCode = 3 // 預金者都合による振替停止
	ResultNoAuthorization ResultCode = 4 // 預金口座振替依頼書なし
	ResultStoppedByClient ResultCode = 8 // 委託者都合による振替停止
	ResultOther           ResultCode = 9 // その他
)

var resultNames = map[ResultCode]string{
	ResultDone:            "振替済",
	ResultNoFunds:         "資金不足",
	ResultNoAccount:       "預金取引なし",
	ResultStoppedByPayer:  "預金者都合による振替停止",
	ResultNoAuthorization: "預金口座振替依頼書なし",
	ResultStoppedByClient: "委託者都合による振替停止",
	ResultOther:           "その他",
}

// Valid reports whether r is a defined 振替結果コード.
func (r ResultCode) Valid() bool { _, ok := resultNames[r]; return ok }

func (r ResultCode) String() string {
	if s, ok := resultNames[r]; ok {
		return strconv.Itoa(int(r)) + " " + s
	}
	return strconv.Itoa(int(r)) + " (unknown)"
}

// Record is one decoded Zengin record: *Header, *TransferData,
// *PayrollData, *DebitData, *Trailer, *DebitTrailer or *End.
type Record interface {
	// RecordType is the データ区分.
	RecordType() RecordType
	// Layout is the layout the record is encoded with.
	Layout() *fixed.Layout
	// AppendRecord appends the record's 120 canonical (JIS X 0201) bytes
	// to dst, or returns a *fixed.Error naming the field that cannot be
	// encoded (bad character, value too long or out of range).
	AppendRecord(dst []byte) ([]byte, error)
	// appendWith is AppendRecord with the Writer's options.
	appendWith(dst []byte, o encodeOptions) ([]byte, error)
}

// DataRecord is a data record of any kind.
type DataRecord interface {
	Record
	// Yen is 振込金額 / 引落金額.
	Yen() int64
}

// Header is the header record (データ区分 1).
type Header struct {
	Kind          Kind
	Encoding      Encoding
	ClientCode    string // 委託者コード, 10 digits
	ClientName    string // 委託者名, half-width
	Date          Date   // 振込指定日 / 引落日
	BankCode      string // 仕向銀行番号, 4 digits
	BankName      string
	BranchCode    string // 3 digits
	BranchName    string
	AccountType   uint8  // 1 普通, 2 当座, 9 その他
	AccountNumber string // 7 digits
}

// Account is bytes 2–80 of a data record: whose account and its holder.
type Account struct {
	BankCode      string // 4 digits
	BankName      string
	BranchCode    string // 3 digits
	BranchName    string
	AccountType   uint8  // 1 普通, 2 当座, 4 貯蓄, 9 その他 (口座振替: 1, 2, 3 納税準備預金, 9)
	AccountNumber string // 7 digits
	Name          string // 受取人名 / 預金者名
}

// TransferData is a 総合振込 data record.
type TransferData struct {
	Account
	ClearingHouse string // 手形交換所番号: 4 digits, or "" when blank
	Amount        int64  // 振込金額, yen
	NewCode       uint8  // 新規コード 0, 1, 2
	CustomerCode1 string // 10 digits or "" (when not EDI)
	CustomerCode2 string // 10 digits or "" (when not EDI)
	EDI           string // EDI情報 when IsEDI
	IsEDI         bool   // 識別表示 = Y
	TransferMode  uint8  // 振込指定区分 7 電信, 8 文書, 0 blank
}

// PayrollData is a 給与/賞与 data record (種別コード 11, 12, 71, 72).
type PayrollData struct {
	Account
	ClearingHouse  string
	Amount         int64
	NewCode        uint8
	EmployeeNumber string // 社員番号, 10 digits or ""
	DepartmentCode string // 所属コード, 10 digits or ""
}

// DebitData is a 口座振替 data record (request or result).
type DebitData struct {
	Account
	Amount         int64
	NewCode        uint8
	CustomerNumber string // 顧客番号, 20 digits or ""
	Result         ResultCode
}

// Trailer is the trailer record of 総合振込 and 給与/賞与.
type Trailer struct {
	Count int64 // 合計件数
	Total int64 // 合計金額
}

// DebitTrailer is the trailer record of 口座振替.
type DebitTrailer struct {
	Count        int64 // 合計件数
	Total        int64 // 合計金額
	DoneCount    int64 // 振替済件数
	DoneAmount   int64 // 振替済金額
	FailedCount  int64 // 振替不能件数
	FailedAmount int64 // 振替不能金額
}

// End is the end record.
type End struct{}

func (*Header) RecordType() RecordType       { return TypeHeader }
func (*TransferData) RecordType() RecordType { return TypeData }
func (*PayrollData) RecordType() RecordType  { return TypeData }
func (*DebitData) RecordType() RecordType    { return TypeData }
func (*Trailer) RecordType() RecordType      { return TypeTrailer }
func (*DebitTrailer) RecordType() RecordType { return TypeTrailer }
func (*End) RecordType() RecordType          { return TypeEnd }

func (*Header) Layout() *fixed.Layout { return HeaderLayout }
func (d *TransferData) Layout() *fixed.Layout {
	if d.IsEDI {
		return TransferEDIDataLayout
	}
	return TransferDataLayout
}
func (*PayrollData) Layout() *fixed.Layout  { return PayrollDataLayout }
func (*DebitData) Layout() *fixed.Layout    { return DebitDataLayout }
func (*Trailer) Layout() *fixed.Layout      { return TrailerLayout }
func (*DebitTrailer) Layout() *fixed.Layout { return DebitTrailerLayout }
func (*End) Layout() *fixed.Layout          { return EndLayout }

// Yen is 振込金額.
func (d *TransferData) Yen() int64 { return d.Amount }

// Yen is 振込金額.
func (d *PayrollData) Yen() int64 { return d.Amount }

// Yen is 引落金額.
func (d *DebitData) Yen() int64 { return d.Amount }

// ---- decoding (from canonical bytes already validated by the checker) ----

// fpos is a field's 0-based byte range, looked up once from its layout.
type fpos struct{ lo, hi int }

func at(l *fixed.Layout, name string) fpos {
	f, ok := l.Field(name)
	if !ok {
		panic("zengin: layout " + l.Name() + " has no field " + name)
	}
	return fpos{f.Start - 1, f.End()}
}

func (p fpos) of(b []byte) []byte { return b[p.lo:p.hi] }

var (
	hKind, hCode, hClient, hClientName = at(HeaderLayout, "Kind"), at(HeaderLayout, "CodeType"), at(HeaderLayout, "ClientCode"), at(HeaderLayout, "ClientName")
	hDate, hBank, hBankName            = at(HeaderLayout, "Date"), at(HeaderLayout, "BankCode"), at(HeaderLayout, "BankName")
	hBranch, hBranchName               = at(HeaderLayout, "BranchCode"), at(HeaderLayout, "BranchName")
	hAcctType, hAcct                   = at(HeaderLayout, "AccountType"), at(HeaderLayout, "AccountNumber")

	dBank, dBankName, dBranch, dBranchName = at(TransferDataLayout, "BankCode"), at(TransferDataLayout, "BankName"), at(TransferDataLayout, "BranchCode"), at(TransferDataLayout, "BranchName")
	dClearing, dAcctType, dAcct, dName     = at(TransferDataLayout, "ClearingHouse"), at(TransferDataLayout, "AccountType"), at(TransferDataLayout, "AccountNumber"), at(TransferDataLayout, "Name")
	dAmount, dNew                          = at(TransferDataLayout, "Amount"), at(TransferDataLayout, "NewCode")
	tCust1, tCust2, tEDI                   = at(TransferDataLayout, "CustomerCode1"), at(TransferDataLayout, "CustomerCode2"), at(TransferEDIDataLayout, "EDI")
	tMode, tFlag                           = at(TransferDataLayout, "TransferMode"), at(TransferDataLayout, "IDFlag")
	pEmp, pDept                            = at(PayrollDataLayout, "EmployeeNumber"), at(PayrollDataLayout, "DepartmentCode")
	xCust, xResult                         = at(DebitDataLayout, "CustomerNumber"), at(DebitDataLayout, "Result")

	trCount, trTotal      = at(TrailerLayout, "Count"), at(TrailerLayout, "Total")
	trDone, trDoneAmt     = at(DebitTrailerLayout, "DoneCount"), at(DebitTrailerLayout, "DoneAmount")
	trFailed, trFailedAmt = at(DebitTrailerLayout, "FailedCount"), at(DebitTrailerLayout, "FailedAmount")
)

// num reads a validated N field; blank optional fields read as 0.
func num(b []byte) int64 {
	v, _ := fixed.ParseDigits(b)
	return int64(v)
}

// recText is the UTF-8 form of one canonical record, made with a single
// allocation; the string fields of a decoded record are substrings of it.
type recText struct {
	b   []byte
	s   string
	off [RecordLen + 1]uint16
}

func (t *recText) init(b []byte) {
	t.b = b
	var buf [3 * RecordLen]byte
	n := 0
	for i, c := range b[:RecordLen] {
		t.off[i] = uint16(n)
		switch {
		case c < 0x80:
			buf[n] = c
			n++
		case c >= 0xA1 && c <= 0xBF: // U+FF61..U+FF7F
			buf[n], buf[n+1], buf[n+2] = 0xEF, 0xBD, c
			n += 3
		case c >= 0xC0 && c <= 0xDF: // U+FF80..U+FF9F
			buf[n], buf[n+1], buf[n+2] = 0xEF, 0xBE, c-0x40
			n += 3
		default: // not canonical: never in a validated record
			n += utf8.EncodeRune(buf[n:], utf8.RuneError)
		}
	}
	t.off[RecordLen] = uint16(n)
	t.s = string(buf[:n])
}

// raw is the field's UTF-8 text as is.
func (t *recText) raw(p fpos) string { return t.s[t.off[p.lo]:t.off[p.hi]] }

// text is a K field without trailing spaces.
func (t *recText) text(p fpos) string { return strings.TrimRight(t.raw(p), " ") }

// digits is an N field as a string, "" when blank.
func (t *recText) digits(p fpos) string {
	if fixed.FirstNonBlank(p.of(t.b)) < 0 {
		return ""
	}
	return t.raw(p)
}

func (t *recText) num(p fpos) int64 { return num(p.of(t.b)) }

func decodeHeader(b []byte) *Header {
	var t recText
	t.init(b)
	d := hDate.of(b)
	return &Header{
		Kind:          Kind(t.num(hKind)),
		Encoding:      Encoding(t.num(hCode)),
		ClientCode:    t.raw(hClient),
		ClientName:    t.text(hClientName),
		Date:          Date{Month: int(num(d[:2])), Day: int(num(d[2:]))},
		BankCode:      t.raw(hBank),
		BankName:      t.text(hBankName),
		BranchCode:    t.raw(hBranch),
		BranchName:    t.text(hBranchName),
		AccountType:   uint8(t.num(hAcctType)),
		AccountNumber: t.raw(hAcct),
	}
}

func decodeAccount(t *recText) Account {
	return Account{
		BankCode:      t.raw(dBank),
		BankName:      t.text(dBankName),
		BranchCode:    t.raw(dBranch),
		BranchName:    t.text(dBranchName),
		AccountType:   uint8(t.num(dAcctType)),
		AccountNumber: t.raw(dAcct),
		Name:          t.text(dName),
	}
}

func decodeData(kind Kind, b []byte) DataRecord {
	var t recText
	t.init(b)
	switch kind {
	case KindDebit:
		return &DebitData{
			Account:        decodeAccount(&t),
			Amount:         t.num(dAmount),
			NewCode:        uint8(t.num(dNew)),
			CustomerNumber: t.digits(xCust),
			Result:         ResultCode(t.num(xResult)),
		}
	case KindSalary, KindBonus, KindCivilSalary, KindCivilBonus:
		return &PayrollData{
			Account:        decodeAccount(&t),
			ClearingHouse:  t.digits(dClearing),
			Amount:         t.num(dAmount),
			NewCode:        uint8(t.num(dNew)),
			EmployeeNumber: t.digits(pEmp),
			DepartmentCode: t.digits(pDept),
		}
	}
	d := &TransferData{
		Account:       decodeAccount(&t),
		ClearingHouse: t.digits(dClearing),
		Amount:        t.num(dAmount),
		NewCode:       uint8(t.num(dNew)),
		TransferMode:  uint8(t.num(tMode)),
		IsEDI:         tFlag.of(b)[0] == 'Y',
	}
	if d.IsEDI {
		d.EDI = t.text(tEDI)
	} else {
		d.CustomerCode1 = t.digits(tCust1)
		d.CustomerCode2 = t.digits(tCust2)
	}
	return d
}

func decodeTrailer(kind Kind, b []byte) Record {
	if kind == KindDebit {
		return &DebitTrailer{
			Count: num(trCount.of(b)), Total: num(trTotal.of(b)),
			DoneCount: num(trDone.of(b)), DoneAmount: num(trDoneAmt.of(b)),
			FailedCount: num(trFailed.of(b)), FailedAmount: num(trFailedAmt.of(b)),
		}
	}
	return &Trailer{Count: num(trCount.of(b)), Total: num(trTotal.of(b))}
}

// ---- encoding to canonical bytes ----

// encodeOptions are the Writer's choices (the zero value is
// AppendRecord's: strict names, no folding).
type encodeOptions struct {
	names NameChars
	fold  bool // fold small kana (ｧ -> ｱ) instead of refusing them
}

// encoder fills one record and remembers the first field that failed.
type encoder struct {
	l   *fixed.Layout
	b   []byte
	o   encodeOptions
	err error
}

func newEncoder(l *fixed.Layout, dst []byte, o encodeOptions) (*encoder, []byte) {
	start := len(dst)
	dst = append(dst, blankRecord[:]...)
	e := &encoder{l: l, b: dst[start:], o: o}
	for _, s := range prepared[l].specs {
		if s.cnst != "" {
			copy(e.b[s.lo:s.hi], s.cnst)
		}
	}
	return e, dst
}

var blankRecord = func() (b [RecordLen]byte) {
	for i := range b {
		b[i] = ' '
	}
	return b
}()

func (e *encoder) fail(name string, msg string, err error) {
	if e.err != nil {
		return
	}
	f, _ := e.l.Field(name)
	e.err = e.l.FieldError(f, e.b, fixed.Pos{}, fixed.Invalid, 0, fmt.Errorf("%s: %w", msg, errOr(err)))
}

func errOr(err error) error {
	if err == nil {
		return errors.New("refused")
	}
	return err
}

// num writes v zero-filled; a negative or too large value is refused.
func (e *encoder) num(p fpos, name string, v int64) {
	if v < 0 || !fixed.PutDigits(p.of(e.b), uint64(v)) {
		f, _ := e.l.Field(name)
		e.fail(name, fmt.Sprintf("%d does not fit %s", v, f.Picture()), nil)
	}
}

// digits writes a digit string right-justified and zero-filled; "" leaves
// an optional field blank.
func (e *encoder) digits(p fpos, name, s string) {
	dst := p.of(e.b)
	if s == "" && optionalNumeric[name] {
		return
	}
	if len(s) == 0 || len(s) > len(dst) || fixed.FirstNonDigit([]byte(s)) >= 0 {
		e.fail(name, fmt.Sprintf("%q is not at most %d digits", s, len(dst)), nil)
		return
	}
	for i := range dst {
		dst[i] = '0'
	}
	copy(dst[len(dst)-len(s):], s)
}

// text writes s (UTF-8; full-width katakana and ASCII are converted to
// half-width) left-justified; characters outside the field's set (the
// name set, or EDI情報's) or a value too long are refused. With the fold
// option small kana are written full size (ｷｭｳﾖ -> ｷﾕｳﾖ).
func (e *encoder) text(p fpos, name, s string) {
	dst := p.of(e.b)
	var buf [64]byte
	var c []byte
	if fast, ok := appendHalfWidthFast(buf[:0], s); ok {
		c = fast
	} else {
		in := s
		if name == "EDI" {
			in = ediYen.Replace(in)
		}
		if e.o.fold {
			in = fullWidthFold.Replace(in)
		}
		var err error
		if c, err = charset.AppendHalfWidth(buf[:0], in); err != nil {
			e.fail(name, "cannot write "+strconv.Quote(s), err)
			return
		}
	}
	if e.o.fold {
		foldSmall(c)
	}
	if i := firstRefused(textSet(e.o.names, name), c); i >= 0 {
		e.fail(name, fmt.Sprintf("character %q not allowed %s", rune(charset.CanonicalRune(c[i])), setHint(name, c[i])), nil)
		return
	}
	if !fixed.PutText(dst, c) {
		e.fail(name, fmt.Sprintf("%q is longer than %d bytes", s, len(dst)), nil)
	}
}

// appendHalfWidthFast appends s when it holds only ASCII and half-width
// katakana (U+FF61–U+FF9F, UTF-8 EF BD A1–BF and EF BE 80–9F), the common
// case; ok is false for anything else (then charset.AppendHalfWidth
// converts or refuses it).
func appendHalfWidthFast(dst []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			dst = append(dst, c)
			i++
			continue
		}
		if c != 0xEF || i+2 >= len(s) {
			return dst, false
		}
		switch b1, b2 := s[i+1], s[i+2]; {
		case b1 == 0xBD && b2 >= 0xA1 && b2 <= 0xBF:
			dst = append(dst, b2) // U+FF61..U+FF7F -> 0xA1..0xBF
		case b1 == 0xBE && b2 >= 0x80 && b2 <= 0x9F:
			dst = append(dst, b2+0x40) // U+FF80..U+FF9F -> 0xC0..0xDF
		default:
			return dst, false
		}
		i += 3
	}
	return dst, true
}

// AppendRecord implements Record.
func (h *Header) AppendRecord(dst []byte) ([]byte, error) {
	return h.appendWith(dst, encodeOptions{})
}

func (h *Header) appendWith(dst []byte, o encodeOptions) ([]byte, error) {
	e, dst := newEncoder(HeaderLayout, dst, o)
	if !h.Kind.Valid() {
		e.fail("Kind", fmt.Sprintf("種別コード %d is not 11, 12, 21, 71, 72 or 91", h.Kind), nil)
	}
	e.num(hKind, "Kind", int64(h.Kind))
	if h.Encoding > EBCDIC {
		e.fail("CodeType", fmt.Sprintf("コード区分 %d is not 0 or 1", h.Encoding), nil)
	}
	e.num(hCode, "CodeType", int64(h.Encoding))
	e.digits(hClient, "ClientCode", h.ClientCode)
	e.text(hClientName, "ClientName", h.ClientName)
	if !h.Date.Valid() {
		e.fail("Date", "invalid MMDD date "+h.Date.String(), nil)
	}
	e.num(hDate, "Date", int64(h.Date.Month*100+h.Date.Day))
	e.digits(hBank, "BankCode", h.BankCode)
	e.text(hBankName, "BankName", h.BankName)
	e.digits(hBranch, "BranchCode", h.BranchCode)
	e.text(hBranchName, "BranchName", h.BranchName)
	if !validHeaderAccountType(h.AccountType) {
		e.fail("AccountType", fmt.Sprintf("預金種目 %d is not 1, 2 or 9", h.AccountType), nil)
	}
	e.num(hAcctType, "AccountType", int64(h.AccountType))
	e.digits(hAcct, "AccountNumber", h.AccountNumber)
	return dst, e.err
}

// encode writes bytes 2–80; debit selects the 口座振替 預金種目 set.
func (a *Account) encode(e *encoder, debit bool) {
	e.digits(dBank, "BankCode", a.BankCode)
	e.text(dBankName, "BankName", a.BankName)
	e.digits(dBranch, "BranchCode", a.BranchCode)
	e.text(dBranchName, "BranchName", a.BranchName)
	switch {
	case debit && !validDebitAccountType(a.AccountType):
		e.fail("AccountType", fmt.Sprintf("預金種目 %d is not 1, 2, 3 or 9 (口座振替)", a.AccountType), nil)
	case !debit && !validAccountType(a.AccountType):
		e.fail("AccountType", fmt.Sprintf("預金種目 %d is not 1, 2, 4 or 9", a.AccountType), nil)
	}
	e.num(dAcctType, "AccountType", int64(a.AccountType))
	e.digits(dAcct, "AccountNumber", a.AccountNumber)
	e.text(dName, "Name", a.Name)
}

func encodeCommon(e *encoder, amount int64, newCode uint8) {
	e.num(dAmount, "Amount", amount)
	if newCode > 2 {
		e.fail("NewCode", fmt.Sprintf("新規コード %d is not 0, 1 or 2", newCode), nil)
	}
	e.num(dNew, "NewCode", int64(newCode))
}

// AppendRecord implements Record.
func (d *TransferData) AppendRecord(dst []byte) ([]byte, error) {
	return d.appendWith(dst, encodeOptions{})
}

func (d *TransferData) appendWith(dst []byte, o encodeOptions) ([]byte, error) {
	e, dst := newEncoder(d.Layout(), dst, o)
	d.Account.encode(e, false)
	e.digits(dClearing, "ClearingHouse", d.ClearingHouse)
	encodeCommon(e, d.Amount, d.NewCode)
	if d.IsEDI {
		e.text(tEDI, "EDI", d.EDI)
		e.text(tFlag, "IDFlag", "Y")
	} else {
		e.digits(tCust1, "CustomerCode1", d.CustomerCode1)
		e.digits(tCust2, "CustomerCode2", d.CustomerCode2)
	}
	switch d.TransferMode {
	case 0:
	case 7, 8:
		e.num(tMode, "TransferMode", int64(d.TransferMode))
	default:
		e.fail("TransferMode", fmt.Sprintf("振込指定区分 %d is not 7 or 8", d.TransferMode), nil)
	}
	return dst, e.err
}

// AppendRecord implements Record.
func (d *PayrollData) AppendRecord(dst []byte) ([]byte, error) {
	return d.appendWith(dst, encodeOptions{})
}

func (d *PayrollData) appendWith(dst []byte, o encodeOptions) ([]byte, error) {
	e, dst := newEncoder(PayrollDataLayout, dst, o)
	d.Account.encode(e, false)
	e.digits(dClearing, "ClearingHouse", d.ClearingHouse)
	encodeCommon(e, d.Amount, d.NewCode)
	e.digits(pEmp, "EmployeeNumber", d.EmployeeNumber)
	e.digits(pDept, "DepartmentCode", d.DepartmentCode)
	return dst, e.err
}

// AppendRecord implements Record.
func (d *DebitData) AppendRecord(dst []byte) ([]byte, error) {
	return d.appendWith(dst, encodeOptions{})
}

func (d *DebitData) appendWith(dst []byte, o encodeOptions) ([]byte, error) {
	e, dst := newEncoder(DebitDataLayout, dst, o)
	d.Account.encode(e, true)
	encodeCommon(e, d.Amount, d.NewCode)
	e.digits(xCust, "CustomerNumber", d.CustomerNumber)
	if !d.Result.Valid() {
		e.fail("Result", fmt.Sprintf("振替結果コード %d is not defined", d.Result), nil)
	}
	e.num(xResult, "Result", int64(d.Result))
	return dst, e.err
}

// AppendRecord implements Record.
func (t *Trailer) AppendRecord(dst []byte) ([]byte, error) {
	return t.appendWith(dst, encodeOptions{})
}

func (t *Trailer) appendWith(dst []byte, o encodeOptions) ([]byte, error) {
	e, dst := newEncoder(TrailerLayout, dst, o)
	e.num(trCount, "Count", t.Count)
	e.num(trTotal, "Total", t.Total)
	return dst, e.err
}

// AppendRecord implements Record.
func (t *DebitTrailer) AppendRecord(dst []byte) ([]byte, error) {
	return t.appendWith(dst, encodeOptions{})
}

func (t *DebitTrailer) appendWith(dst []byte, o encodeOptions) ([]byte, error) {
	e, dst := newEncoder(DebitTrailerLayout, dst, o)
	e.num(trCount, "Count", t.Count)
	e.num(trTotal, "Total", t.Total)
	e.num(trDone, "DoneCount", t.DoneCount)
	e.num(trDoneAmt, "DoneAmount", t.DoneAmount)
	e.num(trFailed, "FailedCount", t.FailedCount)
	e.num(trFailedAmt, "FailedAmount", t.FailedAmount)
	return dst, e.err
}

// AppendRecord implements Record.
func (*End) AppendRecord(dst []byte) ([]byte, error) {
	_, dst = newEncoder(EndLayout, dst, encodeOptions{})
	return dst, nil
}

func (r *End) appendWith(dst []byte, _ encodeOptions) ([]byte, error) { return r.AppendRecord(dst) }

func validHeaderAccountType(t uint8) bool { return t == 1 || t == 2 || t == 9 }
func validAccountType(t uint8) bool       { return t == 1 || t == 2 || t == 4 || t == 9 }
func validDebitAccountType(t uint8) bool  { return t == 1 || t == 2 || t == 3 || t == 9 }
