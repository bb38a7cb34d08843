// Package jobs runs the scheduled batches: the cron scheduler with a
// business-date job ledger, DNS cycles, BULK/DEFERRED windows, overnight
// files and EOD with the reconciliation workbook.
//
// It must not implement business rules of its own: every job calls the
// coordinator, adapter, outbox and formats APIs.
package jobs
