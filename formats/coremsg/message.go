package coremsg

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/zcgw/zcgw/formats/charset"
	"github.com/zcgw/zcgw/formats/fixed"
)

// HeaderLen is the length of the common header.
const HeaderLen = 120

// Version is the layout version this package writes and the only one it
// reads.
const Version = 1

// Return codes (応答コード) in reply headers, mainframe condition-code style.
// Requests always carry 0.
const (
	RCOK       = 0  // 正常
	RCWarning  = 4  // 警告 (processed, see body Reason)
	RCBusiness = 8  // 業務エラー (refused, see body Reason)
	RCSystem   = 12 // システムエラー (not processed; may be retried)
	RCAbend    = 16 // 異常終了 (outcome unknown; inquire by reference)
)

// Header is the common 120-byte message header.
type Header struct {
	MsgType    string   `fixed:"1,4,X" label:"電文種別"`
	Version    uint8    `fixed:"5,2,9" label:"レイアウト版数"`
	RequestID  string   `fixed:"7,36,X" label:"要求ID (UUID)"`
	TxID       string   `fixed:"43,32,X" label:"取引ID (ZC txid)"`
	BankCode   string   `fixed:"75,4,9" label:"銀行コード"`
	Timestamp  string   `fixed:"79,17,9" label:"送信日時 (JST YYYYMMDDhhmmssfff)"`
	BodyLength int      `fixed:"96,6,9" label:"本文長"`
	ReturnCode uint16   `fixed:"102,4,9" label:"応答コード (0 正常, 4 警告, 8 業務エラー, 12 システムエラー, 16 異常終了)"`
	_          struct{} `fixed:"106,15,FILLER"`
}

// LayoutName names the header layout.
func (Header) LayoutName() string { return "coremsg.header" }

// RecordLength fixes the header length.
func (Header) RecordLength() int { return HeaderLen }

// Body is one of the message bodies of this package (PostingRequest,
// PostingReply, ...). The set is closed.
type Body interface {
	// MsgType is the 4-character message type code, e.g. "PSTQ".
	MsgType() string
	check(c *checker)
}

// Message is a header and a body.
type Message struct {
	Header Header
	Body   Body
}

// TypeInfo describes one message type.
type TypeInfo struct {
	Code      string // "PSTQ"
	Operation string // "POSTING"
	Reply     bool   // false for requests (Q), true for replies (R)
	Layout    *fixed.Layout
	goType    reflect.Type
}

// New returns a new zero body of this type (a pointer, e.g. *PostingRequest).
func (t TypeInfo) New() Body { return reflect.New(t.goType).Interface().(Body) }

var (
	headerLayout = fixed.MustLayoutOf(Header{})
	types        []TypeInfo
	byCode       = map[string]int{}
)

func init() {
	for _, b := range []struct {
		op string
		q  Body
		r  Body
	}{
		{"POSTING", PostingRequest{}, PostingReply{}},
		{"HOLD/RELEASE", HoldRequest{}, HoldReply{}},
		{"BALANCE-INQUIRY", BalanceRequest{}, BalanceReply{}},
		{"POSTING-STATUS-INQUIRY", StatusInquiryRequest{}, StatusInquiryReply{}},
		{"NAME-CHECK", NameCheckRequest{}, NameCheckReply{}},
		{"ACCOUNT-VERIFY", AccountVerifyRequest{}, AccountVerifyReply{}},
		{"AML-SCREEN", AMLScreenRequest{}, AMLScreenReply{}},
		{"NOTIFY", NotifyRequest{}, NotifyReply{}},
		{"ACCOUNT-MAINTENANCE", AccountMaintRequest{}, AccountMaintReply{}},
	} {
		for i, body := range []Body{b.q, b.r} {
			ti := TypeInfo{Code: body.MsgType(), Operation: b.op, Reply: i == 1,
				Layout: fixed.MustLayoutOf(body), goType: reflect.TypeOf(body)}
			byCode[ti.Code] = len(types)
			types = append(types, ti)
		}
	}
}

