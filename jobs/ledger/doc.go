// Package ledger is the job ledger of the scheduler: which job instance ran
// for which JST business date, its attempts, its steps and their outputs,
// and the per-job lease with a fencing token that lets only one runner
// (process or goroutine) run a job at a time.
//
// Its tables (ledger.sql: JobRuns, JobSteps, JobLeases) live in the same
// SQLite file as the coordinator (zc.db under the data folder) and are
// applied by Open with store.Open; they never reference coordinator tables.
// Every write made on behalf of a run is fenced: it runs in a store.Write
// transaction that first checks the lease token, so a runner whose lease
// was taken over can no longer change anything.
//
// It must not import jobs/scheduler or any package other than
// coordinator/store, coordinator/clock and coordinator/domainerr; it knows
// nothing about cron, job bodies or configuration.
package ledger
