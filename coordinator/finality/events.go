package finality

import "sort"

// EventType is a FinalityLog event_type. The set is closed: Append refuses
// a value that is not declared here, and a test scans the module for
// event types written anywhere.
type EventType string

// Event types shared, under the same name, with the I/F command/event
// vocabulary (spec 002 §12.1.6, list 1 — all 30).
const (
	PaymentInitiated              EventType = "PaymentInitiated"
	PayerExecConfirmed            EventType = "PayerExecConfirmed"
	PayeeExecConfirmed            EventType = "PayeeExecConfirmed"
	DecidedCancel                 EventType = "DecidedCancel"
	NoDebitRecordedProofSubmitted EventType = "NoDebitRecordedProofSubmitted"
	CreditFailedProofSubmitted    EventType = "CreditFailedProofSubmitted"
	HUnlockAuthorized             EventType = "HUnlockAuthorized"
	MisrecordCorrected            EventType = "MisrecordCorrected"
	RtpRequested                  EventType = "RtpRequested"
	LsmRunCommitted               EventType = "LsmRunCommitted"
	LsmRunFallback                EventType = "LsmRunFallback"
	HtlcLocked                    EventType = "HtlcLocked"
	HtlcClaimRejected             EventType = "HtlcClaimRejected"
	HtlcConditionsEvaluated       EventType = "HtlcConditionsEvaluated"
	CrossChainLocked              EventType = "CrossChainLocked"
	OnchainProofObserved          EventType = "OnchainProofObserved"
	OnchainFinalityClassified     EventType = "OnchainFinalityClassified"
	BenefitAttested               EventType = "BenefitAttested"
	DnsHoldRequested              EventType = "DnsHoldRequested"
	DnsHoldActivated              EventType = "DnsHoldActivated"
	DnsResumed                    EventType = "DnsResumed"
	DnsIntradayCutoff             EventType = "DnsIntradayCutoff"
	OwnershipTransferred          EventType = "OwnershipTransferred"
	OwnershipReclaimed            EventType = "OwnershipReclaimed"
	SystemQuorumLossActivated     EventType = "SystemQuorumLossActivated"
	SystemQuorumLossCleared       EventType = "SystemQuorumLossCleared"
	SystemBcpActivated            EventType = "SystemBcpActivated"
	SystemBcpDeactivated          EventType = "SystemBcpDeactivated"
	DataAccessViolationDetected   EventType = "DataAccessViolationDetected"
	ClosedDomainAccessGranted     EventType = "ClosedDomainAccessGranted"
)

