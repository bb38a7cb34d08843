package zengin

import (
	"fmt"

	"github.com/zcgw/zcgw/formats/charset"
	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/recordio"
)

// Limits of the trailer fields.
const (
	maxCount  = 999_999         // 合計件数 N(6)
	maxTotal  = 999_999_999_999 // 合計金額 N(12)
	maxGroups = 1000            // group summaries kept in a Summary
	ebcdic0   = 0xF0            // EBCDIC '0'; '0'..'9' are 0xF0..0xF9
	noCanon   = 0x00            // marks an EBCDIC byte with no JIS X 0201 form
)

// Summary describes a file that was read or validated.
type Summary struct {
	// Records is the number of records read (broken ones included).
	Records int
	// Bytes is the file size.
	Bytes int64
	// Separator is the record separator style found.
	Separator recordio.Separator
	// GroupCount is the number of header…trailer groups.
	GroupCount int
	// Groups describes the first 1000 groups.
	Groups []GroupSummary
	// DataCount and DataTotal sum every group's data records and amounts.
	DataCount, DataTotal int64
}

// GroupSummary describes one header…trailer group.
type GroupSummary struct {
	// Header is the group's header (as far as it could be read).
	Header Header
	// HeaderRecord is the header's 1-based record number.
	HeaderRecord int
	// Count and Total are the data records and the sum of their amounts.
	Count, Total int64
	// Result is true for a 口座振替 result group (its trailer carries
	// 振替済/振替不能 figures); Done*/Failed* are then the figures computed
	// from the 振替結果コード of the data records.
	Result                    bool
	DoneCount, DoneAmount     int64
	FailedCount, FailedAmount int64
	// Trailer and End report whether the group's trailer and end record
	// were seen.
	Trailer, End bool
	// Incomplete is set when a record of the group could not be read (a
	// short record, an unreadable amount or result code); its trailer
	// figures are then not compared, as the error is already reported.
	Incomplete bool
}

type state uint8

const (
	stStart   state = iota // before the first header, or after an end record
	stGroup                // after a header or data record
	stTrailer              // after a trailer
)

// lay is a layout with its fields pre-split for the hot path.
type lay struct {
	l     *fixed.Layout
	specs []spec
	// tab is the table of allowed bytes of every column, for the one-pass
	// check.
	segs []segment
	// optional are the blank-able numeric fields, checked after the pass.
	optional []spec
}

// Byte classes of the one-pass check (K fields use their textSet).
const (
	clsDigit        = iota // 9
	clsBlank               // ダミー: spaces
	clsDigitOrBlank        // optional 9: digits, or all blank (checked after)
	clsOther               // any other type: checked field by field
)

var classOK = func() (t [4][256]bool) {
	for c := range 256 {
		b := byte(c)
		t[clsDigit][c] = b >= '0' && b <= '9'
		t[clsBlank][c] = b == ' '
		t[clsDigitOrBlank][c] = t[clsDigit][c] || b == ' '
	}
	return t
}()

// classBad is classOK inverted as bytes (1 = refused), for a branch-free
// loop.
var classBad = func() (t [4][256]byte) {
	for c := range t {
		for b := range t[c] {
			if !classOK[c][b] {
				t[c][b] = 1
			}
		}
	}
	return t
}()

// segment is a run of columns of the same byte class.
type segment struct {
	lo, hi int
	tab    *[256]byte
}

type spec struct {
	f        fixed.Field
	lo, hi   int
	optional bool
	cnst     string     // Const padded to the field length
	set      *[256]byte // refused bytes of a K field (textSet)
}

// prepared maps each layout to its prepared form with the strict name set
// (the encoder takes its constants from it).
var prepared = map[*fixed.Layout]*lay{}

