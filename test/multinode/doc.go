// Package multinode is the three-node crash test of issue 16: three
// `zcgw serve` processes (the real binary, test/internal/proc) share one
// PostgreSQL database (fresh schemas per run, dropped after), transfers
// are posted to all three, node 1 (holder of the drain leases and core queues) is SIGKILLed mid-run and restarted,
// and then the shared database must show every transfer terminal, every
// posting applied exactly once at its core, every chain verifying and
// every job run once per date and slot. It needs PostgreSQL: without a
// server it skips with a message, except under CI=true, where it fails.
package multinode
