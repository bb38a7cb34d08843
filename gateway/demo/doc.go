// Package demo is `zcgw demo`: one simulated business day of the whole
// system on the embedded defaults, driven by a manual clock through the JST
// day. It starts a node (gateway/node: coordinator, orchestrator workers,
// one adapter per bank in front of its simulated legacy core on the
// embedded MQ, signed bank ingress), sends real transfers over HTTP, takes
// a core offline and drains it when it returns, loses a core reply, changes
// a core balance behind everyone's back, drops a Zengin file for a
// batch-window bank, runs the BULK window, the DNS cutoffs and the
// end-of-day job through the scheduler's own Runner, and then checks the
// day's invariants: every transfer final, payer -amount and payee +amount,
// zero-sum within each bank, conservation system-wide, the drift found and
// its Case opened, every FinalityLog chain intact, the result file and the
// reconciliation workbook written, every event in the event outbox.
//
// Run returns a Summary and, when an invariant fails, an *InvariantError
// naming it. Its state lives under <DataDir>/demo, which each run removes
// and recreates (and only when it carries the demo's marker file).
//
// It may import gateway, coordinator, adapter, outbox, formats and jobs (it
// is a top-level assembly like gateway/node); only cmd and test import it.
package demo
