package demo

import (
	"fmt"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// The invariants the demo checks, by name (InvariantError.Invariant).
const (
	InvTransfersFinal   = "transfers-final"         // every transfer reached the final state the script expects
	InvPayerPayee       = "payer-payee-amounts"     // each settled transfer moved payer -amount, payee +amount, nothing else moved
	InvZeroSumBank      = "zero-sum-per-bank"       // a bank's customer movements equal its settlement position movement
	InvConservation     = "system-conservation"     // customer movements and every venue sum to zero system-wide
	InvOfflineDrained   = "offline-core-drained"    // postings queued while a core was offline reached it once it returned
	InvLostReplyOnce    = "lost-reply-applied-once" // a posting whose reply was lost is applied exactly once
	InvDriftCase        = "drift-case-opened"       // the out-of-band change was found as a drift with its Case
	InvChainAudit       = "chain-audit"             // every FinalityLog chain verifies
	InvEventOutbox      = "event-outbox"            // every FinalityLog entry has exactly one event outbox row, numbered 1, 2, 3 … per chain
	InvResultFile       = "result-file"             // the dropped file's result file is in outbound with one result per record
	InvBatchJobs        = "batch-jobs"              // BULK window, DNS and EOD runs completed
	InvDNSNetting       = "dns-netting"             // DNS cycles settled and BOJ moved by each bank's net position
	InvWorkbook         = "workbook"                // the reconciliation workbook exists under reports/
	InvIdempotentReplay = "idempotent-replay"       // a replayed POST returned the same transfer
	InvOvernight        = "overnight-file"          // postings routed to the overnight file were all confirmed by the core's result
	InvHReleased        = "h-released"              // with every transfer final, no bank has H in use
	InvFX               = "fx-conduit"              // the claimed FX conduit settled, the refunded one moved nothing, each currency conserved
	InvHTLC             = "htlc-claim-once"         // an HTLC is claimed once (a repeat replays), a wrong preimage and a late claim are refused
)

// InvariantError says which invariant of the demo day failed and how. It
// unwraps to a domainerr INVARIANT_VIOLATION.
type InvariantError struct {
	Invariant string
	Detail    string
}

func (e *InvariantError) Error() string {
	return fmt.Sprintf("demo: invariant %s failed: %s", e.Invariant, e.Detail)
}

// Unwrap returns the catalog error (INVARIANT_VIOLATION) behind e.
func (e *InvariantError) Unwrap() error {
	return domainerr.New("INVARIANT_VIOLATION", e.Detail, map[string]any{"invariant": e.Invariant})
}

func violated(invariant, format string, args ...any) *InvariantError {
	return &InvariantError{Invariant: invariant, Detail: fmt.Sprintf(format, args...)}
}