func prepare(l *fixed.Layout, names NameChars) *lay {
	x := &lay{l: l}
	if names == NamesStrict {
		prepared[l] = x
	}
	for _, f := range l.Fields() {
		s := spec{f: f, lo: f.Start - 1, hi: f.End(), optional: f.Type == fixed.N && optionalNumeric[f.Name]}
		if f.Const != "" {
			s.cnst = f.Const
		}
		tab := &classBad[clsOther]
		switch {
		case s.optional:
			tab = &classBad[clsDigitOrBlank]
			x.optional = append(x.optional, s)
		case f.Type == fixed.N:
			tab = &classBad[clsDigit]
		case f.Type == fixed.K:
			s.set = textSet(names, f.Name)
			tab = s.set
		case f.Type == fixed.Filler:
			tab = &classBad[clsBlank]
		}
		x.specs = append(x.specs, s)
		if n := len(x.segs); n > 0 && x.segs[n-1].tab == tab {
			x.segs[n-1].hi = s.hi
		} else {
			x.segs = append(x.segs, segment{lo: s.lo, hi: s.hi, tab: tab})
		}
	}
	return x
}

// fast reports whether every byte of the record is allowed in its column
// and every optional numeric field is all digits or all blank; the
// constants (データ区分) were matched by the dispatch. One pass, no
// allocation.
func (x *lay) fast(b []byte) bool {
	b = b[:RecordLen]
	var bad byte
	for _, sg := range x.segs {
		tab := sg.tab
		for _, c := range b[sg.lo:sg.hi] {
			bad |= tab[c]
		}
	}
	if bad != 0 {
		return false
	}
	for i := range x.optional {
		v := b[x.optional[i].lo:x.optional[i].hi]
		if v[0] == ' ' {
			if fixed.FirstNonBlank(v) >= 0 {
				return false
			}
		} else if fixed.FirstNonDigit(v) >= 0 {
			return false
		}
	}
	return true
}

// lays are the prepared layouts of one name character set.
type lays struct {
	header, transfer, transferEDI, payroll, debit, trailer, debitTrailer, end *lay
}

func prepareAll(names NameChars) *lays {
	return &lays{
		header:       prepare(HeaderLayout, names),
		transfer:     prepare(TransferDataLayout, names),
		transferEDI:  prepare(TransferEDIDataLayout, names),
		payroll:      prepare(PayrollDataLayout, names),
		debit:        prepare(DebitDataLayout, names),
		trailer:      prepare(TrailerLayout, names),
		debitTrailer: prepare(DebitTrailerLayout, names),
		end:          prepare(EndLayout, names),
	}
}

// layoutsFor holds the prepared layouts by NameChars.
var layoutsFor = [2]*lays{prepareAll(NamesStrict), prepareAll(NamesLongVowel)}

// checker validates records one at a time in the context of their file:
// record order, group totals, encodings. It never allocates for a valid
// record.
type checker struct {
	L      *lays // the layouts of the bank's name set
	report func(*fixed.Error)
	bad    bool // the current record has an error
	st     state
	g      GroupSummary
	gEnc   Encoding
	gOpen  bool // a group summary is pending (header seen)
	sum    Summary
	canon  [RecordLen]byte
	rec    recordio.Record
	b      []byte // canonical bytes of the current record
	last   int    // last record number
}

func newChecker(report func(*fixed.Error), names NameChars) *checker {
	return &checker{L: layoutsFor[names&1], report: report}
}

// lost is told about a record the scanner could not frame (short or
// truncated): the current group's figures can no longer be checked.
func (c *checker) lost(e *fixed.Error) {
	if e.Reason == fixed.ShortRecord && c.st == stGroup {
		c.g.Incomplete = true
	}
}

func (c *checker) addErr(e *fixed.Error) {
	c.bad = true
	c.report(e)
}

// fieldErr reports field s of layout x with the offending byte at idx.
func (c *checker) fieldErr(x *lay, s *spec, reason fixed.Reason, idx int, msg string) {
	e := x.l.FieldError(s.f, c.rec.Bytes, fixed.Pos{Record: c.rec.Num, Offset: c.rec.Offset}, reason, idx,
		&recordio.LineError{Line: c.rec.Line, Msg: msg})
	c.addErr(e)
}

