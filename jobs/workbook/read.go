package workbook

import (
	"archive/zip"
	"crypto/hmac"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/xuri/excelize/v2"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// Decision is one reviewed Exceptions row with a Resolution.
type Decision struct {
	Row        int // 1-based row on the Exceptions sheet
	Key        string
	Kind       string
	BankID     string
	OutboxID   int64
	Ref        string
	CaseID     string
	Status     string // as it was when the workbook was written
	Resolution string // RETRY, WRITE_OFF or ESCALATE
	Comment    string
}

// Reviewed is what ReadDecisions found in a workbook.
type Reviewed struct {
	BusinessDate string
	WorkbookID   string
	Rows         int // exception rows checked
	Decisions    []Decision
}

func reject(path, msg string, details map[string]any) error {
	if details == nil {
		details = map[string]any{}
	}
	details["file"] = path
	return domainerr.Wrap("INVALID_REQUEST", ErrRejected, "workbook "+path+": "+msg, details)
}

// Issued is a workbook the node wrote, as the caller recorded it when it
// wrote it (jobs/eod: ReconWorkbooks): its id, its exception rows and all
// its rows (every sheet, headers included).
type Issued struct {
	WorkbookID    string
	ExceptionRows int
	Rows          int
}

// Expect is what a reviewed workbook is checked against: the business
// date it must be for, the node's workbook key, and the workbooks the node
// issued for that date.
type Expect struct {
	BusinessDate string
	Key          []byte
	Issued       []Issued
}

// The unzipped size bound of a reviewed workbook is derived from the rows
// the node issued: UnzipOverhead for the fixed parts (styles, theme, the
// chart, what a spreadsheet program adds when it saves; a written workbook
// without rows is about 60 KB) plus UnzipPerRow for each row written (a
// reviewed row with long ids and a comment measured about 0.9 KB; the rest
// is room for longer comments).
const (
	UnzipOverhead = 8 << 20
	UnzipPerRow   = 4 << 10
)

// UnzipBound is the largest unzipped size a reviewed copy of the issued
// workbooks may have: UnzipOverhead + UnzipPerRow × the most rows any of
// them was written with.
func UnzipBound(issued []Issued) int64 {
	rows := 0
	for _, w := range issued {
		rows = max(rows, w.Rows)
	}
	return UnzipOverhead + UnzipPerRow*int64(rows)
}

// ReadDecisions reads a reviewed workbook back. It refuses (INVALID_REQUEST
// wrapping ErrRejected, naming the row and column) a workbook
//   - larger (on disk, or unzipped as its zip directory declares) than
//     UnzipBound of the workbooks issued for the date, before reading it;
//   - whose business date is not want.BusinessDate, or whose workbook id is
//     not one the node issued for that date;
//   - in which a row's MAC does not match its identifying cells under the
//     node's key: a cell was changed (whatever digest the reviewer
//     recomputed), a row was added, or it comes from another workbook, date
//     or node; a row duplicated; more rows than were issued;
//   - with a Resolution that is not one of RETRY, WRITE_OFF, ESCALATE.
//
// Rows without a Resolution are not decisions.
func ReadDecisions(path string, want Expect) (Reviewed, error) {
	var out Reviewed
	if want.BusinessDate == "" {
		return out, fmt.Errorf("workbook %s: no business date to check it against", path)
	}
	if len(want.Issued) == 0 {
		return out, reject(path, "this node issued no workbook for business date "+want.BusinessDate,
			map[string]any{"expected": want.BusinessDate})
	}
	if len(want.Key) < KeySize {
		return out, fmt.Errorf("workbook %s: the node's workbook key is %d bytes, want %d", path, len(want.Key), KeySize)
	}
	bound := UnzipBound(want.Issued)
	if err := checkSize(path, bound); err != nil {
		return out, err
	}
	f, err := excelize.OpenFile(path, excelize.Options{UnzipSizeLimit: bound})
	if err != nil {
		return out, domainerr.Wrap("INVALID_REQUEST", err, "workbook "+path+": cannot open", map[string]any{"file": path})
	}
	defer f.Close()
	raw := excelize.Options{RawCellValue: true}
	ctl, err := f.GetRows(SheetControl, raw)
	if err != nil {
		return out, reject(path, "no control sheet (not a zcgw reconciliation workbook)", nil)
	}
	if len(ctl) < 4 || len(ctl[0]) < 2 || ctl[0][0] != "business_date" || len(ctl[2]) < 2 || ctl[2][0] != "workbook_id" {
		return out, reject(path, "control sheet is damaged (or the workbook was written by a zcgw before workbook MACs)", nil)
	}
	if len(ctl[3]) < 2 || ctl[3][0] != "format" || ctl[3][1] != sealFormat {
		return out, reject(path, fmt.Sprintf("control sheet names format %q, want %s", strings.Join(ctl[3], " "), sealFormat), nil)
	}
	out.BusinessDate, out.WorkbookID = ctl[0][1], ctl[2][1]
	if out.BusinessDate != want.BusinessDate {
		return out, reject(path, fmt.Sprintf("it is the workbook of business date %s, not %s", out.BusinessDate, want.BusinessDate),
			map[string]any{"business_date": out.BusinessDate, "expected": want.BusinessDate})
	}
	var issued Issued
	for _, w := range want.Issued {
		if w.WorkbookID == out.WorkbookID {
			issued = w
		}
	}
	if issued.WorkbookID == "" {
		return out, reject(path, fmt.Sprintf("workbook %q is not a workbook this node issued for business date %s", out.WorkbookID, want.BusinessDate),
			map[string]any{"workbook_id": out.WorkbookID, "business_date": want.BusinessDate})
	}
	rows, err := f.GetRows(SheetExceptions, raw)
	if err != nil {
		return out, reject(path, "no Exceptions sheet", nil)
	}
	if len(rows) == 0 || len(rows[0]) < exceptionCols || rows[0][colKey-1] != exceptionHeader[0] ||
		rows[0][colResolution-1] != exceptionHeader[colResolution-1] {
		return out, reject(path, "Exceptions header was changed", nil)
	}
	seen := map[string]int{}
	for i, r := range rows[1:] {
		rowNo := i + 2
		cell := func(c int) string {
			if c-1 < len(r) {
				return strings.TrimSpace(r[c-1])
			}
			return ""
		}
		if cell(colKey) == "" && cell(colResolution) == "" && cell(colMAC) == "" {
			continue // an empty row (e.g. cleared by the reviewer)
		}
		key := cell(colKey)
		where := map[string]any{"row": rowNo, "row_key": key}
		id := []string{cell(colKey), cell(colKind), cell(colBank), cell(colOutboxID), cell(colRef), cell(colTxID),
			cell(colAccount), cell(colAmount), cell(colStatus), cell(colReason), cell(colCaseID)}
		if id[3] == "" {
			id[3] = "0"
		}
		mac := rowMAC(want.Key, out.WorkbookID, out.BusinessDate, id)
		if !hmac.Equal([]byte(cell(colMAC)), []byte(mac)) {
			where["column"] = exceptionHeader[colMAC-1]
			return out, reject(path, fmt.Sprintf("Exceptions row %d (%q) is not a row this node issued in workbook %s, or was changed after it was written (only Resolution and Comment may be edited)",
				rowNo, key, out.WorkbookID), where)
		}
		if prev, dup := seen[key]; dup {
			return out, reject(path, fmt.Sprintf("Exceptions rows %d and %d are the same row %q", prev, rowNo, key), where)
		}
		seen[key] = rowNo
		out.Rows++
		if out.Rows > issued.ExceptionRows {
			return out, reject(path, fmt.Sprintf("Exceptions row %d: more rows than the %d the node issued", rowNo, issued.ExceptionRows), where)
		}
		res := strings.ToUpper(cell(colResolution))
		if res == "" {
			continue
		}
		if res != Retry && res != WriteOff && res != Escalate && res != Resolved {
			where["column"] = "Resolution"
			return out, reject(path, fmt.Sprintf("Exceptions row %d: Resolution %q is not RETRY, WRITE_OFF, ESCALATE or RESOLVED", rowNo, res), where)
		}
		if res == Resolved && cell(colComment) == "" {
			where["column"] = "Comment"
			return out, reject(path, fmt.Sprintf("Exceptions row %d: RESOLVED needs a Comment saying how the Case was resolved", rowNo), where)
		}
		d := Decision{Row: rowNo, Key: key, Kind: cell(colKind), BankID: cell(colBank), Ref: cell(colRef),
			CaseID: cell(colCaseID), Status: cell(colStatus), Resolution: res, Comment: cell(colComment)}
		if d.Kind == KindPosting {
			d.OutboxID, err = strconv.ParseInt(id[3], 10, 64)
			if err != nil {
				return out, reject(path, fmt.Sprintf("Exceptions row %d: bad outbox id %q", rowNo, id[3]), where)
			}
		}
		out.Decisions = append(out.Decisions, d)
	}
	return out, nil
}

// checkSize refuses, before anything is read into memory, a file larger
// than bound on disk or whose zip directory declares more than bound
// unzipped (archive/zip reads only the directory, and later fails an entry
// that inflates past its declared size).
func checkSize(path string, bound int64) error {
	fi, err := os.Stat(path)
	if err != nil {
		return domainerr.Wrap("INVALID_REQUEST", err, "workbook "+path+": cannot open", map[string]any{"file": path})
	}
	tooBig := func(what string, n int64) error {
		return reject(path, fmt.Sprintf("%s is %d bytes, more than a reviewed copy of the workbook the node issued can be (%d bytes: %d + %d per issued row)",
			what, n, bound, UnzipOverhead, UnzipPerRow), map[string]any{"size": n, "bound": bound})
	}
	if fi.Size() > bound {
		return tooBig("the file", fi.Size())
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		return domainerr.Wrap("INVALID_REQUEST", err, "workbook "+path+": cannot open", map[string]any{"file": path})
	}
	defer zr.Close()
	var total uint64
	for _, zf := range zr.File {
		if zf.UncompressedSize64 > uint64(bound)-total {
			return tooBig("its unzipped content", int64(min(total+min(zf.UncompressedSize64, 1<<62), 1<<62)))
		}
		total += zf.UncompressedSize64
	}
	return nil
}
