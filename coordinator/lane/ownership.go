package lane

import (
	"context"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Handoff moves custody of a transaction without changing its state.
type Handoff struct {
	TxID      string
	FromOwner string // the owner expected now; also the issuer
	ToOwner   string
	// EventType is OwnershipTransferred ("" default) or, for a lease
	// reclaimed by the coordinator, OwnershipReclaimed (ToOwner 'ZC').
	EventType   finality.EventType
	Payload     map[string]any
	SetColumns  map[string]any // e.g. external_settlement_status='REQUESTED' with 'VENUE:BOJ'
	SideUpdates SideUpdates
}

// TransferOwnership runs h in its own write transaction.
func (l *Lanes) TransferOwnership(ctx context.Context, h Handoff) (Result, error) {
	var res Result
	err := l.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		res, err = l.TransferOwnershipInTx(ctx, tx, h)
		return err
	})
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// TransferOwnershipInTx is the mirror image of TransitionInTx (spec 000
// §5.3): a CAS on owner (guarded by owner, state and version; version is
// bumped) and a FinalityLog entry with state_from = state_to = the current
// state. A row whose owner is no longer FromOwner is left alone (Applied
// false): a lease reclaim that lost to the watcher's claim is a no-op.
// Terminal rows cannot change hands (STATE_GUARD).
func (l *Lanes) TransferOwnershipInTx(ctx context.Context, tx *store.Tx, h Handoff) (Result, error) {
	if h.TxID == "" {
		return Result{}, missing("txid")
	}
	if !ValidOwner(h.FromOwner) || !ValidOwner(h.ToOwner) || h.FromOwner == h.ToOwner {
		return Result{}, domainerr.New("INVALID_REQUEST", "handoff needs two different valid owners",
			map[string]any{"txid": h.TxID, "from_owner": h.FromOwner, "to_owner": h.ToOwner})
	}
	switch h.EventType {
	case "":
		h.EventType = finality.OwnershipTransferred
	case finality.OwnershipTransferred:
	case finality.OwnershipReclaimed:
		if h.ToOwner != OwnerZC {
			return Result{}, domainerr.New("INVALID_REQUEST", "only the coordinator reclaims a lease", map[string]any{"txid": h.TxID, "to_owner": h.ToOwner})
		}
	default:
		return Result{}, domainerr.New("INVALID_REQUEST", "handoff event must be OwnershipTransferred or OwnershipReclaimed", map[string]any{"event_type": string(h.EventType)})
	}
	if err := l.gate.CheckWritable(ctx, tx); err != nil {
		return Result{}, err
	}
	cur, err := readRow(ctx, tx, h.TxID)
	if err != nil {
		return Result{}, err
	}
	notApplied := Result{PreviousState: cur.State, State: cur.State, Version: cur.Version, Owner: cur.Owner}
	if cur.Owner != h.FromOwner {
		return notApplied, nil
	}
	if cur.State.Terminal() {
		return Result{}, domainerr.New("STATE_GUARD", "a transaction in a terminal state has no custody to hand off",
			map[string]any{"txid": h.TxID, "state": string(cur.State)})
	}
	ok, err := casUpdate{txid: h.TxID, from: cur, to: cur.State, newOwner: h.ToOwner, setCols: h.SetColumns, updatedAt: l.now()}.run(ctx, tx)
	if err != nil || !ok {
		return notApplied, err
	}
	if err := l.fault(ctx, tx, h.TxID); err != nil {
		return Result{}, err
	}
	payload := map[string]any{}
	for k, v := range h.Payload {
		payload[k] = v
	}
	payload["owner_from"], payload["owner_to"] = h.FromOwner, h.ToOwner
	entry, err := l.log.Append(ctx, tx, finality.Event{TxID: h.TxID, Type: h.EventType, StateFrom: string(cur.State), StateTo: string(cur.State), Payload: payload})
	if err != nil {
		return Result{}, err
	}
	if h.SideUpdates != nil {
		if err := h.SideUpdates(ctx, tx); err != nil {
			return Result{}, err
		}
	}
	return Result{Applied: true, PreviousState: cur.State, State: cur.State, Version: cur.Version + 1, Owner: h.ToOwner, Entry: entry}, nil
}
