// Package eod is the end-of-day job: close the JST business date (with the
// day's transaction figures), reset the participants' daily limits for the
// next date (recorded per bank), run the nightly FinalityLog chain audit
// of the entries appended since the last clean audit's anchor (a break
// opens a Case through coordinator/cases; a clean audit records the next
// anchor), reconcile every bank's shadow ledger with its core balance file
// (formats/corebalance) through the adapter's reconciliation API,
// and write the reconciliation workbook (jobs/workbook) to
// <data>/reports/. Each step is restartable: coordinator-row steps are
// scheduler RunTx steps (exactly once); the others record their own effect
// and check it first, or replace their output whole.
//
// It also applies a reviewed workbook (ApplyWorkbook, `zcgw recon apply`)
// through the outbox's operator path and coordinator/cases, accepting only
// a workbook it issued (IssueWorkbook records the workbook id and the rows
// written in ReconWorkbooks) and only rows whose MAC under the node's
// workbook key recomputes. WorkbookKey is the one place that key
// (<data>/recon-workbook.key, 0600, created on first use) is read.
//
// It also is the "finality-audit" job (FinalityAudit): a full chain audit
// on demand, each run recorded and answered with spec 004's fields.
//
// It owns the tables in Schema (EodBusinessDates, EodLimitResets,
// EodChainAudits, FinalityAudits, EodReconciliations, EodWorkbooks,
// ReconWorkbooks, ReconDecisions) in the coordinator's database. It writes
// Participants' daily amount columns
// only in the reset step; it must not write Transactions, FinalityLog or
// any adapter table except through the adapter and outbox APIs.
package eod
