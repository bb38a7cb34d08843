// Package bench is the engine of `zcgw bench`: it starts a node in-process
// on a fresh data folder with K funded banks, drives it over HTTP exactly
// as banks do (POST /api/transfers with each payer bank's API key), measures
// throughput, latency, commits per database and CPU, and then checks the
// invariants (every transfer terminal, money conserved, each posting applied
// exactly once at its core, every FinalityLog chain verifying). A breach is
// an error naming it: a fast wrong run must not pass.
package bench
