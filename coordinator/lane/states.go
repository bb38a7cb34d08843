package lane

import "sort"

// TxState is Transactions.state (spec 001 §13.6 lists the 15 values).
type TxState string

// The transaction states.
const (
	Received             TxState = "RECEIVED"
	Prechecked           TxState = "PRECHECKED"
	PrecheckedSuspended  TxState = "PRECHECKED_SUSPENDED"
	HReserved            TxState = "H_RESERVED"
	HtlcLocked           TxState = "HTLC_LOCKED"
	HtlcOnchainPending   TxState = "HTLC_ONCHAIN_PENDING"
	HtlcFulfillRequested TxState = "HTLC_FULFILL_REQUESTED"
	DecidedToSettle      TxState = "DECIDED_TO_SETTLE"
	DecidedCancel        TxState = "DECIDED_CANCEL"
	PayerExecConfirmed   TxState = "PAYER_EXEC_CONFIRMED"
	PayeeExecConfirmed   TxState = "PAYEE_EXEC_CONFIRMED"
	Suspended            TxState = "SUSPENDED"
	FailedExecution      TxState = "FAILED_EXECUTION"
	Cancelled            TxState = "CANCELLED"
	Settled              TxState = "SETTLED"
)

// AllowedTransitions is ALLOWED_TRANSITIONS: every legal edge of the
// transaction state machine. Edges the spec names explicitly are marked
// with their source; the rest complete the lifecycle the spec describes
// (docs/coordinator-core.md, "State machines", explains each).
var AllowedTransitions = map[TxState][]TxState{
	Received: {
		Prechecked,          // PreCheckPassed
		PrecheckedSuspended, // COUNTERPARTY_WINDOW_CLOSED at precheck (004)
		HtlcLocked,          // canonical HTLC entry RECEIVED -> HTLC_LOCKED (001 §15.3)
		DecidedCancel,       // PreCheckFailed / CANCEL_BY_PAYER
	},
	Prechecked: {
		PrecheckedSuspended, // SUSPEND_NAMECHECK_PENDING, DNS_* (004)
		HReserved,           // H reserved
		DecidedToSettle,     // lanes that reserve H and decide in one step
		DecidedCancel,       // INSUFFICIENT_FUNDS, BOJ_INSUFFICIENT_FUNDS (004)
	},
	PrecheckedSuspended: {
		Prechecked,    // resumed (window reopened, name check answered)
		DecidedCancel, // given up
	},
	HReserved: {
		DecidedToSettle,
		DecidedCancel,
	},
	HtlcLocked: {
		HtlcOnchainPending,   // cross-chain leg (001 §15.3)
		HtlcFulfillRequested, // valid preimage presented (001 §15.3)
		DecidedCancel,        // TIMELOCK_EXPIRED, RECHECK_AUTHORITY_NG (004)
	},
	HtlcOnchainPending: {
		HtlcFulfillRequested, // watcher-observed release (001 §15.3)
		DecidedCancel,        // outer timelock lease reclaimed, then cancelled (000 §5.2)
	},
	HtlcFulfillRequested: {
		DecidedToSettle, // 001 §15.3: no cancel after this point
		FailedExecution,
	},
	DecidedToSettle: {
		PayerExecConfirmed, // a (payer debit) confirmed
		Suspended,          // SUSPEND_EXEC_TIMEOUT (004)
		Settled,            // settled by a DNS cycle (net settlement)
	},
	PayerExecConfirmed: {
		PayeeExecConfirmed, // b (payee credit) confirmed
		Suspended,          // SUSPEND_PAYEE_PROOF_TIMEOUT, IGS_FAILED (004)
	},
	PayeeExecConfirmed: {
		Settled,
	},
	Suspended: {
		PayerExecConfirmed, // a confirmed late
		PayeeExecConfirmed, // b confirmed late
		FailedExecution,    // FAILED_EXEC_TIMEOUT (004)
	},
	DecidedCancel: {
		Cancelled, // cancel completed (reserve released at the bank)
	},
	FailedExecution: nil,
	Cancelled:       nil,
	Settled:         nil,
}