// Types lists every message type, requests before their replies.
func Types() []TypeInfo { return append([]TypeInfo(nil), types...) }

// Lookup finds a message type by code.
func Lookup(code string) (TypeInfo, bool) {
	i, ok := byCode[code]
	if !ok {
		return TypeInfo{}, false
	}
	return types[i], true
}

// HeaderLayout is the common header's layout.
func HeaderLayout() *fixed.Layout { return headerLayout }

// Layouts returns the header layout followed by every body layout (for
// generated documentation).
func Layouts() []*fixed.Layout {
	out := []*fixed.Layout{headerLayout}
	for _, t := range types {
		out = append(out, t.Layout)
	}
	return out
}

// Encode writes a whole message in cs. MsgType, Version and BodyLength are
// filled in from the body when zero; when set they must agree with it. The
// header and body are validated exactly as Decode validates them, so Encode
// never produces a message Decode would refuse. Field errors carry offsets
// from the start of the message.
func Encode(m *Message, cs *charset.Charset) ([]byte, error) {
	if m == nil || m.Body == nil || (reflect.ValueOf(m.Body).Kind() == reflect.Pointer && reflect.ValueOf(m.Body).IsNil()) {
		return nil, errors.New("coremsg: Encode needs a message with a body")
	}
	ti, ok := Lookup(m.Body.MsgType())
	if !ok {
		return nil, fmt.Errorf("coremsg: unknown body %T", m.Body)
	}
	h := m.Header
	if h.MsgType == "" {
		h.MsgType = ti.Code
	}
	if h.Version == 0 {
		h.Version = Version
	}
	if h.BodyLength == 0 {
		h.BodyLength = ti.Layout.Length()
	}
	out := make([]byte, HeaderLen+ti.Layout.Length())
	if err := fixed.MarshalTo(out[:HeaderLen], &h, cs); err != nil {
		return nil, err
	}
	if err := fixed.MarshalTo(out[HeaderLen:], m.Body, cs); err != nil {
		return nil, shift(err, HeaderLen)
	}
	if err := validate(&h, m.Body, ti, out, cs); err != nil {
		return nil, err
	}
	return out, nil
}

// Decode reads a whole message in cs: the header, then the body its type
// names. It refuses (with *fixed.Error, or *fixed.ErrorList for several
// field errors) a short header, an unknown type (UnknownRecordType), an
// unsupported version, a body length that differs from the type's layout
// (LengthMismatch) or from the bytes received (ShortRecord/LongRecord), any
// bad field and any invalid value. Offsets count from the message start.
func Decode(msg []byte, cs *charset.Charset) (*Message, error) {
	if len(msg) < HeaderLen {
		return nil, headerLayout.CheckLength(msg, fixed.Pos{})
	}
	var m Message
	if err := fixed.Unmarshal(msg[:HeaderLen], &m.Header, cs); err != nil {
		return nil, err
	}
	h := &m.Header
	mt, _ := headerLayout.Field("MsgType")
	ti, ok := Lookup(h.MsgType)
	if !ok {
		return nil, headerLayout.FieldError(mt, msg, fixed.Pos{}, fixed.UnknownRecordType, 0,
			fmt.Errorf("unknown message type %q", h.MsgType))
	}
	if h.Version != Version {
		f, _ := headerLayout.Field("Version")
		return nil, headerLayout.FieldError(f, msg, fixed.Pos{}, fixed.Invalid, 0,
			fmt.Errorf("layout version %02d not supported (want %02d)", h.Version, Version))
	}
	if h.BodyLength != ti.Layout.Length() {
		f, _ := headerLayout.Field("BodyLength")
		return nil, headerLayout.FieldError(f, msg, fixed.Pos{}, fixed.LengthMismatch, 0,
			fmt.Errorf("%s body is %d bytes, header says %d", ti.Code, ti.Layout.Length(), h.BodyLength))
	}
	body := msg[HeaderLen:]
	if e := ti.Layout.CheckLength(body, fixed.Pos{Offset: HeaderLen}); e != nil {
		e.Err = fmt.Errorf("body %d bytes, header body length %d: %w", len(body), h.BodyLength, e.Err)
		return nil, e
	}
	b := ti.New()
	if err := fixed.UnmarshalAt(body, b, cs, fixed.Pos{Offset: HeaderLen}); err != nil {
		return nil, err
	}
	m.Body = b
	if err := validate(h, b, ti, msg, cs); err != nil {
		return nil, err
	}
	return &m, nil
}

