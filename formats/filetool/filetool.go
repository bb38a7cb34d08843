package filetool

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/zcgw/zcgw/formats/corebalance"
	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/overnight"
	"github.com/zcgw/zcgw/formats/recordio"
	"github.com/zcgw/zcgw/formats/zengin"
)

// Format is a supported file format.
type Format int

// Formats.
const (
	Unknown Format = iota
	Zengin
	Overnight
	CoreBalance
)

func (f Format) String() string {
	switch f {
	case Zengin:
		return "Zengin 120-byte transfer file"
	case Overnight:
		return "overnight posting/result file (200-byte records)"
	case CoreBalance:
		return "core balance file (100-byte records)"
	}
	return "unknown"
}

// Detect recognises a format from the first bytes of a file.
func Detect(head []byte) Format {
	if len(head) >= 5 && head[0] == 'H' && (string(head[1:5]) == "POST" || string(head[1:5]) == "RSLT") {
		return Overnight
	}
	if len(head) >= 5 && head[0] == 'H' && string(head[1:5]) == corebalance.FileType {
		return CoreBalance
	}
	if len(head) >= 3 {
		digit := func(c byte) bool { return (c >= '0' && c <= '9') || (c >= 0xF0 && c <= 0xF9) }
		if (head[0] == '1' || head[0] == 0xF1) && digit(head[1]) && digit(head[2]) {
			return Zengin
		}
	}
	return Unknown
}

// Options control reading.
type Options struct {
	// Progress, when not nil, receives a progress bar (carriage-return
	// updates) while the file is read; Size is the file size for it.
	Progress io.Writer
	Size     int64
	// MaxErrors caps the errors listed (0: the package default).
	MaxErrors int
	// Names is the name character set Zengin files are checked with
	// (default zengin.NamesStrict).
	Names zengin.NameChars
}

// input peeks at the format and wraps the reader with the progress bar.
// A file that is neither format (empty, a byte order mark, text, a first
// record that is no header) is checked as a Zengin file, the default, so
// that its errors are reported with their record and byte offset like any
// invalid file's; recognised is then false.
func input(r io.Reader, o Options) (f Format, in io.Reader, done func(), recognised bool, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(8)
	if err != nil && !errors.Is(err, io.EOF) {
		return Unknown, nil, nil, false, err
	}
	f = Detect(head)
	recognised = f != Unknown
	if !recognised {
		f = Zengin
	}
	if o.Progress == nil {
		return f, br, func() {}, recognised, nil
	}
	p := &progress{r: br, w: o.Progress, size: o.Size}
	return f, p, p.finish, recognised, nil
}

// Result is what checking a file found.
type Result struct {
	// Format is the format the file was checked as.
	Format Format
	// Unrecognised is set when the file's first bytes are neither format's
	// (it was checked as a Zengin file and is invalid).
	Unrecognised bool
	Zengin       zengin.Summary
	Overnight    overnight.Summary
	CoreBalance  corebalance.Summary
	// Errors are the errors found (nil when the file is valid).
	Errors *fixed.ErrorList
}

// OK reports whether the file is valid.
func (r *Result) OK() bool { return r.Errors == nil || r.Errors.Len() == 0 }

// Check reads and validates a whole file. The returned error is an I/O
// error; problems in the file, including a file of neither format, are in
// Result.Errors.
func Check(r io.Reader, o Options) (*Result, error) {
	f, in, done, recognised, err := input(r, o)
	if err != nil {
		return &Result{}, err
	}
	defer done()
	res := &Result{Format: f, Unrecognised: !recognised}
	max := o.MaxErrors
	if max <= 0 {
		max = zengin.DefaultMaxErrors
	}
	switch f {
	case Zengin:
		res.Zengin, err = zengin.ValidateOptions(in, zengin.Options{MaxErrors: max, Names: o.Names})
	case CoreBalance:
		res.CoreBalance, err = corebalance.ValidateMax(in, max)
	default:
		res.Overnight, err = overnight.ValidateMax(in, max)
	}
	var list *fixed.ErrorList
	if errors.As(err, &list) {
		res.Errors = list
		err = nil
	}
	return res, err
}