// EntryStates is ENTRY_STATES: the states a new Transactions row may be
// inserted in. RECEIVED for every lane (HTLC_LOCKED direct insertion is
// forbidden, 001 §15.3); DECIDED_TO_SETTLE for GTID legs, which are
// materialised only after the GT-level decision (003 GtidLegs.txid).
var EntryStates = map[TxState]bool{
	Received:        true,
	DecidedToSettle: true,
}

// CanTransition reports whether from -> to is in AllowedTransitions.
func CanTransition(from, to TxState) bool {
	for _, s := range AllowedTransitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Terminal reports whether s has no outgoing edge.
func (s TxState) Terminal() bool {
	_, ok := AllowedTransitions[s]
	return ok && len(AllowedTransitions[s]) == 0
}

// Known reports whether s is a declared TxState.
func (s TxState) Known() bool { _, ok := AllowedTransitions[s]; return ok }

// CancellableStates are the states with an edge to DECIDED_CANCEL: the
// default guard of CancelInFlightTx.
func CancellableStates() []TxState {
	var out []TxState
	for from := range AllowedTransitions {
		if CanTransition(from, DecidedCancel) {
			out = append(out, from)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// GtidState is GtidTransactions.state.
type GtidState string

// The GTID aggregate states. GT_RECEIVED, GT_PRECHECKED,
// GT_DECIDED_TO_SETTLE, GT_SETTLED and GT_SUSPENDED are named by spec 000
// §4; GT_DECIDED_CANCEL and GT_CANCELLED mirror the transaction cancel
// path (a GTID that cannot be decided must end somewhere).
const (
	GtReceived        GtidState = "GT_RECEIVED"
	GtPrechecked      GtidState = "GT_PRECHECKED"
	GtDecidedToSettle GtidState = "GT_DECIDED_TO_SETTLE"
	GtSuspended       GtidState = "GT_SUSPENDED"
	GtSettled         GtidState = "GT_SETTLED"
	GtDecidedCancel   GtidState = "GT_DECIDED_CANCEL"
	GtCancelled       GtidState = "GT_CANCELLED"
	// GtFailedExecution mirrors FAILED_EXECUTION: a suspended GTID whose
	// failed leg will not settle, closed by the operator (docs/gtid-rtp.md).
	GtFailedExecution GtidState = "GT_FAILED_EXECUTION"
)

// AllowedGtidTransitions is ALLOWED_GTID_TRANSITIONS. GT_RECEIVED ->
// GT_SETTLED (skipping the decision) is deliberately absent (000 §4).
var AllowedGtidTransitions = map[GtidState][]GtidState{
	GtReceived:        {GtPrechecked, GtDecidedCancel},
	GtPrechecked:      {GtDecidedToSettle, GtDecidedCancel},
	GtDecidedToSettle: {GtSettled, GtSuspended},       // checkAndFinalizeGtid (000 §4): a leg's transfer suspended
	GtSuspended:       {GtSettled, GtFailedExecution}, // suspended legs recovered; or a leg failed for good, closed by the operator
	GtDecidedCancel:   {GtCancelled},
	GtSettled:         nil,
	GtCancelled:       nil,
	GtFailedExecution: nil,
}

// GtidEntryStates is ALLOWED_GTID_ENTRY_STATES: GT_RECEIVED for normal
// registration, GT_SETTLED for the DNS net-settlement GTID that settleDns
// creates directly (000 §4).
var GtidEntryStates = map[GtidState]bool{GtReceived: true, GtSettled: true}

// CanTransitionGtid reports whether from -> to is in AllowedGtidTransitions.
func CanTransitionGtid(from, to GtidState) bool {
	for _, s := range AllowedGtidTransitions[from] {
		if s == to {
			return true
		}
	}
	return false
}
