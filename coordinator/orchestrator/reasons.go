package orchestrator

import (
	"strings"

	"github.com/zcgw/zcgw/coordinator/bankapi"
)

// State reason codes this orchestrator writes to Transactions.reason_code
// and FinalityLog payloads (spec 004 "状態 reason_code"). They are a value
// space of their own, not error codes (they have no HTTP status).
const (
	// Waiting family (SUSPEND_*, and the *_TIMEOUT outcome of a wait that
	// never resolved): "it will move on by itself".
	ReasonSuspendNameCheckPending  = "SUSPEND_NAMECHECK_PENDING"   // PRECHECKED -> PRECHECKED_SUSPENDED
	ReasonSuspendAuthorityPending  = "SUSPEND_AUTHORITY_PENDING"   // PRECHECKED -> PRECHECKED_SUSPENDED
	ReasonSuspendExecTimeout       = "SUSPEND_EXEC_TIMEOUT"        // DECIDED_TO_SETTLE -> SUSPENDED
	ReasonSuspendPayeeProofTimeout = "SUSPEND_PAYEE_PROOF_TIMEOUT" // PAYER_EXEC_CONFIRMED -> SUSPENDED
	ReasonSuspendAdapterDown       = "SUSPEND_ADAPTER_DOWN"        // bank not reached -> SUSPENDED
	ReasonFailedExecTimeout        = "FAILED_EXEC_TIMEOUT"         // SUSPENDED -> FAILED_EXECUTION
	ReasonCounterpartyWindowClosed = "COUNTERPARTY_WINDOW_CLOSED"  // -> PRECHECKED_SUSPENDED until the payee's window opens

	// Event family (a fact that happened; waiting will not change it).
	ReasonExecDebitFailed      = "EXEC_DEBIT_FAILED"       // payer bank refused execute-debit -> SUSPENDED
	ReasonExecCreditFailed     = "EXEC_CREDIT_FAILED"      // payee bank refused execute-credit -> SUSPENDED
	ReasonAuthorityCheckNG     = "AUTHORITY_CHECK_NG"      // -> DECIDED_CANCEL
	ReasonNameMismatch         = "NAME_MISMATCH"           // -> DECIDED_CANCEL
	ReasonBOJInsufficientFunds = "BOJ_INSUFFICIENT_FUNDS"  // HIGH_VALUE: PRECHECKED -> DECIDED_CANCEL
	ReasonReserveRefused       = "RESERVE_FAILED"          // reserve-funds refused without a reason
	ReasonHLimitExceeded       = "H_LIMIT_EXCEEDED"        // ZC H limit reached -> DECIDED_CANCEL
	ReasonPrecheckExpired      = "REJECT_PRECHECK_EXPIRED" // expires_at passed before the precheck (001 §13.1)
	ReasonIGSFailed            = "IGS_FAILED"              // BOJ venue could not settle -> SUSPENDED

	// GTID and RTP (docs/gtid-rtp.md): GtidTransactions / RtpRequests
	// outcomes, in their chains' payloads.
	ReasonLegNotReady = "LEG_NOT_READY"       // a leg's bank answered leg-ready-check NG -> GT_DECIDED_CANCEL
	ReasonGtidTimeout = "CANCEL_GTID_TIMEOUT" // legs not all ready by expires_at -> GT_DECIDED_CANCEL
	// A PAYER leg's amount over its bank's daily limit at the GTID's
	// precheck -> GT_DECIDED_CANCEL (a transfer is refused at Submit).
	ReasonDailyLimitExceeded = "DAILY_LIMIT_EXCEEDED"
	ReasonRtpDeclined        = "RTP_DECLINED"           // the payer declined -> DECLINED
	ReasonRtpTimeout         = "CANCEL_RTP_TIMEOUT"     // not accepted by expires_at -> EXPIRED
	ReasonRtpNotifyFailed    = "RTP_ATTEMPTS_EXHAUSTED" // rtp-notify not delivered in max_attempts -> FAILED
)

// State reason codes of a credit held by the payee bank's incoming-transfer
// filter (resume_credit.go, docs/bank-api.md).
const (
	ReasonSuspendCreditApproval  = "SUSPEND_CREDIT_APPROVAL_PENDING" // PAYER_EXEC_CONFIRMED -> SUSPENDED until the payee side decides
	ReasonCreditApprovalRejected = "CREDIT_APPROVAL_REJECTED"        // SUSPENDED -> FAILED_EXECUTION, payer refunded
)

// State reason codes of a transfer refused by its mandate.
const (
	// Mandate refusals at precheck (spec 000 §11.2-e; the 004 catalog
	// codes): RECEIVED -> DECIDED_CANCEL with PreCheckFailed (mandate.go).
	ReasonMandateNotFound = "MANDATE_NOT_FOUND"
	ReasonMandateRevoked  = "MANDATE_REVOKED"
	ReasonMandateExpired  = "MANDATE_EXPIRED"
	ReasonMandateBreach   = "MANDATE_BREACH"
)

