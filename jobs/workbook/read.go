package workbook

import (
	"fmt"
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

// MaxReviewedUnzipped bounds the unzipped size of a reviewed workbook
// (512 MiB, about 500,000 exception rows at ~1 KB each). excelize sizes its
// read buffer for each part from the size the zip declares, so without a
// bound a small damaged or crafted file declaring gigabytes made it
// allocate them (FuzzReadDecisions crashed a worker that way); over the
// bound the file is refused like any unreadable workbook.
const MaxReviewedUnzipped = 512 << 20

// ReadDecisions reads a reviewed workbook back. It refuses (INVALID_REQUEST
// wrapping ErrRejected, naming the row and column) a workbook whose
// business date is not wantDate (when wantDate is not empty), whose control
// sheet is missing, or in which any exception row's identifying cells were
// changed, a row was added or duplicated, or a Resolution is not one of
// RETRY, WRITE_OFF, ESCALATE. Rows without a Resolution are not decisions.
func ReadDecisions(path, wantDate string) (Reviewed, error) {
	var out Reviewed
	f, err := excelize.OpenFile(path, excelize.Options{UnzipSizeLimit: MaxReviewedUnzipped})
	if err != nil {
		return out, domainerr.Wrap("INVALID_REQUEST", err, "workbook "+path+": cannot open", map[string]any{"file": path})
	}
	defer f.Close()
	raw := excelize.Options{RawCellValue: true}
	ctl, err := f.GetRows(SheetControl, raw)
	if err != nil {
		return out, reject(path, "no control sheet (not a zcgw reconciliation workbook)", nil)
	}
	if len(ctl) < 3 || len(ctl[0]) < 2 || ctl[0][0] != "business_date" {
		return out, reject(path, "control sheet is damaged", nil)
	}
	out.BusinessDate = ctl[0][1]
	if wantDate != "" && out.BusinessDate != wantDate {
		return out, reject(path, fmt.Sprintf("it is the workbook of business date %s, not %s", out.BusinessDate, wantDate),
			map[string]any{"business_date": out.BusinessDate, "expected": wantDate})
	}
	digests := make(map[string]string, len(ctl))
	for i, r := range ctl[3:] {
		if len(r) < 2 {
			return out, reject(path, fmt.Sprintf("control sheet row %d is damaged", i+4), nil)
		}
		digests[r[0]] = r[1]
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
		if cell(colKey) == "" && cell(colResolution) == "" && cell(colDigest) == "" {
			continue // an empty row (e.g. cleared by the reviewer)
		}
		key := cell(colKey)
		where := map[string]any{"row": rowNo, "row_key": key}
		want, ok := digests[key]
		if !ok {
			return out, reject(path, fmt.Sprintf("Exceptions row %d (%q) is not a row this workbook was written with", rowNo, key), where)
		}
		if prev, dup := seen[key]; dup {
			return out, reject(path, fmt.Sprintf("Exceptions rows %d and %d are the same row %q", prev, rowNo, key), where)
		}
		seen[key] = rowNo
		id := []string{cell(colKey), cell(colKind), cell(colBank), cell(colOutboxID), cell(colRef), cell(colTxID),
			cell(colAccount), cell(colAmount), cell(colStatus), cell(colReason), cell(colCaseID)}
		if id[3] == "" {
			id[3] = "0"
		}
		got := RowDigest(out.BusinessDate, id)
		if got != want || cell(colDigest) != want {
			return out, reject(path, fmt.Sprintf("Exceptions row %d (%q) was changed after the workbook was written (only Resolution and Comment may be edited)", rowNo, key), where)
		}
		out.Rows++
		res := strings.ToUpper(cell(colResolution))
		if res == "" {
			continue
		}
		if res != Retry && res != WriteOff && res != Escalate {
			where["column"] = "Resolution"
			return out, reject(path, fmt.Sprintf("Exceptions row %d: Resolution %q is not RETRY, WRITE_OFF or ESCALATE", rowNo, res), where)
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
