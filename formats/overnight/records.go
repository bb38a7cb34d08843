package overnight

import (
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/formats/charset"
	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/fixedfile"
)

// FileType says whether a file is a posting file or a result file.
type FileType string

// File types.
const (
	Postings FileType = "POST"
	Results  FileType = "RSLT"
)

// Date is a calendar date (YYYYMMDD in the file).
type Date = fixedfile.Date

var dateOf = fixedfile.DateOf

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
const HashMod = fixedfile.HashMod

var (
	hashOf = fixedfile.HashOf
	ref    = fixedfile.RefOf
	num    = fixedfile.Num
)

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
	return &Header{FileType: FileType(hType.Of(b)), Version: int(num(hVersion.Of(b))), BankCode: string(hBank.Of(b)),
		BusinessDate: dateOf(num(hDate.Of(b))), FileSeq: num(hSeq.Of(b)), CreatedAt: string(hCreated.Of(b))}
}

func decodeAccount(b []byte) Account {
	return Account{BranchCode: string(dBranch.Of(b)), AccountType: uint8(num(dAcctType.Of(b))), AccountNumber: string(dAcct.Of(b))}
}

func decodePosting(b []byte) *PostingDetail {
	return &PostingDetail{Seq: num(dSeq.Of(b)), Kind: Kind(b[dKind.Lo]), Side: Side(b[dSide.Lo]), TxID: text(dTx.Of(b)),
		Ref: text(dRef.Of(b)), OriginalRef: text(pOrig.Of(b)), Account: decodeAccount(b), Amount: num(dAmount.Of(b)),
		ValueDate: dateOf(num(pValue.Of(b))), Memo: text(pMemo.Of(b))}
}

func decodeResult(b []byte) *ResultDetail {
	return &ResultDetail{Seq: num(dSeq.Of(b)), Kind: Kind(b[dKind.Lo]), Side: Side(b[dSide.Lo]), TxID: text(dTx.Of(b)),
		Ref: text(dRef.Of(b)), Code: ResultCode(num(rCode.Of(b))), CoreRef: text(rCoreRef.Of(b)), Account: decodeAccount(b),
		Amount: num(dAmount.Of(b)), PostedDate: dateOf(num(rPosted.Of(b)))}
}

func decodeTrailer(b []byte) *Trailer {
	return &Trailer{Count: num(tCount.Of(b)), DebitCount: num(tDebitCount.Of(b)), DebitTotal: num(tDebitTotal.Of(b)),
		CreditCount: num(tCreditCount.Of(b)), CreditTotal: num(tCreditTotal.Of(b)), HashTotal: num(tHash.Of(b))}
}

func decodeResultTrailer(b []byte) *ResultTrailer {
	return &ResultTrailer{Count: num(tCount.Of(b)), PostedCount: num(rtPosted.Of(b)), RejectedCount: num(rtRejected.Of(b)),
		DebitTotal: num(rtDebit.Of(b)), CreditTotal: num(rtCredit.Of(b)), HashTotal: num(tHash.Of(b))}
}

// ---- encoding ----

type encoder struct{ *fixedfile.Encoder }

func newEncoder(l *fixed.Layout, dst []byte) (encoder, []byte) {
	e, dst := fixedfile.NewEncoder(l, dst)
	return encoder{e}, dst
}

func (e encoder) text(name, s string, required bool) {
	f, _ := e.L.Field(name)
	c, err := charset.AppendCanonical(nil, s)
	switch {
	case err != nil:
		e.Fail(name, err.Error())
	case required && strings.TrimSpace(s) == "":
		e.Fail(name, "must not be blank")
	case !fixed.PutText(f.Bytes(e.B), c):
		e.Fail(name, fmt.Sprintf("%q is longer than %d bytes", s, f.Len))
	}
}

func (e encoder) account(a Account) {
	e.PadDigits("BranchCode", a.BranchCode)
	e.AccountType("AccountType", a.AccountType)
	e.PadDigits("AccountNumber", a.AccountNumber)
}

func (e encoder) kindSide(k Kind, s Side) {
	if k != Posting && k != Reversal {
		e.Fail("Kind", fmt.Sprintf("取引区分 %q is not P or R", byte(k)))
	}
	if s != Debit && s != Credit {
		e.Fail("Side", fmt.Sprintf("貸借区分 %q is not D or C", byte(s)))
	}
	e.text("Kind", string(rune(k)), true)
	e.text("Side", string(rune(s)), true)
}