// recordErr reports a problem with the whole record at column col.
func (c *checker) recordErr(x *lay, reason fixed.Reason, col int, msg string) {
	name := "zengin"
	if x != nil {
		name = x.l.Name()
	}
	c.addErr(&fixed.Error{Record: c.rec.Num, RecordType: name, Offset: c.rec.Offset + int64(col-1), Column: col,
		Bytes: recordio.Clip(c.rec.Bytes[col-1:]), Reason: reason, Err: &recordio.LineError{Line: c.rec.Line, Msg: msg}})
}

func (c *checker) field(x *lay, name string) *spec {
	for i := range x.specs {
		if x.specs[i].f.Name == name {
			return &x.specs[i]
		}
	}
	panic("zengin: no field " + name)
}

// fields checks every field of x: type, character set, constants. Blank
// optional numeric fields pass.
func (c *checker) fields(x *lay) {
	b := c.b
	if x.fast(b) {
		return
	}
	for i := range x.specs {
		s := &x.specs[i]
		v := b[s.lo:s.hi]
		var r fixed.Reason
		var idx int
		if s.set != nil { // K: the field's own set (names or EDI情報)
			if idx = firstRefused(s.set, v); idx >= 0 {
				r = fixed.BadChar
			}
		} else {
			r, idx = fixed.Check(s.f.Type, v)
		}
		if r == fixed.Overflow && s.f.Type == fixed.N {
			r = 0 // a 20-digit code (顧客番号) is digits, not a uint64
		}
		if r == 0 {
			if s.cnst != "" && string(v) != s.cnst {
				c.fieldErr(x, s, fixed.ConstMismatch, 0, fmt.Sprintf("want %q", s.cnst))
			}
			continue
		}
		if s.optional && fixed.FirstNonBlank(v) < 0 {
			continue
		}
		c.fieldErr(x, s, r, idx, describe(s.f, v, idx, r))
	}
}

func describe(f fixed.Field, v []byte, idx int, r fixed.Reason) string {
	if idx < 0 || idx >= len(v) {
		idx = 0
	}
	ch := v[idx]
	shown := fmt.Sprintf("byte 0x%02X", ch)
	if rr := charset.CanonicalRune(ch); rr > 0 {
		shown = fmt.Sprintf("%q (0x%02X)", rr, ch)
	}
	if ch == noCanon {
		shown = "a byte with no JIS X 0201 form"
	}
	switch r {
	case fixed.NotNumeric:
		return fmt.Sprintf("%s at column %d: %s must be digits only", shown, f.Start+idx, f.Picture())
	case fixed.BadChar:
		return fmt.Sprintf("%s at column %d is not allowed %s", shown, f.Start+idx, setHint(f.Name, ch))
	case fixed.NotBlank:
		return fmt.Sprintf("%s at column %d: ダミー must be spaces", shown, f.Start+idx)
	}
	return r.String()
}

// decodeBytes puts the canonical form of the current record in c.b.
func (c *checker) decodeBytes(enc Encoding) {
	raw := c.rec.Bytes
	if enc == JIS {
		c.b = raw
		return
	}
	c.b = c.canon[:]
	if err := charset.EBCDIC290.ToCanonical(c.b, raw, nil); err != nil {
		// Mark unmappable bytes; the field checks report them.
		for i, x := range raw {
			v, ok := charset.EBCDIC290.ToCanonicalByte(x)
			if !ok {
				v = noCanon
			}
			c.b[i] = v
		}
	}
}

