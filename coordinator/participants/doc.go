// Package participants owns the administration of Participants rows (spec
// 003 Participants): creating a participant and updating its limits
// (h_limit, tx_amount_limit, daily_amount_limit), participation_mode,
// hv_threshold (PR-HV-THRESHOLD) and operating window, and reading them back.
// It also answers the two questions the orchestrator asks of a participant:
// is its operating window open at an instant (JST, 'HH:MM', wrapping past
// midnight; NULL/NULL and start == end mean always open), and which
// HIGH_VALUE threshold applies to it.
//
// The limits are PR-* values: after registration an operator changes them
// through the parameter ledger (coordinator/params writes their columns
// with evidence_ref and a GLOBAL-chain entry); UpdateProfile, the API's
// update, refuses to change them. Update (every field) is for fixtures.
//
// Every write passes the writable gate (coordinator/sysmode). It must not
// write h_used or daily_amount_used (coordinator/hlimit owns them), nor
// Transactions or FinalityLog. It imports only coordinator/store, clock,
// params (PR-HV-THRESHOLD's default, the limits' names), sysmode and
// domainerr.
package participants
