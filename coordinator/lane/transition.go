package lane

import (
	"context"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Transition moves one transaction from From to To.
type Transition struct {
	TxID      string
	From, To  TxState
	EventType finality.EventType
	// Issuer is the party moving the row; "" means 'ZC'. It must be the
	// row's owner.
	Issuer  string
	Payload any
	// NewOwner, when set, hands the row to another owner in the same CAS
	// (e.g. HTLC_LOCKED -> HTLC_ONCHAIN_PENDING with 'CHAIN:default',
	// spec 000 §5.2 handoff #4).
	NewOwner string
	// SetColumns sets further Transactions columns in the same CAS
	// (reason_code, decision_proof_ref, ...); state, owner, version and
	// the timestamps are refused.
	SetColumns  map[string]any
	SideUpdates SideUpdates
}

// Result reports what a primitive did. When Applied is false nothing was
// written and Entry is zero.
type Result struct {
	Applied       bool
	PreviousState TxState
	State         TxState // state after the call
	Version       int64   // version after the call
	Owner         string  // owner after the call
	Entry         finality.Entry
}

// TransitionWithLog runs t in its own write transaction.
func (l *Lanes) TransitionWithLog(ctx context.Context, t Transition) (Result, error) {
	var res Result
	err := l.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		res, err = l.TransitionInTx(ctx, tx, t)
		return err
	})
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// TransitionInTx runs t inside the caller's write transaction. Errors
// must make the caller roll back (store.DB.Write does when fn returns the
// error).
//
// It returns IMPOSSIBLE_TRANSITION for an edge not in AllowedTransitions,
// the gate's SYSTEM_*_READ_ONLY error, TX_NOT_FOUND, or
// OWNERSHIP_VIOLATION when Issuer is not the owner. A row no longer in
// From is not an error: Applied is false and PreviousState says where the
// row is.
func (l *Lanes) TransitionInTx(ctx context.Context, tx *store.Tx, t Transition) (Result, error) {
	if t.TxID == "" {
		return Result{}, missing("txid")
	}
	if !CanTransition(t.From, t.To) {
		return Result{}, impossible(t.TxID, t.From, t.To)
	}
	if t.EventType == "" {
		return Result{}, missing("event_type")
	}
	if t.NewOwner != "" && !ValidOwner(t.NewOwner) {
		return Result{}, domainerr.New("INVALID_REQUEST", "invalid owner", map[string]any{"owner": t.NewOwner})
	}
	if err := l.gate.CheckWritable(ctx, tx); err != nil {
		return Result{}, err
	}
	issuer := issuerOrZC(t.Issuer)
	var refused error
	cur, ok, err := casGuarded(ctx, tx, t.TxID, func(cur row) bool {
		refused = nil
		if cur.Owner != issuer {
			refused = ownershipViolation(t.TxID, cur.Owner, issuer)
			return false
		}
		return cur.State == t.From
	}, func(cur row) casUpdate {
		return casUpdate{txid: t.TxID, from: cur, to: t.To, newOwner: t.NewOwner, setCols: t.SetColumns, pending: true, updatedAt: l.now()}
	})
	notApplied := Result{PreviousState: cur.State, State: cur.State, Version: cur.Version, Owner: cur.Owner}
	switch {
	case err != nil:
		return notApplied, err
	case refused != nil:
		return Result{}, refused
	case !ok:
		return notApplied, nil
	}
	if err := l.fault(ctx, tx, t.TxID); err != nil {
		return Result{}, err
	}
	owner := cur.Owner
	payload := t.Payload
	if t.NewOwner != "" && t.NewOwner != cur.Owner {
		owner = t.NewOwner
		payload = withFields(payload, map[string]any{"owner_from": cur.Owner, "owner_to": t.NewOwner})
	}
	entry, err := l.log.Append(ctx, tx, finality.Event{TxID: t.TxID, Type: t.EventType, StateFrom: string(cur.State), StateTo: string(t.To), Payload: payload})
	if err != nil {
		return Result{}, err
	}
	if t.SideUpdates != nil {
		if err := t.SideUpdates(ctx, tx); err != nil {
			return Result{}, err
		}
	}
	return Result{Applied: true, PreviousState: cur.State, State: t.To, Version: cur.Version + 1, Owner: owner, Entry: entry}, nil
}

// withFields adds fields to a payload: merged into a map[string]any
// payload (copied), or wrapped as {"data": payload, fields...}.
func withFields(payload any, fields map[string]any) any {
	out := map[string]any{}
	switch p := payload.(type) {
	case nil:
	case map[string]any:
		for k, v := range p {
			out[k] = v
		}
	default:
		out["data"] = p
	}
	for k, v := range fields {
		out[k] = v
	}
	return out
}