// check validates one record; ok is false when the record has any error.
// The returned bytes (canonical) are valid until the next call.
func (c *checker) check(rec recordio.Record) (b []byte, kind Kind, typ RecordType, ok bool) {
	c.rec, c.bad, c.last = rec, false, rec.Num
	c.sum.Records = rec.Num
	enc := JIS
	if rec.Bytes[0] >= ebcdic0 && rec.Bytes[0] <= ebcdic0+9 {
		enc = EBCDIC
	}
	c.decodeBytes(enc)
	typ = RecordType(c.b[0])
	if typ != TypeHeader && c.st == stGroup && enc != c.gEnc {
		c.g.Incomplete = true
		c.recordErr(nil, fixed.BadChar, 1, fmt.Sprintf("record is %s-encoded inside a group whose header says コード区分 %s", encName(enc), c.gEnc))
		return c.b, c.g.Header.Kind, typ, false
	}
	switch typ {
	case TypeHeader:
		c.header(enc)
	case TypeData:
		c.data()
	case TypeTrailer:
		c.trailer()
	case TypeEnd:
		c.end()
	default:
		if c.st == stGroup {
			c.g.Incomplete = true
		}
		c.recordErr(nil, fixed.UnknownRecordType, 1, fmt.Sprintf("データ区分 %s is not 1, 2, 8 or 9%s", describeByte(c.b[0]), bomHint(c.rec)))
	}
	return c.b, c.g.Header.Kind, typ, !c.bad
}

// bomHint explains a first record that starts with a byte order mark.
func bomHint(rec recordio.Record) string {
	if rec.Offset != 0 {
		return ""
	}
	b := rec.Bytes
	switch {
	case len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF:
		return " (the file starts with a UTF-8 byte order mark EF BB BF: Zengin files are single-byte JIS or EBCDIC, without one)"
	case len(b) >= 2 && (b[0] == 0xFE && b[1] == 0xFF || b[0] == 0xFF && b[1] == 0xFE):
		return " (the file starts with a UTF-16 byte order mark: Zengin files are single-byte JIS or EBCDIC)"
	}
	return ""
}

func encName(e Encoding) string {
	if e == EBCDIC {
		return "EBCDIC"
	}
	return "JIS"
}

func describeByte(ch byte) string {
	if r := charset.CanonicalRune(ch); r > 0 {
		return fmt.Sprintf("%q", r)
	}
	return fmt.Sprintf("0x%02X", ch)
}

func (c *checker) closeGroup() {
	if !c.gOpen {
		return
	}
	c.gOpen = false
	c.sum.GroupCount++
	c.sum.DataCount += c.g.Count
	c.sum.DataTotal += c.g.Total
	if len(c.sum.Groups) < maxGroups {
		c.sum.Groups = append(c.sum.Groups, c.g)
	}
}

func (c *checker) header(enc Encoding) {
	if c.st == stGroup {
		c.recordErr(c.L.header, fixed.Invalid, 1, fmt.Sprintf("header, but the group started at record %d has no trailer", c.g.HeaderRecord))
	}
	c.closeGroup()
	c.fields(c.L.header)
	b := c.b
	kind := Kind(num2(hKind.of(b)))
	if !kind.Valid() {
		c.fieldErr(c.L.header, c.field(c.L.header, "Kind"), fixed.Invalid, 0, "種別コード must be 11, 12, 21, 71, 72 or 91")
	}
	code := hCode.of(b)[0]
	switch {
	case code == '0' && enc == EBCDIC:
		c.fieldErr(c.L.header, c.field(c.L.header, "CodeType"), fixed.Invalid, 0, "コード区分 0 (JIS) but the header is EBCDIC-encoded")
	case code == '1' && enc == JIS:
		c.fieldErr(c.L.header, c.field(c.L.header, "CodeType"), fixed.Invalid, 0, "コード区分 1 (EBCDIC) but the header is JIS-encoded")
	case code != '0' && code != '1':
		c.fieldErr(c.L.header, c.field(c.L.header, "CodeType"), fixed.Invalid, 0, "コード区分 must be 0 (JIS) or 1 (EBCDIC)")
	}
	c.checkDate(c.L.header, "Date", hDate.of(b))
	if t := hAcctType.of(b)[0]; t != '1' && t != '2' && t != '9' {
		c.fieldErr(c.L.header, c.field(c.L.header, "AccountType"), fixed.Invalid, 0, "預金種目 must be 1, 2 or 9")
	}
	c.st = stGroup
	c.gEnc = enc
	c.gOpen = true
	c.g = GroupSummary{HeaderRecord: c.rec.Num}
	if !c.bad {
		c.g.Header = *decodeHeader(b)
	} else {
		c.g.Header = Header{Kind: kind, Encoding: enc}
	}
}