// shift moves the offsets of field errors by base bytes.
func shift(err error, base int64) error {
	var list *fixed.ErrorList
	if errors.As(err, &list) {
		for _, e := range list.Errs {
			e.Offset += base
		}
		return err
	}
	var fe *fixed.Error
	if errors.As(err, &fe) {
		fe.Offset += base
	}
	return err
}

// JST is the zone of message timestamps and dates.
var JST = time.FixedZone("JST", 9*60*60)

// FormatTimestamp renders t as the header timestamp: JST
// YYYYMMDDhhmmssfff.
func FormatTimestamp(t time.Time) string {
	t = t.In(JST)
	return t.Format("20060102150405") + fmt.Sprintf("%03d", t.Nanosecond()/int(time.Millisecond))
}

// ParseTimestamp reads a header timestamp (17 digits, JST).
func ParseTimestamp(s string) (time.Time, error) {
	if len(s) != 17 {
		return time.Time{}, fmt.Errorf("timestamp %q: want 17 digits", s)
	}
	t, err := time.ParseInLocation("20060102150405", s[:14], JST)
	if err != nil {
		return time.Time{}, fmt.Errorf("timestamp %q: %w", s, err)
	}
	ms, ok := fixed.ParseDigits([]byte(s[14:]))
	if !ok {
		return time.Time{}, fmt.Errorf("timestamp %q: milliseconds", s)
	}
	return t.Add(time.Duration(ms) * time.Millisecond), nil
}

// checker collects invalid values of one message as *fixed.Error values.
type checker struct {
	layout *fixed.Layout
	base   int64
	rec    []byte // the record's bytes in the message charset
	cs     *charset.Charset
	errs   fixed.ErrorList
}

func (c *checker) fail(field, format string, args ...any) {
	c.failReason(fixed.Invalid, field, format, args...)
}

func (c *checker) failReason(r fixed.Reason, field, format string, args ...any) {
	f, ok := c.layout.Field(field)
	if !ok { // a typo in this package; tests cover every check
		c.errs.Add(&fixed.Error{RecordType: c.layout.Name(), Field: field, Offset: c.base, Column: 1,
			Reason: r, Err: fmt.Errorf(format, args...)})
		return
	}
	e := c.layout.FieldError(f, c.rec, fixed.Pos{Offset: c.base}, r, 0, fmt.Errorf(format, args...))
	if c.cs != nil && f.Type != fixed.P {
		e.Charset = c.cs.Name()
		e.Text, _ = c.cs.DecodeString(e.Bytes)
	}
	c.errs.Add(e)
}

func (c *checker) oneOf(field, v string, allowed ...string) {
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	c.fail(field, "%q is not one of %s", v, strings.Join(allowed, ", "))
}

func (c *checker) required(field, v string) {
	if strings.TrimSpace(v) == "" {
		c.fail(field, "required")
	}
}

func (c *checker) blank(field, v string) {
	if v != "" {
		c.fail(field, "must be blank")
	}
}

func (c *checker) positive(field string, v int64) {
	if v <= 0 {
		c.fail(field, "amount %d must be positive", v)
	}
}

// currency is an ISO 4217 alphabetic code: three upper-case letters (a
// core keeps foreign-currency deposits as accounts of their own).
func (c *checker) currency(field, v string) {
	ok := len(v) == 3
	for i := 0; ok && i < 3; i++ {
		ok = v[i] >= 'A' && v[i] <= 'Z'
	}
	if !ok {
		c.fail(field, "currency %q is not an ISO 4217 code", v)
	}
}

func (c *checker) accountType(field string, v uint8) {
	switch v {
	case 1, 2, 4, 9:
	default:
		c.fail(field, "account type %d is not 1, 2, 4 or 9", v)
	}
}

