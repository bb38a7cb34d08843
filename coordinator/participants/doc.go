// Package participants owns the administration of Participants rows (spec
// 003 Participants): creating a participant and updating its limits
// (h_limit, tx_amount_limit, daily_amount_limit), participation_mode,
// hv_threshold (PR-HV-THRESHOLD) and operating window, and reading them back.
// It also answers the two questions the orchestrator asks of a participant:
// is its operating window open at an instant (JST, 'HH:MM', wrapping past
// midnight; NULL/NULL and start == end mean always open), and which
// HIGH_VALUE threshold applies to it.
//
// Every write passes the writable gate (coordinator/sysmode). It must not
// write h_used or daily_amount_used (coordinator/hlimit owns them), nor
// Transactions or FinalityLog. It imports only coordinator/store, clock,
// params (PR-HV-THRESHOLD's default), sysmode and domainerr.
package participants