func num2(b []byte) int64 {
	v, ok := fixed.ParseDigits(b)
	if !ok {
		return -1
	}
	return int64(v)
}

func (c *checker) checkDate(x *lay, name string, v []byte) {
	m, d := num2(v[:2]), num2(v[2:])
	if m < 0 || d < 0 {
		return // already reported as not numeric
	}
	if !(Date{Month: int(m), Day: int(d)}).Valid() {
		c.fieldErr(x, c.field(x, name), fixed.Invalid, 0, fmt.Sprintf("%s is not a valid MMDD date", v))
	}
}

func (c *checker) dataLayout() *lay {
	switch k := c.g.Header.Kind; {
	case k == KindDebit:
		return c.L.debit
	case k.Payroll():
		return c.L.payroll
	}
	if tFlag.of(c.b)[0] == 'Y' {
		return c.L.transferEDI
	}
	return c.L.transfer
}

func (c *checker) data() {
	if c.st != stGroup {
		c.recordErr(c.L.transfer, fixed.Invalid, 1, "data record outside a header…trailer group")
		return
	}
	if !c.g.Header.Kind.Valid() {
		c.recordErr(c.L.transfer, fixed.Invalid, 1, fmt.Sprintf("data record in the group started at record %d, whose 種別コード is invalid", c.g.HeaderRecord))
		return
	}
	x := c.dataLayout()
	c.fields(x)
	b := c.b
	if t := dAcctType.of(b)[0]; x == c.L.debit && !validDebitAccountType(t-'0') {
		c.fieldErr(x, c.field(x, "AccountType"), fixed.Invalid, 0, "預金種目 must be 1, 2, 3 or 9 (口座振替)")
	} else if x != c.L.debit && !validAccountType(t-'0') {
		c.fieldErr(x, c.field(x, "AccountType"), fixed.Invalid, 0, "預金種目 must be 1, 2, 4 or 9")
	}
	if v := dNew.of(b)[0]; v != '0' && v != '1' && v != '2' && v != ' ' {
		c.fieldErr(x, c.field(x, "NewCode"), fixed.Invalid, 0, "新規コード must be 0, 1 or 2")
	}
	amount := num2(dAmount.of(b))
	if amount < 0 {
		c.g.Incomplete = true
	}
	switch x {
	case c.L.transfer, c.L.transferEDI:
		if v := tMode.of(b)[0]; v != '7' && v != '8' && v != ' ' {
			c.fieldErr(x, c.field(x, "TransferMode"), fixed.Invalid, 0, "振込指定区分 must be 7 (電信), 8 (文書) or blank")
		}
		if v := tFlag.of(b)[0]; v != 'Y' && v != ' ' {
			c.fieldErr(x, c.field(x, "IDFlag"), fixed.Invalid, 0, "識別表示 must be Y or blank")
		}
	case c.L.debit:
		r := num2(xResult.of(b))
		if r < 0 {
			c.g.Incomplete = true
		}
		if r >= 0 && !ResultCode(r).Valid() {
			c.fieldErr(x, c.field(x, "Result"), fixed.Invalid, 0, "振替結果コード must be 0, 1, 2, 3, 4, 8 or 9")
		}
		if amount >= 0 && r >= 0 {
			if r == 0 {
				c.g.DoneCount++
				c.g.DoneAmount += amount
			} else {
				c.g.FailedCount++
				c.g.FailedAmount += amount
			}
		}
	}
	c.g.Count++
	if amount > 0 {
		c.g.Total += amount
	}
}