// date checks YYYYMMDD; zeroOK allows "00000000".
func (c *checker) date(field, v string, zeroOK bool) {
	if zeroOK && strings.Trim(v, "0") == "" {
		return
	}
	if t, err := time.Parse("20060102", v); err != nil || t.Format("20060102") != v {
		c.fail(field, "%q is not a valid date YYYYMMDD", v)
	}
}

// stamp checks YYYYMMDDhhmmss; zeroOK allows all zeros.
func (c *checker) stamp(field, v string, zeroOK bool) {
	if zeroOK && strings.Trim(v, "0") == "" {
		return
	}
	if t, err := time.Parse("20060102150405", v); err != nil || t.Format("20060102150405") != v {
		c.fail(field, "%q is not a valid time YYYYMMDDhhmmss", v)
	}
}

func validate(h *Header, b Body, ti TypeInfo, msg []byte, cs *charset.Charset) error {
	hc := checker{layout: headerLayout, rec: msg[:HeaderLen], cs: cs}
	if h.MsgType != ti.Code {
		hc.fail("MsgType", "header type %q but body is %s", h.MsgType, ti.Code)
	}
	if h.Version != Version {
		hc.fail("Version", "layout version %02d not supported (want %02d)", h.Version, Version)
	}
	if h.BodyLength != ti.Layout.Length() {
		hc.failReason(fixed.LengthMismatch, "BodyLength", "%s body is %d bytes, header says %d", ti.Code, ti.Layout.Length(), h.BodyLength)
	}
	hc.required("RequestID", h.RequestID)
	if _, err := ParseTimestamp(h.Timestamp); err != nil {
		hc.fail("Timestamp", "%v", err)
	}
	if ti.Reply {
		switch h.ReturnCode {
		case RCOK, RCWarning, RCBusiness, RCSystem, RCAbend:
		default:
			hc.fail("ReturnCode", "return code %d is not 0, 4, 8, 12 or 16", h.ReturnCode)
		}
	} else if h.ReturnCode != 0 {
		hc.fail("ReturnCode", "a request carries return code 0, not %d", h.ReturnCode)
	}
	bc := checker{layout: ti.Layout, base: HeaderLen, rec: msg[HeaderLen:], cs: cs}
	b.check(&bc)
	all := &hc.errs
	for _, e := range bc.errs.Errs {
		all.Add(e)
	}
	switch all.Len() {
	case 0:
		return nil
	case 1:
		return all.Errs[0]
	}
	return all
}

func (b PostingRequest) check(c *checker) {
	c.oneOf("Kind", b.Kind, "D", "C", "V")
	c.required("PostingRef", b.PostingRef)
	if b.Kind == "V" {
		c.required("OriginalRef", b.OriginalRef)
	} else {
		c.blank("OriginalRef", b.OriginalRef)
	}
	c.accountType("AccountType", b.AccountType)
	c.positive("Amount", b.Amount)
	c.currency("Currency", b.Currency)
	c.date("ValueDate", b.ValueDate, false)
}

func (b PostingReply) check(c *checker) {
	c.required("PostingRef", b.PostingRef)
	c.oneOf("Status", b.Status, "A", "R", "D")
	if b.Status == "R" {
		c.required("Reason", b.Reason)
	} else {
		c.required("JournalNo", b.JournalNo)
	}
	c.stamp("PostedAt", b.PostedAt, b.Status == "R")
}

func (b HoldRequest) check(c *checker) {
	c.oneOf("Action", b.Action, "H", "R")
	c.required("HoldRef", b.HoldRef)
	c.accountType("AccountType", b.AccountType)
	c.positive("Amount", b.Amount)
	c.currency("Currency", b.Currency)
	c.date("ExpiryDate", b.ExpiryDate, true)
}

func (b HoldReply) check(c *checker) {
	c.required("HoldRef", b.HoldRef)
	c.oneOf("Status", b.Status, "A", "R")
	if b.Status == "R" {
		c.required("Reason", b.Reason)
	}
	if b.HeldTotal < 0 {
		c.fail("HeldTotal", "held total %d is negative", b.HeldTotal)
	}
}

