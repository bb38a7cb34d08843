// Package workbook writes the daily reconciliation workbook (one .xlsx per
// JST business date, in <data>/reports/) and reads a reviewed copy back.
//
// The workbook is written with excelize's StreamWriter so memory stays flat
// whatever the number of rows. Sheets: Summary (per bank shadow vs core
// totals, drift count, outbox PENDING/IN_DOUBT/BLOCKED, net DNS position,
// chain audit result), Drift (each drifted account, drift cells
// highlighted), Exceptions (BLOCKED and IN_DOUBT postings and open Cases
// with their SLA, a Resolution drop-down RETRY/WRITE_OFF/ESCALATE and a
// Comment column), DNS (net positions per bank with a bar chart), and a
// hidden Control sheet holding the business date and one digest per
// exception row so that ReadDecisions can refuse a workbook whose rows
// were changed.
//
// The package only formats and parses: it is handed the figures (it does
// not read any database) and it applies no decision. It imports
// coordinator/clock and coordinator/domainerr of zcgw only.
package workbook
