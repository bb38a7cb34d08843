// Package workbook writes the daily reconciliation workbook (one .xlsx per
// JST business date, in <data>/reports/) and reads a reviewed copy back.
//
// The workbook is written with excelize's StreamWriter so memory stays flat
// whatever the number of rows. Sheets: Summary (per bank shadow vs core
// totals, drift count, outbox PENDING/IN_DOUBT/BLOCKED, net DNS position,
// chain audit result), Drift (each drifted account, drift cells
// highlighted), Exceptions (BLOCKED and IN_DOUBT postings and open Cases
// with their SLA, a Resolution drop-down RETRY/WRITE_OFF/ESCALATE, a
// Comment column and a Row MAC), DNS (net positions per bank with a bar
// chart), and a hidden Control sheet holding the business date and the
// workbook id.
//
// Each exception row carries an HMAC-SHA256, under the node's workbook key
// (Seal), of its identifying cells bound to the business date and the
// workbook id. ReadDecisions accepts a reviewed copy only for a workbook
// the caller says the node issued (Expect), only rows whose MAC recomputes,
// and only when the file's size is within UnzipBound of the rows issued,
// checked before it is read.
//
// The package only formats, parses and MACs: it is handed the figures and
// the key (it does not read any database or key file; jobs/eod does) and
// it applies no decision. It imports coordinator/clock and
// coordinator/domainerr of zcgw only.
package workbook