func (b BalanceRequest) check(c *checker) { c.accountType("AccountType", b.AccountType) }

func (b BalanceReply) check(c *checker) {
	c.accountType("AccountType", b.AccountType)
	c.oneOf("AccountStatus", b.AccountStatus, "N", "F", "H", "C", "X")
	if b.HeldTotal < 0 {
		c.fail("HeldTotal", "held total %d is negative", b.HeldTotal)
	}
	if b.AccountStatus != "X" || b.Currency != "" { // no such account: no currency
		c.currency("Currency", b.Currency)
	}
	c.stamp("AsOf", b.AsOf, false)
}

func (b StatusInquiryRequest) check(c *checker) { c.required("PostingRef", b.PostingRef) }

func (b StatusInquiryReply) check(c *checker) {
	c.required("PostingRef", b.PostingRef)
	c.oneOf("Status", b.Status, "A", "R", "P", "N")
	if b.Status == "N" {
		c.blank("Kind", b.Kind)
	} else {
		c.oneOf("Kind", b.Kind, "D", "C", "V")
	}
	if b.Amount < 0 {
		c.fail("Amount", "amount %d is negative", b.Amount)
	}
	c.stamp("PostedAt", b.PostedAt, b.Status != "A")
}

func (b NameCheckRequest) check(c *checker) {
	c.accountType("AccountType", b.AccountType)
	c.required("Name", b.Name)
}

func (b NameCheckReply) check(c *checker) {
	c.oneOf("Result", b.Result, "M", "U", "N")
}

func (b AccountVerifyRequest) check(c *checker) {
	c.required("VerificationID", b.VerificationID)
	c.accountType("AccountType", b.AccountType)
}

func (b AccountVerifyReply) check(c *checker) {
	c.required("VerificationID", b.VerificationID)
	c.oneOf("Result", b.Result, "M", "U", "N")
	if b.MatchScore > 100 {
		c.fail("MatchScore", "match score %d above 100", b.MatchScore)
	}
	c.oneOf("FraudWarning", b.FraudWarning, "Y", "N")
}

func (b AMLScreenRequest) check(c *checker) {
	c.oneOf("CheckType", b.CheckType, "I", "R")
	c.accountType("AccountType", b.AccountType)
	c.positive("Amount", b.Amount)
	c.currency("Currency", b.Currency)
}

func (b AMLScreenReply) check(c *checker) {
	c.oneOf("Result", b.Result, "C", "H", "P")
	if b.Result != "C" {
		c.required("CaseRef", b.CaseRef)
	}
}

func (b NotifyRequest) check(c *checker) {
	c.oneOf("Kind", b.Kind, "CR", "RP")
	c.accountType("AccountType", b.AccountType)
	c.positive("Amount", b.Amount)
	c.currency("Currency", b.Currency)
}

func (b NotifyReply) check(c *checker) {
	c.oneOf("Result", b.Result, "A", "R")
	if b.Result == "R" {
		c.required("Reason", b.Reason)
	}
}

func (b AccountMaintRequest) check(c *checker) {
	c.oneOf("Action", b.Action, "O", "H", "N", "C")
	c.required("MaintRef", b.MaintRef)
	c.accountType("AccountType", b.AccountType)
	if b.Action == "O" {
		c.required("Name", b.Name)
	} else {
		c.blank("Name", b.Name)
	}
}

func (b AccountMaintReply) check(c *checker) {
	c.required("MaintRef", b.MaintRef)
	c.oneOf("Status", b.Status, "A", "D", "R")
	if b.Status == "R" {
		c.required("Reason", b.Reason)
	}
	c.oneOf("AccountStatus", b.AccountStatus, "N", "F", "H", "C", "X")
	if b.HeldTotal < 0 {
		c.fail("HeldTotal", "held total %d is negative", b.HeldTotal)
	}
	c.stamp("ProcessedAt", b.ProcessedAt, b.Status == "R")
}
