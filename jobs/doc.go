// Package jobs runs the scheduled batches: the cron scheduler with a
// business-date job ledger, DNS cycles, BULK/DEFERRED windows, overnight
// files and EOD with the reconciliation workbook.
//
// Subpackages: ledger (JobRuns/JobSteps/JobLeases in the coordinator's
// database, fenced writes), scheduler (registry of job bodies, jobs.json
// schedules, the Runner with resume and catch-up, cron and HTTP triggers)
// and jobcli (the `zcgw jobs` command). docs/jobs.md describes the model
// and its guarantees.
//
// It must not implement business rules of its own: every job calls the
// coordinator, adapter, outbox and formats APIs.
package jobs
