// Package scheduler runs zcgw's batch jobs: a Registry of job bodies (each
// an ordered list of named steps), the schedules of jobs.json (robfig/cron
// with CRON_TZ=Asia/Tokyo, used only as a trigger), and a Runner that runs
// one job instance per JST business date (or per trigger minute) under a
// fenced database lease, records every run and step in the job ledger,
// resumes a failed run at its first incomplete step, and catches up
// missed dates at start-up. The CLI and the POST /internal/cron/{job}
// handler call the same Runner.Run.
//
// Every decision (business date, slot, lease expiry, catch-up dates) is
// made through the injected clock.Clock; cron's own clock only decides when
// a trigger fires.
//
// It must not implement any job: bodies are registered by whoever wires
// them. It imports jobs/ledger and coordinator/{clock,store,domainerr}
// only; it must not import gateway, adapter, outbox or formats.
package scheduler

import _ "time/tzdata" // CRON_TZ=Asia/Tokyo must resolve on hosts without tzdata
