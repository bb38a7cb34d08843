package corebalance

import (
	"fmt"
	"github.com/zcgw/zcgw/formats/fixedfile"

	"github.com/zcgw/zcgw/formats/coreacct"
	"github.com/zcgw/zcgw/formats/fixed"
)

// FileType is the header's ファイル種別.
const FileType = "CBAL"

// Date is a calendar date (YYYYMMDD in the file).
type Date = fixedfile.Date

var dateOf = fixedfile.DateOf

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
const HashMod = fixedfile.HashMod

var (
	hashOf = fixedfile.HashOf
	ref    = fixedfile.RefOf
	num    = fixedfile.Num
)

var (
	hType, hVersion, hBank, hDate, hCutoff = ref(HeaderLayout, "FileType"), ref(HeaderLayout, "Version"), ref(HeaderLayout, "BankCode"), ref(HeaderLayout, "BusinessDate"), ref(HeaderLayout, "CutoffAt")

	dSeq, dBranch, dType, dNumber, dStatus, dBalance = ref(DetailLayout, "Seq"), ref(DetailLayout, "BranchCode"), ref(DetailLayout, "AccountType"), ref(DetailLayout, "AccountNumber"), ref(DetailLayout, "Status"), ref(DetailLayout, "Balance")

	tCount, tTotal, tHash = ref(TrailerLayout, "Count"), ref(TrailerLayout, "BalanceTotal"), ref(TrailerLayout, "HashTotal")
)

// keyBytes is the detail's account key in sort order: 店番, 預金種目,
// 口座番号 (contiguous in the record).
func keyBytes(b []byte) []byte { return b[dBranch.Lo:dNumber.Hi] }

func decodeHeader(b []byte) *Header {
	return &Header{Version: int(num(hVersion.Of(b))), BankCode: string(hBank.Of(b)), BusinessDate: dateOf(num(hDate.Of(b))),
		CutoffAt: string(hCutoff.Of(b))}
}

func decodeDetail(b []byte) *Detail {
	return &Detail{Seq: num(dSeq.Of(b)), Account: coreacct.Key{Branch: string(dBranch.Of(b)), Type: uint8(num(dType.Of(b))),
		Number: string(dNumber.Of(b))}, Status: Status(b[dStatus.Lo]), Balance: num(dBalance.Of(b))}
}

func decodeTrailer(b []byte) *Trailer {
	return &Trailer{Count: num(tCount.Of(b)), BalanceTotal: num(tTotal.Of(b)), HashTotal: num(tHash.Of(b))}
}

// ---- encoding ----

// AppendRecord implements Record.
func (h *Header) AppendRecord(dst []byte) ([]byte, error) {
	e, dst := fixedfile.NewEncoder(HeaderLayout, dst)
	copy(hType.Of(e.B), FileType)
	if h.Version != 1 {
		e.Fail("Version", fmt.Sprintf("layout version %d is not 1", h.Version))
	}
	e.Num("Version", int64(h.Version))
	e.Digits("BankCode", h.BankCode)
	e.Date("BusinessDate", h.BusinessDate, false)
	e.Stamp("CutoffAt", h.CutoffAt)
	return dst, e.Err
}

// AppendRecord implements Record.
func (d *Detail) AppendRecord(dst []byte) ([]byte, error) {
	e, dst := fixedfile.NewEncoder(DetailLayout, dst)
	e.Num("Seq", d.Seq)
	e.Digits("BranchCode", d.Account.Branch)
	e.AccountType("AccountType", d.Account.Type)
	e.Digits("AccountNumber", d.Account.Number)
	if d.Status != Open && d.Status != Closed {
		e.Fail("Status", fmt.Sprintf("口座状態 %q is not O or C", byte(d.Status)))
	} else {
		e.B[dStatus.Lo] = byte(d.Status)
	}
	e.Num("Balance", d.Balance)
	return dst, e.Err
}

// AppendRecord implements Record.
func (t *Trailer) AppendRecord(dst []byte) ([]byte, error) {
	e, dst := fixedfile.NewEncoder(TrailerLayout, dst)
	e.Num("Count", t.Count)
	e.Num("BalanceTotal", t.BalanceTotal)
	e.Num("HashTotal", t.HashTotal)
	return dst, e.Err
}

// FileName is the name a core gives the balance file of a bank (4-digit
// code) and business date: CBAL-<bank>-<YYYYMMDD>.dat.
func FileName(bankCode string, d Date) string {
	return fmt.Sprintf("CBAL-%04s-%04d%02d%02d.dat", bankCode, d.Year, d.Month, d.Day)
}
