// Package orchestrator drives every transfer through its lane's state
// machine (spec 001 ch. 13, 000 ch. 2-6, 004 ZC→Bank ingress): it accepts
// a PaymentInitiated (Submit, idempotent per key; SubmitBulk accepts many
// in one commit, each checked as Submit checks it), parks the work in a
// durable queue table (OrchestratorQueue), and workers (RunOnce / Run)
// claim work items with a guarded UPDATE and call the payer and payee
// banks' ingress commands — authority-check, name-check, reserve-funds,
// execute-debit, execute-credit, release-reserve, credit-notify and
// debit-settled — through the Banks interface, moving the Transactions row
// with the lane primitives only (coordinator/lane).
//
// Lanes: EXPRESS; STANDARD (authority-check and name-check, with
// PRECHECKED_SUSPENDED and its resume); HIGH_VALUE (automatic escalation
// above the payer's hv_threshold, PR-HV-THRESHOLD; external settlement at
// the simulated BOJ RTGS venue with the ZC -> VENUE:BOJ -> ZC ownership
// handoff, instructed only after a PAYER_HV_ISOLATION_PROOF); BULK and
// DEFERRED (accepted in RECEIVED with a WAITING BATCH work item until
// their batch window hands them over with AcceptBatchInTx). Limits (tx_amount_limit, daily_amount_limit,
// participation_mode, MAX_AMOUNT_VALUE) are enforced at Submit; a closed
// payee operating window parks the transfer in PRECHECKED_SUSPENDED with
// COUNTERPARTY_WINDOW_CLOSED until TimeoutSweep resumes it. GTID
// (RegisterGtid: leg-ready-check to every leg's bank, an all-or-nothing
// decision that materialises each leg pair's transfer, KindGtid items) and
// RTP (RequestRtp, rtp-notify attempts, AcceptRtp creating the linked
// lane-RTP transfer, DeclineRtp, KindRtp items) are in gtid*.go and
// rtp.go (docs/gtid-rtp.md); TimeoutSweep also cancels expired GTIDs and
// expires RTP requests.
//
// Queue retry policy (spec 000 ch. 2): a failure whose DomainError
// category is DOWNSTREAM, TIMEOUT or RATE_LIMIT is retried with
// exponential backoff (next_attempt_at, read from the injected clock); any
// other DomainError is acknowledged and escalated to a Case; an error that
// is not a DomainError is retried.
//
// It imports coordinator packages only (lane, finality, sysmode, hlimit,
// idem, cases, participants, params, bankapi, store, clock, domainerr) and never
// gateway, adapter, outbox, jobs or formats. It never writes
// Transactions.state or owner itself: only through coordinator/lane.
package orchestrator
