package outbox

import (
	"context"
	"errors"
	"fmt"
)

// Kind is the direction of a posting on the core.
type Kind string

// The posting kinds. A Reversal undoes the posting named by ReversalOf
// (a reversed debit credits the account, a reversed credit debits it).
const (
	Debit    Kind = "DEBIT"
	Credit   Kind = "CREDIT"
	Reversal Kind = "REVERSAL"
)

// Valid reports whether k is one of the posting kinds.
func (k Kind) Valid() bool { return k == Debit || k == Credit || k == Reversal }

// Route is how a posting reaches the core.
type Route string

// The routes. RouteMQ postings are claimed and sent one by one by Drain;
// RouteFILE postings wait for the bank's overnight posting file
// (TakeForFile) and are settled from the core's result file
// (SettleFromFile). Drain, RecoverStaleClaims and ResolveInDoubt never
// touch a FILE posting. The empty Route is RouteMQ.
const (
	RouteMQ   Route = "MQ"
	RouteFILE Route = "FILE"
)

// Posting is one instruction for the core. Ref is unique: it is the
// reference the core records on its journal line and answers inquiries
// by, so it identifies the posting across resends.
type Posting struct {
	Ref        string // unique posting reference sent to the core
	TxID       string // ZC transaction the posting belongs to
	Bank       string
	Account    string
	Kind       Kind
	Amount     int64  // minor units, > 0
	ReversalOf string // Ref of the reversed posting (Kind == Reversal only)
	Route      Route  // "" or RouteMQ: sent over MQ; RouteFILE: overnight file
}

// ApplyResult is the core's answer to an applied posting.
type ApplyResult struct {
	CoreRef      string // the core's journal reference, if it gives one
	BalanceAfter int64  // the account balance after the posting, if given
}

// LookupState is what the core knows about a posting reference.
type LookupState string

// The answers to an inquiry by reference.
const (
	// LookupApplied: the core has journal lines for the reference.
	LookupApplied LookupState = "APPLIED"
	// LookupRefused: the core received it and refused it (nothing posted).
	LookupRefused LookupState = "REFUSED"
	// LookupUnknown: the core has no trace of the reference. Because the
	// inquiry travels the same FIFO request queue as the posting, every
	// earlier request was processed or discarded before it was answered.
	LookupUnknown LookupState = "UNKNOWN"
)

// LookupResult is the core's answer to an inquiry by reference.
type LookupResult struct {
	State      LookupState
	ReasonCode string // for LookupRefused
	CoreRef    string // for LookupApplied
}

// Core is the one way the outbox reaches a core. Apply's errors must be
// typed: *RefusedError (the core answered no; nothing was posted),
// *NotSentError (the request provably never reached the core's queue) or
// *InDoubtError (sent, no answer). Any other error is treated as in doubt.
type Core interface {
	Apply(ctx context.Context, p Posting) (ApplyResult, error)
	Lookup(ctx context.Context, ref string) (LookupResult, error)
}

// RefusedError: the core answered and refused the posting (for example an
// overdraft). Nothing was posted; retrying will not help until a person
// acts.
type RefusedError struct {
	ReasonCode string // e.g. INSUFFICIENT_FUNDS
	Message    string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("core refused posting: %s: %s", e.ReasonCode, e.Message)
}

// NotSentError: the request was not handed to the core (offline window,
// transport put not committed). The posting stays PENDING.
type NotSentError struct{ Cause error }

func (e *NotSentError) Error() string { return fmt.Sprintf("posting not sent: %v", e.Cause) }
func (e *NotSentError) Unwrap() error { return e.Cause }

// InDoubtError: the request was sent but no answer came in time; the core
// may or may not have applied it.
type InDoubtError struct{ Cause error }

func (e *InDoubtError) Error() string { return fmt.Sprintf("posting outcome unknown: %v", e.Cause) }
func (e *InDoubtError) Unwrap() error { return e.Cause }

// outcomeKind classifies an Apply error.
type outcomeKind int

const (
	outApplied outcomeKind = iota
	outRefused
	outNotSent
	outInDoubt
)

func classify(err error) (outcomeKind, *RefusedError) {
	if err == nil {
		return outApplied, nil
	}
	var r *RefusedError
	if errors.As(err, &r) {
		return outRefused, r
	}
	var n *NotSentError
	if errors.As(err, &n) {
		return outNotSent, nil
	}
	return outInDoubt, nil
}

// CaseRequest asks the coordinator to open a Case for a posting the core
// refused. DedupKey is stable per posting ("OUTBOX-BLOCKED:<ref>"); the
// wiring must make OpenCase idempotent on it, so a crash between opening
// the Case and recording its id cannot produce a second Case.
type CaseRequest struct {
	DedupKey      string
	ReasonCode    string
	RelatedTxID   string
	Description   string
	OpenedBy      string // "BANK"
	CausePartyID  string // the bank
	DetectionPath string // "OUTBOX_BLOCKED"
	Cause         string // cases.OpenRequest.Cause: set when each detection is its own cause
	Ref           string
	Account       string
	Amount        int64
}

// CaseOpener opens a real Case (wired to coordinator/cases).
type CaseOpener interface {
	OpenCase(ctx context.Context, req CaseRequest) (caseID string, err error)
}

// BatchCore is a Core that sends many postings at once: one unit of work
// to the core and one wait for all their answers (corelink over MQ). The
// outbox uses it when its Core has it; the postings of one batch are of
// distinct accounts, each claimed by the caller, so per-account order and
// the in-doubt protocol are unchanged.
type BatchCore interface {
	Core
	// ApplyBatch applies ps; results[i] answers ps[i] with the errors
	// Apply would return (typed the same way).
	ApplyBatch(ctx context.Context, ps []Posting) []BatchResult
}

// BatchResult is one posting's answer in ApplyBatch.
type BatchResult struct {
	ApplyResult
	Err error
}
