// Package chaos is the crash-recovery suite of issue 12: it runs `zcgw
// serve` as a subprocess on one data folder under concurrent HTTP load,
// SIGKILLs it at seeded random moments (during startup, at random times and
// at the failpoints of coordinator/failpoint: between the adapter's and the
// coordinator's records, around a group commit, after an outbox claim),
// restarts it on the same folder each time, and then audits the folder as
// a bank auditor would, reading the SQLite files directly.
//
// The suite lives in chaos_test; docs/chaos.md says what it checks, what it
// measures and how to run the long version (ZCGW_CHAOS_KILLS,
// ZCGW_CHAOS_SEED).
package chaos
