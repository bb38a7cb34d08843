// Package jobs runs the scheduled batches: the cron scheduler with a
// business-date job ledger, DNS cycles, BULK/DEFERRED windows, overnight
// files and EOD with the reconciliation workbook.
//
// Subpackages: ledger (JobRuns/JobSteps/JobLeases in the coordinator's
// database, fenced writes), scheduler (registry of job bodies, jobs.json
// schedules, the Runner with resume and catch-up, cron and HTTP triggers),
// jobcli (the `zcgw jobs` command), and the batch domains themselves: dns
// (deferred net settlement cycles), lsm (the liquidity-saving solver),
// batchwindow (BULK/DEFERRED windows), overnight (posting files exchanged
// with the cores), eod (end of day) and workbook (the reconciliation
// workbook). docs/jobs.md describes the scheduler's guarantees;
// docs/dns-lsm.md and docs/eod.md the batches.
//
// The batch domains own the rules that exist only at batch time (netting,
// LSM selection, the day's close). They change transfers only through the
// coordinator's primitives (coordinator/lane), except for the two DNS bulk
// ownership handoffs that spec 000 §5.2 whitelists (jobs/dns/kick.go and
// jobs/dns/settle.go). jobs never imports gateway.
package jobs
