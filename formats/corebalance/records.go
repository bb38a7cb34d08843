package corebalance

import (
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/formats/coreacct"
	"github.com/zcgw/zcgw/formats/fixed"
)

// FileType is the header's ファイル種別.
const FileType = "CBAL"

// Date is a calendar date (YYYYMMDD in the file).
type Date struct{ Year, Month, Day int }

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

// Status is the 口座状態 of a detail.
type Status byte

// Account statuses.
const (
	Open   Status = 'O'
	Closed Status = 'C'
)

// Record is *Header, *Detail or *Trailer.
type Record interface {
	Layout() *fixed.Layout
	// AppendRecord appends the record's 100 bytes, or returns a
	// *fixed.Error naming the field that cannot be encoded.
	AppendRecord(dst []byte) ([]byte, error)
}

// Header starts the file.
type Header struct {
	Version      int // 1
	BankCode     string
	BusinessDate Date
	// CutoffAt is YYYYMMDDhhmmss in JST, kept as written.
	CutoffAt string
}

// Detail is one account's balance.
type Detail struct {
	Seq     int64
	Account coreacct.Key
	Status  Status
	Balance int64
}

// Trailer closes the file.
type Trailer struct {
	Count, BalanceTotal, HashTotal int64
}

func (*Header) Layout() *fixed.Layout  { return HeaderLayout }
func (*Detail) Layout() *fixed.Layout  { return DetailLayout }
func (*Trailer) Layout() *fixed.Layout { return TrailerLayout }

// HashMod is the modulus of the hash total.
const HashMod = 1_000_000_000_000_000

func hashOf(branch, account []byte) int64 {
	b, _ := fixed.ParseDigits(branch)
	a, _ := fixed.ParseDigits(account)
	return int64(b)*10_000_000 + int64(a)
}

// ---- decoding (validated bytes) ----

type fieldRef struct{ lo, hi int }

func ref(l *fixed.Layout, name string) fieldRef {
	f, ok := l.Field(name)
	if !ok {
		panic("corebalance: no field " + name + " in " + l.Name())
	}
	return fieldRef{f.Start - 1, f.End()}
}

func (r fieldRef) of(b []byte) []byte { return b[r.lo:r.hi] }

func num(b []byte) int64 { v, _ := fixed.ParseDigits(b); return int64(v) }

var (
	hType, hVersion, hBank, hDate, hCutoff = ref(HeaderLayout, "FileType"), ref(HeaderLayout, "Version"), ref(HeaderLayout, "BankCode"), ref(HeaderLayout, "BusinessDate"), ref(HeaderLayout, "CutoffAt")

	dSeq, dBranch, dType, dNumber, dStatus, dBalance = ref(DetailLayout, "Seq"), ref(DetailLayout, "BranchCode"), ref(DetailLayout, "AccountType"), ref(DetailLayout, "AccountNumber"), ref(DetailLayout, "Status"), ref(DetailLayout, "Balance")

	tCount, tTotal, tHash = ref(TrailerLayout, "Count"), ref(TrailerLayout, "BalanceTotal"), ref(TrailerLayout, "HashTotal")
)

// keyBytes is the detail's account key in sort order: 店番, 預金種目,
// 口座番号 (contiguous in the record).
func keyBytes(b []byte) []byte { return b[dBranch.lo:dNumber.hi] }

func decodeHeader(b []byte) *Header {
	return &Header{Version: int(num(hVersion.of(b))), BankCode: string(hBank.of(b)), BusinessDate: dateOf(num(hDate.of(b))),
		CutoffAt: string(hCutoff.of(b))}
}

func decodeDetail(b []byte) *Detail {
	return &Detail{Seq: num(dSeq.of(b)), Account: coreacct.Key{Branch: string(dBranch.of(b)), Type: uint8(num(dType.of(b))),
		Number: string(dNumber.of(b))}, Status: Status(b[dStatus.lo]), Balance: num(dBalance.of(b))}
}

func decodeTrailer(b []byte) *Trailer {
	return &Trailer{Count: num(tCount.of(b)), BalanceTotal: num(tTotal.of(b)), HashTotal: num(tHash.of(b))}
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

func (e *encoder) digits(name, s string, width int) {
	f, _ := e.l.Field(name)
	dst := f.Bytes(e.b)
	if len(s) != width || fixed.FirstNonDigit([]byte(s)) >= 0 {
		e.fail(name, fmt.Sprintf("%q is not %d digits", s, width))
		return
	}
	copy(dst, s)
}

// AppendRecord implements Record.
func (h *Header) AppendRecord(dst []byte) ([]byte, error) {
	e, dst := newEncoder(HeaderLayout, dst)
	copy(hType.of(e.b), FileType)
	if h.Version != 1 {
		e.fail("Version", fmt.Sprintf("layout version %d is not 1", h.Version))
	}
	e.num("Version", int64(h.Version))
	e.digits("BankCode", h.BankCode, 4)
	if !h.BusinessDate.Valid() {
		e.fail("BusinessDate", "invalid date "+h.BusinessDate.String())
	}
	e.num("BusinessDate", h.BusinessDate.digits())
	if !validStamp([]byte(h.CutoffAt)) {
		e.fail("CutoffAt", fmt.Sprintf("%q is not YYYYMMDDhhmmss", h.CutoffAt))
	} else {
		e.digits("CutoffAt", h.CutoffAt, 14)
	}
	return dst, e.err
}

// AppendRecord implements Record.
func (d *Detail) AppendRecord(dst []byte) ([]byte, error) {
	e, dst := newEncoder(DetailLayout, dst)
	e.num("Seq", d.Seq)
	e.digits("BranchCode", d.Account.Branch, 3)
	if t := d.Account.Type; t != 1 && t != 2 && t != 4 && t != 9 {
		e.fail("AccountType", fmt.Sprintf("預金種目 %d is not 1, 2, 4 or 9", t))
	}
	e.num("AccountType", int64(d.Account.Type))
	e.digits("AccountNumber", d.Account.Number, 7)
	if d.Status != Open && d.Status != Closed {
		e.fail("Status", fmt.Sprintf("口座状態 %q is not O or C", byte(d.Status)))
	} else {
		e.b[dStatus.lo] = byte(d.Status)
	}
	e.num("Balance", d.Balance)
	return dst, e.err
}

// AppendRecord implements Record.
func (t *Trailer) AppendRecord(dst []byte) ([]byte, error) {
	e, dst := newEncoder(TrailerLayout, dst)
	e.num("Count", t.Count)
	e.num("BalanceTotal", t.BalanceTotal)
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

// FileName is the name a core gives the balance file of a bank (4-digit
// code) and business date: CBAL-<bank>-<YYYYMMDD>.dat.
func FileName(bankCode string, d Date) string {
	return fmt.Sprintf("CBAL-%04s-%04d%02d%02d.dat", bankCode, d.Year, d.Month, d.Day)
}
