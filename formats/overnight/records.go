package overnight

import (
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/formats/charset"
	"github.com/zcgw/zcgw/formats/fixed"
)

// FileType says whether a file is a posting file or a result file.
type FileType string

// File types.
const (
	Postings FileType = "POST"
	Results  FileType = "RSLT"
)

// Date is a calendar date (YYYYMMDD in the file).
type Date struct{ Year, Month, Day int }

// IsZero reports whether d is the zero date (00000000).
func (d Date) IsZero() bool { return d == Date{} }

// Valid reports whether d is a real calendar date with a 4-digit year.
func (d Date) Valid() bool {
	if d.Year < 1 || d.Year > 9999 || d.Month < 1 || d.Month > 12 || d.Day < 1 {
		return false
	}
	days := [13]int{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[d.Month]
	if d.Month == 2 && d.Year%4 == 0 && (d.Year%100 != 0 || d.Year%400 == 0) {
		days = 29
	}
	return d.Day <= days
}

func (d Date) String() string { return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day) }

func (d Date) digits() int64 { return int64(d.Year*10000 + d.Month*100 + d.Day) }

func dateOf(v int64) Date { return Date{int(v / 10000), int(v / 100 % 100), int(v % 100)} }

// Kind is the 取引区分 of a detail.
type Kind byte

// Kinds.
const (
	Posting  Kind = 'P'
	Reversal Kind = 'R'
)

// Side is the 貸借区分 of a detail.
type Side byte

// Sides.
const (
	Debit  Side = 'D'
	Credit Side = 'C'
)

// ResultCode is the core's answer to one posting.
type ResultCode uint8

// Result codes.
const (
	Posted                 ResultCode = 0
	InsufficientFunds      ResultCode = 1
	NoSuchAccount          ResultCode = 2
	AccountClosed          ResultCode = 3
	AccountFrozen          ResultCode = 4
	AlreadyPosted          ResultCode = 5
	OriginalNotFound       ResultCode = 6
	OriginalAlreadyReverse ResultCode = 7
	OtherFailure           ResultCode = 99
)

var codeNames = map[ResultCode]string{
	Posted: "posted", InsufficientFunds: "insufficient funds", NoSuchAccount: "no such account",
	AccountClosed: "account closed", AccountFrozen: "account frozen", AlreadyPosted: "reference already posted",
	OriginalNotFound: "original not found", OriginalAlreadyReverse: "original already reversed", OtherFailure: "other",
}

// Valid reports whether r is a defined result code.
func (r ResultCode) Valid() bool { _, ok := codeNames[r]; return ok }

func (r ResultCode) String() string {
	if s, ok := codeNames[r]; ok {
		return fmt.Sprintf("%02d %s", uint8(r), s)
	}
	return fmt.Sprintf("%02d (unknown)", uint8(r))
}

// Record is *Header, *PostingDetail, *ResultDetail, *Trailer or
// *ResultTrailer.
type Record interface {
	Layout() *fixed.Layout
	// AppendRecord appends the record's 200 bytes, or returns a
	// *fixed.Error naming the field that cannot be encoded.
	AppendRecord(dst []byte) ([]byte, error)
}

// Header starts both files.
type Header struct {
	FileType     FileType
	Version      int // 1
	BankCode     string
	BusinessDate Date
	FileSeq      int64
	// CreatedAt is YYYYMMDDhhmmss in JST, kept as written.
	CreatedAt string
}

// Account is where a posting goes.
type Account struct {
	BranchCode    string // 3 digits
	AccountType   uint8  // 1, 2, 4, 9
	AccountNumber string // 7 digits
}

// PostingDetail is one posting to make.
type PostingDetail struct {
	Seq         int64
	Kind        Kind
	Side        Side
	TxID        string
	Ref         string
	OriginalRef string // reversals only
	Account
	Amount    int64
	ValueDate Date
	Memo      string
}

// ResultDetail is the core's answer to one posting.
type ResultDetail struct {
	Seq     int64
	Kind    Kind
	Side    Side
	TxID    string
	Ref     string
	Code    ResultCode
	CoreRef string
	Account
	Amount     int64
	PostedDate Date // zero unless posted
}

// Trailer closes a posting file.
type Trailer struct {
	Count, DebitCount, DebitTotal, CreditCount, CreditTotal, HashTotal int64
}

// ResultTrailer closes a result file.
type ResultTrailer struct {
	Count, PostedCount, RejectedCount, DebitTotal, CreditTotal, HashTotal int64
}

