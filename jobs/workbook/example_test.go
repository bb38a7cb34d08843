package workbook_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/zcgw/zcgw/jobs/workbook"
)

// Write a day's workbook and read a Summary cell back: totals are yen
// formatted, and one file per business date goes to <data>/reports.
func ExampleWrite() {
	dir, _ := os.MkdirTemp("", "wb-example-")
	defer os.RemoveAll(dir)
	path := workbook.Path(dir, "2026-12-01")
	id, _ := workbook.NewWorkbookID()
	key := make([]byte, workbook.KeySize) // the node's secret workbook key (jobs/eod keeps it)
	st, err := workbook.Write(path, workbook.Report{
		BusinessDate: "2026-12-01",
		GeneratedAt:  time.Date(2026, 12, 1, 14, 30, 0, 0, time.UTC),
		Chain:        workbook.ChainAudit{Chains: 3, Entries: 9},
		Banks:        []workbook.Bank{{BankID: "001", Accounts: 2, ShadowTotal: 150000, CoreTotal: 150000, Matched: 2}},
		Seal:         workbook.Seal{WorkbookID: id, Key: key},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	f, _ := excelize.OpenFile(path)
	defer f.Close()
	total, _ := f.GetCellValue(workbook.SheetSummary, "C4")
	audit, _ := f.GetCellValue(workbook.SheetSummary, "N4")
	fmt.Println(filepath.Base(st.Path), total, audit)
	// Output:
	// recon-2026-12-01.xlsx ¥150,000 OK: 3 chains, 9 entries
}
