// Package e2e holds the full-stack lane tests of the settlement flow: the
// coordinator's orchestrator (coordinator/orchestrator) driving real bank
// adapters (adapter) whose simulated legacy cores (adapter/coresim) are
// reached over the embedded MQ transport, all in one process.
//
// InProcessBanks is the orchestrator.Banks implementation used here: it
// sends every request through a JSON round trip (what the wire carries)
// into adapter.Adapter.Dispatch and maps errors exactly as the HTTP client
// must (the bank's reason code kept; anything else BANK_ERROR; deadlines
// BANK_TIMEOUT).
package e2e