// State reason codes of the HTLC lane (001 ch. 15, 004 state reason codes).
const (
	ReasonTimelockExpired             = "TIMELOCK_EXPIRED"              // RECEIVED / HTLC_LOCKED / HTLC_ONCHAIN_PENDING -> DECIDED_CANCEL
	ReasonRecheckAuthorityNG          = "RECHECK_AUTHORITY_NG"          // AML recheck at claim NG: HTLC_LOCKED -> DECIDED_CANCEL
	ReasonRecheckAuthorityUnavailable = "RECHECK_AUTHORITY_UNAVAILABLE" // AML recheck unanswered: claim refused, no transition
	ReasonInvalidPreimage             = "INVALID_PREIMAGE"              // wrong preimage: claim refused, no transition
)

// Families of state reason codes (spec 004 naming rule).
const (
	FamilyWaiting = "WAITING" // 待機理由
	FamilyEvent   = "EVENT"   // 事象理由
)

// specFixedWaiting are waiting reasons whose spelling the spec fixes
// outside the SUSPEND_ rule (003 Transactions.pending_request_json and the
// 004 catalog name COUNTERPARTY_WINDOW_CLOSED as the window wait).
var specFixedWaiting = map[string]bool{ReasonCounterpartyWindowClosed: true}

// Family returns the family of a state reason code by the spec's naming
// rule: SUSPEND_* and the {CANCEL,FAILED}_*_TIMEOUT outcome of an
// unresolved wait are waiting reasons; anything else names an event.
func Family(code string) string {
	switch {
	case specFixedWaiting[code], strings.HasPrefix(code, "SUSPEND_"):
		return FamilyWaiting
	case (strings.HasPrefix(code, "CANCEL_") || strings.HasPrefix(code, "FAILED_")) && strings.HasSuffix(code, "_TIMEOUT"):
		return FamilyWaiting
	}
	return FamilyEvent
}

// WrittenReasons lists every state reason code this package writes with
// the family it means (tested against Family).
var WrittenReasons = map[string]string{
	ReasonSuspendNameCheckPending:  FamilyWaiting,
	ReasonSuspendAuthorityPending:  FamilyWaiting,
	ReasonSuspendExecTimeout:       FamilyWaiting,
	ReasonSuspendPayeeProofTimeout: FamilyWaiting,
	ReasonSuspendAdapterDown:       FamilyWaiting,
	ReasonFailedExecTimeout:        FamilyWaiting,
	ReasonCounterpartyWindowClosed: FamilyWaiting,
	ReasonExecDebitFailed:          FamilyEvent,
	ReasonExecCreditFailed:         FamilyEvent,
	ReasonAuthorityCheckNG:         FamilyEvent,
	ReasonNameMismatch:             FamilyEvent,
	ReasonBOJInsufficientFunds:     FamilyEvent,
	ReasonReserveRefused:           FamilyEvent,
	ReasonHLimitExceeded:           FamilyEvent,
	ReasonPrecheckExpired:          FamilyEvent,
	ReasonIGSFailed:                FamilyEvent,
	ReasonLegNotReady:              FamilyEvent,
	ReasonGtidTimeout:              FamilyWaiting,
	ReasonDailyLimitExceeded:       FamilyEvent,
	ReasonGtidLegSuspended:         FamilyWaiting,
	ReasonGtidLegFailed:            FamilyEvent,
	ReasonRtpDeclined:              FamilyEvent,
	ReasonRtpTimeout:               FamilyWaiting,
	ReasonRtpNotifyFailed:          FamilyEvent,
	ReasonSuspendCreditApproval:    FamilyWaiting,
	ReasonCreditApprovalRejected:   FamilyEvent,
	ReasonMandateNotFound:          FamilyEvent,
	ReasonMandateRevoked:           FamilyEvent,
	ReasonMandateExpired:           FamilyEvent,
	ReasonMandateBreach:            FamilyEvent,
	ReasonMisrecordCorrected:       FamilyEvent, // in the MisrecordCorrected payload only
	"INSUFFICIENT_FUNDS":           FamilyEvent, // reserve-funds ERROR reasons, passed through
	"ACCOUNT_NOT_FOUND":            FamilyEvent,
	"ACCOUNT_FROZEN":               FamilyEvent,

	// HTLC lane
	ReasonTimelockExpired:             FamilyEvent,
	ReasonRecheckAuthorityNG:          FamilyEvent,
	ReasonRecheckAuthorityUnavailable: FamilyEvent, // HtlcClaimRejected payload only
	ReasonInvalidPreimage:             FamilyEvent, // HtlcClaimRejected payload only
}

// ProofPayerHVIsolation is the payer proof HIGH_VALUE requires before
// external settlement; the wire contract declares it.
const ProofPayerHVIsolation = bankapi.ProofPayerHVIsolation

// External settlement statuses used by HIGH_VALUE.
const (
	ExtNone      = "NONE"
	ExtRequested = "REQUESTED"
	ExtSettled   = "SETTLED"
	ExtFailed    = "FAILED"
)