// Audit-only event types: internal lifecycle facts that never travel on
// the wire (spec 002 §12.1.6, list 3, plus the zcgw additions marked).
const (
	PreCheckPassed              EventType = "PreCheckPassed"
	PreCheckFailed              EventType = "PreCheckFailed"
	HReserved                   EventType = "HReserved"
	DecidedToSettle             EventType = "DecidedToSettle"
	Suspended                   EventType = "Suspended"
	Settled                     EventType = "Settled"
	Cancelled                   EventType = "Cancelled"
	FailedExecution             EventType = "FailedExecution"
	GtidRegistered              EventType = "GtidRegistered"
	GtidDecided                 EventType = "GtidDecided"
	GtidSettled                 EventType = "GtidSettled"
	DnsKicked                   EventType = "DnsKicked"
	DnsSettled                  EventType = "DnsSettled"
	DnsRingfencePromoted        EventType = "DnsRingfencePromoted"
	IgsDeferred                 EventType = "IgsDeferred"
	HtlcCreated                 EventType = "HtlcCreated"
	HtlcFulfillRequested        EventType = "HtlcFulfillRequested"
	HtlcAuthRequested           EventType = "HtlcAuthRequested"
	FinalityCosigned            EventType = "FinalityCosigned"
	WatcherEquivocationDetected EventType = "WatcherEquivocationDetected"

	// zcgw additions (the spec's list 3 ends with "等", "and so on"):
	Resumed            EventType = "Resumed"            // PRECHECKED_SUSPENDED -> PRECHECKED, SUSPENDED -> execution
	HtlcOnchainPending EventType = "HtlcOnchainPending" // HTLC_LOCKED -> HTLC_ONCHAIN_PENDING
	// OnchainQuorumPending: a watcher observation recorded while the
	// watcher quorum (onchain_min_watchers) is not reached (004
	// ONCHAIN_QUORUM_PENDING names it; state_from = state_to).
	OnchainQuorumPending EventType = "OnchainQuorumPending"
	GtidPrechecked       EventType = "GtidPrechecked"    // GT_RECEIVED -> GT_PRECHECKED
	GtidSuspended        EventType = "GtidSuspended"     // GT_* -> GT_SUSPENDED
	GtidDecidedCancel    EventType = "GtidDecidedCancel" // GT_* -> GT_DECIDED_CANCEL
	GtidCancelled        EventType = "GtidCancelled"     // GT_DECIDED_CANCEL -> GT_CANCELLED
	GtidFailed           EventType = "GtidFailed"        // GT_SUSPENDED -> GT_FAILED_EXECUTION: a failed leg, closed by the operator
	ReversalCompleted    EventType = "ReversalCompleted" // FAILED_EXECUTION: the payer bank queued the reversal of its debit (EXT_REFUND_PROOF)
	DnsCycleCancelled    EventType = "DnsCycleCancelled" // HOLD_ACTIVE -> CANCELLED: handoff #2 back to ZC without settling
	// A leg's posting at its bank's core: landed, or refused by the core
	// (no state change; state_from = state_to = the transfer's state).
	CorePostingApplied EventType = "CorePostingApplied"
	CorePostingBlocked EventType = "CorePostingBlocked"
	// ParameterChanged: an operator changed a PR-* parameter (spec 002
	// §12.7: evidence_ref; GLOBAL chain, coordinator/params).
	ParameterChanged EventType = "ParameterChanged"
	// The RTP request lifecycle after RtpRequested (CREATED), on the
	// request's own chain (docs/gtid-rtp.md).
	RtpNotified  EventType = "RtpNotified"  // CREATED -> NOTIFIED: rtp-notify delivered to the payer bank
	RtpAccepted  EventType = "RtpAccepted"  // NOTIFIED -> ACCEPTED: the payer accepted
	RtpTxCreated EventType = "RtpTxCreated" // ACCEPTED -> TX_CREATED: the linked transfer exists
	RtpCompleted EventType = "RtpCompleted" // TX_CREATED -> COMPLETED: the linked transfer settled
	RtpDeclined  EventType = "RtpDeclined"  // NOTIFIED -> DECLINED
	RtpExpired   EventType = "RtpExpired"   // CREATED/NOTIFIED -> EXPIRED at expires_at
	RtpFailed    EventType = "RtpFailed"    // -> FAILED: rtp-notify undelivered, or the linked transfer did not settle
)

var declared = map[EventType]bool{}

func init() {
	for _, e := range []EventType{
		PaymentInitiated, PayerExecConfirmed, PayeeExecConfirmed, DecidedCancel,
		NoDebitRecordedProofSubmitted, CreditFailedProofSubmitted, HUnlockAuthorized,
		MisrecordCorrected, RtpRequested, LsmRunCommitted, LsmRunFallback, HtlcLocked,
		HtlcClaimRejected, HtlcConditionsEvaluated, CrossChainLocked, OnchainProofObserved,
		OnchainFinalityClassified, BenefitAttested, DnsHoldRequested, DnsHoldActivated,
		DnsResumed, DnsIntradayCutoff, OwnershipTransferred, OwnershipReclaimed,
		SystemQuorumLossActivated, SystemQuorumLossCleared, SystemBcpActivated,
		SystemBcpDeactivated, DataAccessViolationDetected, ClosedDomainAccessGranted,

		PreCheckPassed, PreCheckFailed, HReserved, DecidedToSettle, Suspended, Settled,
		Cancelled, FailedExecution, GtidRegistered, GtidDecided, GtidSettled, DnsKicked,
		DnsSettled, DnsRingfencePromoted, IgsDeferred, HtlcCreated, HtlcFulfillRequested,
		HtlcAuthRequested, FinalityCosigned, WatcherEquivocationDetected,

		Resumed, HtlcOnchainPending, OnchainQuorumPending, GtidPrechecked, GtidSuspended, GtidDecidedCancel, GtidCancelled, GtidFailed,
		ReversalCompleted, DnsCycleCancelled,
		CorePostingApplied, CorePostingBlocked,
		ParameterChanged,
		RtpNotified, RtpAccepted, RtpTxCreated, RtpCompleted, RtpDeclined, RtpExpired, RtpFailed,
	} {
		declared[e] = true
	}
}

// Declared reports whether e belongs to the closed set.
func (e EventType) Declared() bool { return declared[e] }

// EventTypes lists every declared event type, sorted.
func EventTypes() []EventType {
	out := make([]EventType, 0, len(declared))
	for e := range declared {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