func (c *checker) trailer() {
	if c.st != stGroup {
		c.recordErr(c.L.trailer, fixed.Invalid, 1, "trailer record without a header")
		c.st = stTrailer
		return
	}
	x := c.L.trailer
	if c.g.Header.Kind == KindDebit {
		x = c.L.debitTrailer
	}
	c.fields(x)
	b := c.b
	c.st = stTrailer
	c.g.Trailer = true
	if c.g.Incomplete {
		return
	}
	c.equal(x, "Count", trCount.of(b), c.g.Count, maxCount, "合計件数", "data records in the group")
	c.equal(x, "Total", trTotal.of(b), c.g.Total, maxTotal, "合計金額", "sum of the data amounts")
	if x == c.L.debitTrailer {
		done, doneAmt := num2(trDone.of(b)), num2(trDoneAmt.of(b))
		failed, failedAmt := num2(trFailed.of(b)), num2(trFailedAmt.of(b))
		if done == 0 && doneAmt == 0 && failed == 0 && failedAmt == 0 && c.g.Count > 0 {
			// A request: every 振替結果コード must be 0.
			if c.g.FailedCount > 0 {
				c.fieldErr(x, c.field(x, "FailedCount"), fixed.Invalid, 0,
					fmt.Sprintf("trailer carries no results (a request), but %d data record(s) have a non-zero 振替結果コード", c.g.FailedCount))
			}
		} else {
			c.g.Result = true
			c.equal(x, "DoneCount", trDone.of(b), c.g.DoneCount, maxCount, "振替済件数", "data records with 振替結果コード 0")
			c.equal(x, "DoneAmount", trDoneAmt.of(b), c.g.DoneAmount, maxTotal, "振替済金額", "sum of their amounts")
			c.equal(x, "FailedCount", trFailed.of(b), c.g.FailedCount, maxCount, "振替不能件数", "data records with a non-zero 振替結果コード")
			c.equal(x, "FailedAmount", trFailedAmt.of(b), c.g.FailedAmount, maxTotal, "振替不能金額", "sum of their amounts")
		}
	}
}

// equal checks a trailer figure against the computed one.
func (c *checker) equal(x *lay, name string, field []byte, computed, max int64, label, what string) {
	s := c.field(x, name)
	if computed > max {
		c.fieldErr(x, s, fixed.Overflow, 0, fmt.Sprintf("%s %d does not fit %s", what, computed, s.f.Picture()))
		return
	}
	got := num2(field)
	if got < 0 {
		return // reported as not numeric
	}
	if got != computed {
		reason := fixed.Invalid
		if name == "Count" {
			reason = fixed.LengthMismatch
		}
		c.fieldErr(x, s, reason, 0, fmt.Sprintf("trailer %s is %d, but the %s is %d", label, got, what, computed))
	}
}

func (c *checker) end() {
	switch c.st {
	case stStart:
		c.recordErr(c.L.end, fixed.Invalid, 1, "end record without a header…trailer group")
	case stGroup:
		c.recordErr(c.L.end, fixed.Invalid, 1, fmt.Sprintf("end record, but the group started at record %d has no trailer", c.g.HeaderRecord))
	}
	c.fields(c.L.end)
	c.g.End = true
	c.closeGroup()
	c.st = stStart
}

// finish reports what is missing at the end of the file.
func (c *checker) finish(size int64, line int64) {
	c.sum.Bytes = size
	at := func(msg string) {
		c.report(&fixed.Error{Record: c.last, RecordType: "zengin", Offset: size, Reason: fixed.Invalid,
			Err: &recordio.LineError{Line: line, Msg: msg}})
	}
	switch {
	case c.last == 0 && size == 0:
		// Named as record 1, where the header is missing.
		c.report(&fixed.Error{Record: 1, RecordType: "zengin", Offset: 0, Reason: fixed.Invalid,
			Err: &recordio.LineError{Line: 1, Msg: "empty file: no records (a Zengin file starts with a header record)"}})
	case c.st == stGroup:
		at(fmt.Sprintf("file ends inside the group started at record %d: missing trailer and end records", c.g.HeaderRecord))
	case c.st == stTrailer:
		at(fmt.Sprintf("file ends after the trailer of the group started at record %d: missing end record", c.g.HeaderRecord))
	}
	c.closeGroup()
}