// Describe writes a readable description of a file followed by every
// error; it returns the Result (ok or not) and any I/O error.
func Describe(w io.Writer, name string, r io.Reader, o Options) (*Result, error) {
	res, err := Check(r, o)
	if err != nil {
		return res, err
	}
	fmt.Fprintf(w, "%s: %s\n", name, formatName(res))
	switch res.Format {
	case Zengin:
		describeZengin(w, &res.Zengin)
	case Overnight:
		describeOvernight(w, &res.Overnight)
	case CoreBalance:
		describeCoreBalance(w, &res.CoreBalance)
	}
	WriteErrors(w, res)
	return res, nil
}

// Validate writes one summary line for a valid file, or every error.
func Validate(w io.Writer, name string, r io.Reader, o Options) (*Result, error) {
	res, err := Check(r, o)
	if err != nil {
		return res, err
	}
	if res.OK() {
		var n int
		var size int64
		switch res.Format {
		case Zengin:
			n, size = res.Zengin.Records, res.Zengin.Bytes
		case CoreBalance:
			n, size = res.CoreBalance.Records, res.CoreBalance.Bytes
		default:
			n, size = res.Overnight.Records, res.Overnight.Bytes
		}
		fmt.Fprintf(w, "%s: OK: %s, %d records, %d bytes\n", name, res.Format, n, size)
		return res, nil
	}
	fmt.Fprintf(w, "%s: INVALID: %s\n", name, formatName(res))
	WriteErrors(w, res)
	return res, nil
}

// formatName names the format a file was checked as.
func formatName(res *Result) string {
	if res.Unrecognised {
		return "not a recognised file (neither a Zengin header nor HPOST/HRSLT/HCBAL first); checked as a " + res.Format.String()
	}
	return res.Format.String()
}

// WriteErrors lists the errors of a Result, one per line, or "errors: none".
func WriteErrors(w io.Writer, res *Result) {
	if res.OK() {
		fmt.Fprintln(w, "errors: none")
		return
	}
	l := res.Errors
	fmt.Fprintf(w, "errors: %d\n", l.Len())
	for _, e := range l.Errs {
		fmt.Fprintf(w, "  %s\n", FormatError(e))
	}
	if l.Dropped > 0 {
		fmt.Fprintf(w, "  ... %d more not listed (cap %d)\n", l.Dropped, len(l.Errs))
	}
}

// FormatError renders one error as
// "record 2 line 2 offset 206 col 85 [zengin.data.transfer Amount 振替金額]: not numeric: bytes "…": why".
func FormatError(e *fixed.Error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "record %d line %d offset %d", e.Record, recordio.LineOf(e), e.Offset)
	if e.Column > 0 {
		fmt.Fprintf(&b, " col %d", e.Column)
	}
	where := e.RecordType
	if e.Field != "" {
		where += " " + e.Field
		if e.Label != "" {
			where += " (" + firstClause(e.Label) + ")"
		}
	}
	if where != "" {
		fmt.Fprintf(&b, " [%s]", where)
	}
	fmt.Fprintf(&b, ": %s", e.Reason)
	if e.Bytes != nil {
		fmt.Fprintf(&b, ": bytes %s", quote(e.Bytes))
	}
	var le *recordio.LineError
	if errors.As(e.Err, &le) {
		if le.Msg != e.Reason.String() {
			fmt.Fprintf(&b, ": %s", le.Msg)
		}
		if le.Err != nil {
			fmt.Fprintf(&b, ": %v", le.Err)
		}
	} else if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// firstClause shortens a long label ("振替結果コード: 0 ...") to its name.
