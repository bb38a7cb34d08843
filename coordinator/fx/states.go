package fx

// QuoteStatus is FxQuotes.status.
type QuoteStatus string

// The quote statuses. A quote past its valid_to stays ACTIVE in the table
// but is never used: expiry is a read-time rule against the injected clock.
const (
	QuoteActive    QuoteStatus = "ACTIVE"
	QuoteWithdrawn QuoteStatus = "WITHDRAWN"
)

// TransferStatus is FxTransfers.status.
type TransferStatus string

// The FX transfer statuses (003 FxTransfers.status).
const (
	TransferInitiated TransferStatus = "INITIATED"
	TransferLocked    TransferStatus = "LOCKED"
	TransferSettling  TransferStatus = "SETTLING"
	TransferSettled   TransferStatus = "SETTLED"
	TransferRefunded  TransferStatus = "REFUNDED"
)

// TransferTransitions are the legal edges of FxTransfers.status. A
// transfer is inserted LOCKED (bind_htlc) or INITIATED (default path,
// decided once its legs are held); claim moves LOCKED -> SETTLING, refund
// LOCKED -> REFUNDED (INITIATED -> REFUNDED when a bank refused a leg's
// hold before the decision), and the conduit GTID reaching GT_SETTLED
// moves SETTLING (or INITIATED) -> SETTLED.
var TransferTransitions = map[TransferStatus][]TransferStatus{
	TransferInitiated: {TransferSettled, TransferRefunded},
	TransferLocked:    {TransferSettling, TransferRefunded},
	TransferSettling:  {TransferSettled},
	TransferSettled:   nil,
	TransferRefunded:  nil,
}

// LockState is FxLegLocks.state.
type LockState string

// The leg lock states (003 FxLegLocks.state).
const (
	LockLocked   LockState = "LOCKED"
	LockClaimed  LockState = "CLAIMED"
	LockRefunded LockState = "REFUNDED"
)

// LockTransitions are the legal edges of FxLegLocks.state.
var LockTransitions = map[LockState][]LockState{
	LockLocked:   {LockClaimed, LockRefunded},
	LockClaimed:  nil,
	LockRefunded: nil,
}

func canMove[S comparable](table map[S][]S, from, to S) bool {
	for _, s := range table[from] {
		if s == to {
			return true
		}
	}
	return false
}

// CanTransfer reports whether from -> to is in TransferTransitions.
func CanTransfer(from, to TransferStatus) bool { return canMove(TransferTransitions, from, to) }

// CanLock reports whether from -> to is in LockTransitions.
func CanLock(from, to LockState) bool { return canMove(LockTransitions, from, to) }