func (*Header) Layout() *fixed.Layout        { return HeaderLayout }
func (*PostingDetail) Layout() *fixed.Layout { return PostingLayout }
func (*ResultDetail) Layout() *fixed.Layout  { return ResultLayout }
func (*Trailer) Layout() *fixed.Layout       { return TrailerLayout }
func (*ResultTrailer) Layout() *fixed.Layout { return ResultTrailerLayout }

// HashMod is the modulus of the hash total.
const HashMod = 1_000_000_000_000_000

// hashOf is the hash contribution of an account: 店番 and 口座番号 read
// as one 10-digit number.
func hashOf(branch, account []byte) int64 {
	b, _ := fixed.ParseDigits(branch)
	a, _ := fixed.ParseDigits(account)
	return int64(b)*10_000_000 + int64(a)
}

// ---- decoding (validated canonical bytes) ----

type fieldRef struct{ lo, hi int }

func ref(l *fixed.Layout, name string) fieldRef {
	f, ok := l.Field(name)
	if !ok {
		panic("overnight: no field " + name + " in " + l.Name())
	}
	return fieldRef{f.Start - 1, f.End()}
}

func (r fieldRef) of(b []byte) []byte { return b[r.lo:r.hi] }

func num(b []byte) int64 { v, _ := fixed.ParseDigits(b); return int64(v) }

func text(b []byte) string {
	s, _ := charset.CanonicalString(fixed.TrimText(b))
	return s
}

var (
	hType, hVersion, hBank, hDate, hSeq, hCreated = ref(HeaderLayout, "FileType"), ref(HeaderLayout, "Version"), ref(HeaderLayout, "BankCode"), ref(HeaderLayout, "BusinessDate"), ref(HeaderLayout, "FileSeq"), ref(HeaderLayout, "CreatedAt")

	// Shared by posting and result details (same positions).
	dSeq, dKind, dSide, dTx, dRef = ref(PostingLayout, "Seq"), ref(PostingLayout, "Kind"), ref(PostingLayout, "Side"), ref(PostingLayout, "TxID"), ref(PostingLayout, "Ref")
	dBranch, dAcctType, dAcct     = ref(PostingLayout, "BranchCode"), ref(PostingLayout, "AccountType"), ref(PostingLayout, "AccountNumber")
	dAmount                       = ref(PostingLayout, "Amount")
	pOrig, pValue, pMemo          = ref(PostingLayout, "OriginalRef"), ref(PostingLayout, "ValueDate"), ref(PostingLayout, "Memo")
	rCode, rCoreRef, rPosted      = ref(ResultLayout, "Code"), ref(ResultLayout, "CoreRef"), ref(ResultLayout, "PostedDate")

	tCount, tDebitCount, tDebitTotal, tCreditCount, tCreditTotal, tHash = ref(TrailerLayout, "Count"), ref(TrailerLayout, "DebitCount"), ref(TrailerLayout, "DebitTotal"), ref(TrailerLayout, "CreditCount"), ref(TrailerLayout, "CreditTotal"), ref(TrailerLayout, "HashTotal")
	rtPosted, rtRejected, rtDebit, rtCredit                             = ref(ResultTrailerLayout, "PostedCount"), ref(ResultTrailerLayout, "RejectedCount"), ref(ResultTrailerLayout, "DebitTotal"), ref(ResultTrailerLayout, "CreditTotal")
)

func init() {
	// The shared detail positions must agree between the two layouts.
	for _, name := range []string{"Seq", "Kind", "Side", "TxID", "Ref", "BranchCode", "AccountType", "AccountNumber", "Amount"} {
		if ref(PostingLayout, name) != ref(ResultLayout, name) {
			panic("overnight: field " + name + " differs between posting and result details")
		}
	}
}

func decodeHeader(b []byte) *Header {
	return &Header{FileType: FileType(hType.of(b)), Version: int(num(hVersion.of(b))), BankCode: string(hBank.of(b)),
		BusinessDate: dateOf(num(hDate.of(b))), FileSeq: num(hSeq.of(b)), CreatedAt: string(hCreated.of(b))}
}

func decodeAccount(b []byte) Account {
	return Account{BranchCode: string(dBranch.of(b)), AccountType: uint8(num(dAcctType.of(b))), AccountNumber: string(dAcct.of(b))}
}

func decodePosting(b []byte) *PostingDetail {
	return &PostingDetail{Seq: num(dSeq.of(b)), Kind: Kind(b[dKind.lo]), Side: Side(b[dSide.lo]), TxID: text(dTx.of(b)),
		Ref: text(dRef.of(b)), OriginalRef: text(pOrig.of(b)), Account: decodeAccount(b), Amount: num(dAmount.of(b)),
		ValueDate: dateOf(num(pValue.of(b))), Memo: text(pMemo.of(b))}
}