func firstClause(s string) string {
	if i := strings.IndexAny(s, ":("); i > 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

// quote shows printable ASCII as a quoted string and anything else as hex.
func quote(p []byte) string {
	for _, c := range p {
		if c < 0x20 || c > 0x7E {
			return fmt.Sprintf("0x% X", p)
		}
	}
	return fmt.Sprintf("%q", p)
}

func describeZengin(w io.Writer, s *zengin.Summary) {
	fmt.Fprintf(w, "size: %d bytes, %d records, separator %s\n", s.Bytes, s.Records, s.Separator)
	fmt.Fprintf(w, "groups: %d, data records: %d, total: %s yen\n", s.GroupCount, s.DataCount, yen(s.DataTotal))
	for i, g := range s.Groups {
		h := &g.Header
		fmt.Fprintf(w, "group %d (header at record %d): 種別 %s, コード区分 %s\n", i+1, g.HeaderRecord, h.Kind, h.Encoding)
		if h.ClientCode != "" {
			fmt.Fprintf(w, "  委託者 %s %s, date %s, bank %s %s, branch %s %s, account %d-%s\n",
				h.ClientCode, h.ClientName, h.Date, h.BankCode, h.BankName, h.BranchCode, h.BranchName, h.AccountType, h.AccountNumber)
		}
		fmt.Fprintf(w, "  data records: %d, total: %s yen", g.Count, yen(g.Total))
		if !g.Trailer {
			fmt.Fprint(w, ", no trailer")
		} else if !g.End {
			fmt.Fprint(w, ", closed without its own end record")
		}
		fmt.Fprintln(w)
		if h.Kind == zengin.KindDebit {
			if g.Result {
				fmt.Fprintf(w, "  result: 振替済 %d (%s yen), 振替不能 %d (%s yen)\n", g.DoneCount, yen(g.DoneAmount), g.FailedCount, yen(g.FailedAmount))
			} else {
				fmt.Fprintln(w, "  request (no results)")
			}
		}
	}
	if s.GroupCount > len(s.Groups) {
		fmt.Fprintf(w, "... %d more groups\n", s.GroupCount-len(s.Groups))
	}
}

func describeOvernight(w io.Writer, s *overnight.Summary) {
	h := &s.Header
	kind := "posting file"
	if h.FileType == overnight.Results {
		kind = "result file"
	}
	fmt.Fprintf(w, "size: %d bytes, %d records, separator %s\n", s.Bytes, s.Records, s.Separator)
	if h.FileType != "" {
		fmt.Fprintf(w, "%s: bank %s, business date %s, file %d, created %s\n", kind, h.BankCode, h.BusinessDate, h.FileSeq, h.CreatedAt)
	}
	fmt.Fprintf(w, "details: %d, debits: %d (%s yen), credits: %d (%s yen), hash total: %d\n",
		s.Count, s.DebitCount, yen(s.DebitTotal), s.CreditCount, yen(s.CreditTotal), s.HashTotal)
	if h.FileType == overnight.Results {
		fmt.Fprintf(w, "posted: %d, rejected: %d (totals count posted details only)\n", s.PostedCount, s.RejectedCount)
	}
	if !s.Trailer {
		fmt.Fprintln(w, "no trailer")
	}
}

func describeCoreBalance(w io.Writer, s *corebalance.Summary) {
	h := &s.Header
	fmt.Fprintf(w, "size: %d bytes, %d records, separator %s\n", s.Bytes, s.Records, s.Separator)
	if h.Version != 0 {
		fmt.Fprintf(w, "balances: bank %s, business date %s, cutoff %s\n", h.BankCode, h.BusinessDate, h.CutoffAt)
	}
	fmt.Fprintf(w, "accounts: %d, balance total: %s yen, hash total: %d\n", s.Count, yen(s.BalanceTotal), s.HashTotal)
	if !s.Trailer {
		fmt.Fprintln(w, "no trailer")
	}
}

// yen formats an amount with thousands separators.
func yen(v int64) string {
	s := fmt.Sprint(v)
	var b bytes.Buffer
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
