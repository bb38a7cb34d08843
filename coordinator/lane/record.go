package lane

import (
	"context"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// EvidenceEvents are the FinalityLog event types that record a fact about a
// transaction without moving it (spec 004's state reason codes marked
// "追記のみ" / "遷移なし（証跡のみ）": MISRECORD_CORRECTED, INVALID_PREIMAGE,
// and the reversal of a transfer whose credit failed). They are the only
// types Record accepts.
var EvidenceEvents = map[finality.EventType]bool{
	finality.CreditFailedProofSubmitted:    true, // a reversal decided on a credit-failed proof
	finality.NoDebitRecordedProofSubmitted: true, // the payer bank holds no debit to reverse
	finality.ReversalCompleted:             true, // the payer bank queued the reversal postings
	finality.MisrecordCorrected:            true,
	finality.HtlcClaimRejected:             true,
	finality.HtlcConditionsEvaluated:       true, // met or not; a met one precedes HTLC_FULFILL_REQUESTED (001 §15.5)
	finality.OnchainFinalityClassified:     true, // a cross-chain HTLC's classification at create (001 §15.6)
	finality.OnchainProofObserved:          true, // one watcher's observation of the on-chain release (handoff #4)
	finality.OnchainQuorumPending:          true, // the watcher quorum not yet reached (004 ONCHAIN_QUORUM_PENDING)
	finality.WatcherEquivocationDetected:   true, // conflicting watcher observations: fail closed, Case (004 WATCHER_EQUIVOCATION)
}

// Record appends an evidence entry to a transaction's chain without a
// state change.
type Record struct {
	TxID      string
	State     TxState // the state the row must be in
	EventType finality.EventType
	// Issuer is the party recording; "" means 'ZC'. It must be the owner.
	Issuer      string
	Payload     any
	SetColumns  map[string]any // e.g. case_id
	SideUpdates SideUpdates
}

// RecordWithLog runs r in its own write transaction.
func (l *Lanes) RecordWithLog(ctx context.Context, r Record) (Result, error) {
	var res Result
	err := l.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		res, err = l.RecordInTx(ctx, tx, r)
		return err
	})
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// RecordInTx appends r inside the caller's write transaction: the same
// steps as TransitionInTx (writable gate, owner check, a CAS on state,
// version and owner that bumps version, then the FinalityLog entry with
// state_from = state_to and the side updates), allowed in terminal states
// too. An event type outside EvidenceEvents is INVALID_REQUEST; a row no
// longer in State is not applied (Applied false, nothing written).
func (l *Lanes) RecordInTx(ctx context.Context, tx *store.Tx, r Record) (Result, error) {
	if r.TxID == "" {
		return Result{}, missing("txid")
	}
	if !EvidenceEvents[r.EventType] {
		return Result{}, domainerr.New("INVALID_REQUEST", "event type does not record evidence without a transition",
			map[string]any{"txid": r.TxID, "event_type": string(r.EventType)})
	}
	if !r.State.Known() {
		return Result{}, domainerr.New("INVALID_REQUEST", "unknown state", map[string]any{"txid": r.TxID, "state": string(r.State)})
	}
	if err := l.gate.CheckWritable(ctx, tx); err != nil {
		return Result{}, err
	}
	issuer := issuerOrZC(r.Issuer)
	cur, err := readRow(ctx, tx, r.TxID)
	if err != nil {
		return Result{}, err
	}
	if cur.Owner != issuer {
		return Result{}, ownershipViolation(r.TxID, cur.Owner, issuer)
	}
	notApplied := Result{PreviousState: cur.State, State: cur.State, Version: cur.Version, Owner: cur.Owner}
	if cur.State != r.State {
		return notApplied, nil
	}
	ok, err := casUpdate{txid: r.TxID, from: cur, to: cur.State, setCols: r.SetColumns, updatedAt: l.now()}.run(ctx, tx)
	if err != nil || !ok {
		return notApplied, err
	}
	if err := l.fault(ctx, tx, r.TxID); err != nil {
		return Result{}, err
	}
	entry, err := l.log.Append(ctx, tx, finality.Event{TxID: r.TxID, Type: r.EventType, StateFrom: string(cur.State), StateTo: string(cur.State), Payload: r.Payload})
	if err != nil {
		return Result{}, err
	}
	if r.SideUpdates != nil {
		if err := r.SideUpdates(ctx, tx); err != nil {
			return Result{}, err
		}
	}
	return Result{Applied: true, PreviousState: cur.State, State: cur.State, Version: cur.Version + 1, Owner: cur.Owner, Entry: entry}, nil
}