func decodeResult(b []byte) *ResultDetail {
	return &ResultDetail{Seq: num(dSeq.of(b)), Kind: Kind(b[dKind.lo]), Side: Side(b[dSide.lo]), TxID: text(dTx.of(b)),
		Ref: text(dRef.of(b)), Code: ResultCode(num(rCode.of(b))), CoreRef: text(rCoreRef.of(b)), Account: decodeAccount(b),
		Amount: num(dAmount.of(b)), PostedDate: dateOf(num(rPosted.of(b)))}
}

func decodeTrailer(b []byte) *Trailer {
	return &Trailer{Count: num(tCount.of(b)), DebitCount: num(tDebitCount.of(b)), DebitTotal: num(tDebitTotal.of(b)),
		CreditCount: num(tCreditCount.of(b)), CreditTotal: num(tCreditTotal.of(b)), HashTotal: num(tHash.of(b))}
}

func decodeResultTrailer(b []byte) *ResultTrailer {
	return &ResultTrailer{Count: num(tCount.of(b)), PostedCount: num(rtPosted.of(b)), RejectedCount: num(rtRejected.of(b)),
		DebitTotal: num(rtDebit.of(b)), CreditTotal: num(rtCredit.of(b)), HashTotal: num(tHash.of(b))}
}

// ---- encoding ----

type encoder struct {
	l   *fixed.Layout
	b   []byte
	err error
}

func newEncoder(l *fixed.Layout, dst []byte) (*encoder, []byte) {
	start := len(dst)
	dst = append(dst, strings.Repeat(" ", RecordLen)...)
	e := &encoder{l: l, b: dst[start:]}
	for _, f := range l.Fields() {
		if f.Const != "" {
			copy(f.Bytes(e.b), f.Const)
		}
	}
	return e, dst
}

func (e *encoder) fail(name, msg string) {
	if e.err == nil {
		f, _ := e.l.Field(name)
		e.err = e.l.FieldError(f, e.b, fixed.Pos{}, fixed.Invalid, 0, fmt.Errorf("%s", msg))
	}
}

func (e *encoder) num(name string, v int64) {
	f, _ := e.l.Field(name)
	if v < 0 || !fixed.PutDigits(f.Bytes(e.b), uint64(v)) {
		e.fail(name, fmt.Sprintf("%d does not fit %s", v, f.Picture()))
	}
}

func (e *encoder) digits(name, s string) {
	f, _ := e.l.Field(name)
	dst := f.Bytes(e.b)
	if len(s) == 0 || len(s) > len(dst) || fixed.FirstNonDigit([]byte(s)) >= 0 {
		e.fail(name, fmt.Sprintf("%q is not 1 to %d digits", s, len(dst)))
		return
	}
	for i := range dst {
		dst[i] = '0'
	}
	copy(dst[len(dst)-len(s):], s)
}

func (e *encoder) text(name, s string, required bool) {
	f, _ := e.l.Field(name)
	c, err := charset.AppendCanonical(nil, s)
	switch {
	case err != nil:
		e.fail(name, err.Error())
	case required && strings.TrimSpace(s) == "":
		e.fail(name, "must not be blank")
	case !fixed.PutText(f.Bytes(e.b), c):
		e.fail(name, fmt.Sprintf("%q is longer than %d bytes", s, f.Len))
	}
}

func (e *encoder) date(name string, d Date, zeroOK bool) {
	if !(zeroOK && d.IsZero()) && !d.Valid() {
		e.fail(name, "invalid date "+d.String())
	}
	e.num(name, d.digits())
}

func (e *encoder) account(a Account) {
	e.digits("BranchCode", a.BranchCode)
	if a.AccountType != 1 && a.AccountType != 2 && a.AccountType != 4 && a.AccountType != 9 {
		e.fail("AccountType", fmt.Sprintf("預金種目 %d is not 1, 2, 4 or 9", a.AccountType))
	}
	e.num("AccountType", int64(a.AccountType))
	e.digits("AccountNumber", a.AccountNumber)
}

func (e *encoder) kindSide(k Kind, s Side) {
	if k != Posting && k != Reversal {
		e.fail("Kind", fmt.Sprintf("取引区分 %q is not P or R", byte(k)))
	}
	if s != Debit && s != Credit {
		e.fail("Side", fmt.Sprintf("貸借区分 %q is not D or C", byte(s)))
	}
	e.text("Kind", string(rune(k)), true)
	e.text("Side", string(rune(s)), true)
}