// AppendRecord implements Record.
func (h *Header) AppendRecord(dst []byte) ([]byte, error) {
	e, dst := newEncoder(HeaderLayout, dst)
	if h.FileType != Postings && h.FileType != Results {
		e.Fail("FileType", fmt.Sprintf("%q is not POST or RSLT", h.FileType))
	}
	e.text("FileType", string(h.FileType), true)
	if h.Version != 1 {
		e.Fail("Version", fmt.Sprintf("layout version %d is not 1", h.Version))
	}
	e.Num("Version", int64(h.Version))
	e.PadDigits("BankCode", h.BankCode)
	e.Date("BusinessDate", h.BusinessDate, false)
	e.Num("FileSeq", h.FileSeq)
	e.Stamp("CreatedAt", h.CreatedAt)
	return dst, e.Err
}

// AppendRecord implements Record.
func (p *PostingDetail) AppendRecord(dst []byte) ([]byte, error) {
	e, dst := newEncoder(PostingLayout, dst)
	e.Num("Seq", p.Seq)
	e.kindSide(p.Kind, p.Side)
	e.text("TxID", p.TxID, true)
	e.text("Ref", p.Ref, true)
	switch {
	case p.Kind == Reversal && strings.TrimSpace(p.OriginalRef) == "":
		e.Fail("OriginalRef", "a reversal names the reference it reverses")
	case p.Kind == Posting && p.OriginalRef != "":
		e.Fail("OriginalRef", "only a reversal has an original reference")
	}
	e.text("OriginalRef", p.OriginalRef, false)
	e.account(p.Account)
	if p.Amount <= 0 {
		e.Fail("Amount", fmt.Sprintf("amount %d must be positive", p.Amount))
	}
	e.Num("Amount", p.Amount)
	e.Date("ValueDate", p.ValueDate, false)
	e.text("Memo", p.Memo, false)
	return dst, e.Err
}

// AppendRecord implements Record.
func (r *ResultDetail) AppendRecord(dst []byte) ([]byte, error) {
	e, dst := newEncoder(ResultLayout, dst)
	e.Num("Seq", r.Seq)
	e.kindSide(r.Kind, r.Side)
	e.text("TxID", r.TxID, true)
	e.text("Ref", r.Ref, true)
	if !r.Code.Valid() {
		e.Fail("Code", fmt.Sprintf("result code %d is not defined", r.Code))
	}
	e.Num("Code", int64(r.Code))
	e.text("CoreRef", r.CoreRef, r.Code == Posted)
	if r.Code != Posted && r.CoreRef != "" {
		e.Fail("CoreRef", "only a posted detail has a core reference")
	}
	e.account(r.Account)
	if r.Amount <= 0 {
		e.Fail("Amount", fmt.Sprintf("amount %d must be positive", r.Amount))
	}
	e.Num("Amount", r.Amount)
	if r.Code == Posted {
		e.Date("PostedDate", r.PostedDate, false)
	} else {
		if !r.PostedDate.IsZero() {
			e.Fail("PostedDate", "only a posted detail has a posting date")
		}
		e.Num("PostedDate", 0)
	}
	return dst, e.Err
}

// AppendRecord implements Record.
func (t *Trailer) AppendRecord(dst []byte) ([]byte, error) {
	e, dst := newEncoder(TrailerLayout, dst)
	e.Num("Count", t.Count)
	e.Num("DebitCount", t.DebitCount)
	e.Num("DebitTotal", t.DebitTotal)
	e.Num("CreditCount", t.CreditCount)
	e.Num("CreditTotal", t.CreditTotal)
	e.Num("HashTotal", t.HashTotal)
	return dst, e.Err
}

// AppendRecord implements Record.
func (t *ResultTrailer) AppendRecord(dst []byte) ([]byte, error) {
	e, dst := newEncoder(ResultTrailerLayout, dst)
	e.Num("Count", t.Count)
	e.Num("PostedCount", t.PostedCount)
	e.Num("RejectedCount", t.RejectedCount)
	e.Num("DebitTotal", t.DebitTotal)
	e.Num("CreditTotal", t.CreditTotal)
	e.Num("HashTotal", t.HashTotal)
	return dst, e.Err
}
