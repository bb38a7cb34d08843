// Package cases owns exception cases (spec 003 Cases,
// CaseRelatedTransactions; 000 ch. 2: acked failures escalate to Cases):
// OpenCase aggregates detections by cause_key into one open case, linking
// each transaction once through CaseRelatedTransactions so that
// occurrence_count counts transactions, not detections; every case gets an
// SLA deadline (DefaultSLA unless the caller gives one); SweepSLA promotes
// overdue cases to ESCALATED; SetState moves a case through
// OPEN -> IN_PROGRESS -> RESOLVED (ESCALATED from either). DecideTx is
// the operator's move (resolve, close, retry, write-off, escalate, drift
// adjusted or accepted): a guarded transition whose EntityStateLog row
// carries the decision, the note and the operator. List pages cases by
// SLA deadline with filters (state, bank, cause, SLA) and says how many
// more match; Show adds links and history.
//
// Every state change goes through coordinator/entitystate, so each one
// appends EntityStateLog in the same transaction. It imports only
// coordinator/store, clock, domainerr, entitystate, params (PR-CASE-SLA)
// and zclog, and must not write Transactions, FinalityLog or H.
package cases