// AppendRecord implements Record.
func (h *Header) AppendRecord(dst []byte) ([]byte, error) {
	e, dst := newEncoder(HeaderLayout, dst)
	if h.FileType != Postings && h.FileType != Results {
		e.fail("FileType", fmt.Sprintf("%q is not POST or RSLT", h.FileType))
	}
	e.text("FileType", string(h.FileType), true)
	if h.Version != 1 {
		e.fail("Version", fmt.Sprintf("layout version %d is not 1", h.Version))
	}
	e.num("Version", int64(h.Version))
	e.digits("BankCode", h.BankCode)
	e.date("BusinessDate", h.BusinessDate, false)
	e.num("FileSeq", h.FileSeq)
	if !validStamp([]byte(h.CreatedAt)) {
		e.fail("CreatedAt", fmt.Sprintf("%q is not YYYYMMDDhhmmss", h.CreatedAt))
	} else {
		e.digits("CreatedAt", h.CreatedAt)
	}
	return dst, e.err
}

// AppendRecord implements Record.
func (p *PostingDetail) AppendRecord(dst []byte) ([]byte, error) {
	e, dst := newEncoder(PostingLayout, dst)
	e.num("Seq", p.Seq)
	e.kindSide(p.Kind, p.Side)
	e.text("TxID", p.TxID, true)
	e.text("Ref", p.Ref, true)
	switch {
	case p.Kind == Reversal && strings.TrimSpace(p.OriginalRef) == "":
		e.fail("OriginalRef", "a reversal names the reference it reverses")
	case p.Kind == Posting && p.OriginalRef != "":
		e.fail("OriginalRef", "only a reversal has an original reference")
	}
	e.text("OriginalRef", p.OriginalRef, false)
	e.account(p.Account)
	if p.Amount <= 0 {
		e.fail("Amount", fmt.Sprintf("amount %d must be positive", p.Amount))
	}
	e.num("Amount", p.Amount)
	e.date("ValueDate", p.ValueDate, false)
	e.text("Memo", p.Memo, false)
	return dst, e.err
}

// AppendRecord implements Record.
func (r *ResultDetail) AppendRecord(dst []byte) ([]byte, error) {
	e, dst := newEncoder(ResultLayout, dst)
	e.num("Seq", r.Seq)
	e.kindSide(r.Kind, r.Side)
	e.text("TxID", r.TxID, true)
	e.text("Ref", r.Ref, true)
	if !r.Code.Valid() {
		e.fail("Code", fmt.Sprintf("result code %d is not defined", r.Code))
	}
	e.num("Code", int64(r.Code))
	e.text("CoreRef", r.CoreRef, r.Code == Posted)
	if r.Code != Posted && r.CoreRef != "" {
		e.fail("CoreRef", "only a posted detail has a core reference")
	}
	e.account(r.Account)
	if r.Amount <= 0 {
		e.fail("Amount", fmt.Sprintf("amount %d must be positive", r.Amount))
	}
	e.num("Amount", r.Amount)
	if r.Code == Posted {
		e.date("PostedDate", r.PostedDate, false)
	} else {
		if !r.PostedDate.IsZero() {
			e.fail("PostedDate", "only a posted detail has a posting date")
		}
		e.num("PostedDate", 0)
	}
	return dst, e.err
}

// AppendRecord implements Record.
func (t *Trailer) AppendRecord(dst []byte) ([]byte, error) {
	e, dst := newEncoder(TrailerLayout, dst)
	e.num("Count", t.Count)
	e.num("DebitCount", t.DebitCount)
	e.num("DebitTotal", t.DebitTotal)
	e.num("CreditCount", t.CreditCount)
	e.num("CreditTotal", t.CreditTotal)
	e.num("HashTotal", t.HashTotal)
	return dst, e.err
}

// AppendRecord implements Record.
func (t *ResultTrailer) AppendRecord(dst []byte) ([]byte, error) {
	e, dst := newEncoder(ResultTrailerLayout, dst)
	e.num("Count", t.Count)
	e.num("PostedCount", t.PostedCount)
	e.num("RejectedCount", t.RejectedCount)
	e.num("DebitTotal", t.DebitTotal)
	e.num("CreditTotal", t.CreditTotal)
	e.num("HashTotal", t.HashTotal)
	return dst, e.err
}

// validStamp checks YYYYMMDDhhmmss.
func validStamp(b []byte) bool {
	if len(b) != 14 || fixed.FirstNonDigit(b) >= 0 {
		return false
	}
	if !dateOf(num(b[:8])).Valid() {
		return false
	}
	h, m, s := num(b[8:10]), num(b[10:12]), num(b[12:14])
	return h < 24 && m < 60 && s < 60
}
