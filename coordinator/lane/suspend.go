package lane

import (
	"context"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Suspend parks a transaction in SUSPENDED or PRECHECKED_SUSPENDED.
type Suspend struct {
	TxID string
	From TxState
	// To is SUSPENDED or PRECHECKED_SUSPENDED; "" picks
	// PRECHECKED_SUSPENDED before a decision and SUSPENDED after.
	To          TxState
	ReasonCode  string // required: SUSPEND_EXEC_TIMEOUT, IGS_FAILED, ...
	Issuer      string // "" means 'ZC'
	Payload     map[string]any
	SetColumns  map[string]any
	SideUpdates SideUpdates
}

// SuspendResult reports a suspend. Skipped is true when the issuer did
// not own the row: suspends come from sweeps and queues, and losing the
// row to a concurrent handoff is a benign race, not a bug (000 §5.3).
type SuspendResult struct {
	Result
	Skipped bool
}

// SuspendTx runs s in its own write transaction.
func (l *Lanes) SuspendTx(ctx context.Context, s Suspend) (SuspendResult, error) {
	var res SuspendResult
	err := l.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		res, err = l.SuspendInTx(ctx, tx, s)
		return err
	})
	if err != nil {
		return SuspendResult{}, err
	}
	return res, nil
}

// SuspendInTx runs s inside the caller's write transaction. Like a
// transition, but an issuer that is not the owner is skipped and logged
// (event lane.suspend_skipped) instead of failing, and custody returns to
// 'ZC' (e.g. IGS_FAILED suspended by issuer 'VENUE:BOJ').
func (l *Lanes) SuspendInTx(ctx context.Context, tx *store.Tx, s Suspend) (SuspendResult, error) {
	if s.TxID == "" {
		return SuspendResult{}, missing("txid")
	}
	if s.ReasonCode == "" {
		return SuspendResult{}, missing("reason_code")
	}
	if s.To == "" {
		s.To = Suspended
		if CanTransition(s.From, PrecheckedSuspended) {
			s.To = PrecheckedSuspended
		}
	}
	if s.To != Suspended && s.To != PrecheckedSuspended {
		return SuspendResult{}, domainerr.New("INVALID_REQUEST", "suspend target must be SUSPENDED or PRECHECKED_SUSPENDED", map[string]any{"to": string(s.To)})
	}
	if !CanTransition(s.From, s.To) {
		return SuspendResult{}, impossible(s.TxID, s.From, s.To)
	}
	if _, ok := s.SetColumns["reason_code"]; ok {
		return SuspendResult{}, domainerr.New("INVALID_REQUEST", "set reason_code through Suspend.ReasonCode", nil)
	}
	if err := l.gate.CheckWritable(ctx, tx); err != nil {
		return SuspendResult{}, err
	}
	issuer := issuerOrZC(s.Issuer)
	cols := map[string]any{"reason_code": s.ReasonCode}
	for k, v := range s.SetColumns {
		cols[k] = v
	}
	cur, ok, err := casGuarded(ctx, tx, s.TxID, func(cur row) bool {
		return cur.Owner == issuer && cur.State == s.From
	}, func(cur row) casUpdate {
		return casUpdate{txid: s.TxID, from: cur, to: s.To, newOwner: OwnerZC, setCols: cols, pending: true, updatedAt: l.now()}
	})
	notApplied := Result{PreviousState: cur.State, State: cur.State, Version: cur.Version, Owner: cur.Owner}
	switch {
	case err != nil:
		if cur == (row{}) {
			return SuspendResult{}, err
		}
		return SuspendResult{Result: notApplied}, err
	case !ok && cur.Owner != issuer:
		l.logger.WarnContext(ctx, "lane.suspend_skipped", "txid", s.TxID, "owner", cur.Owner, "issuer", issuer,
			"state", string(cur.State), "reason_code", s.ReasonCode)
		return SuspendResult{Result: notApplied, Skipped: true}, nil
	case !ok:
		return SuspendResult{Result: notApplied}, nil
	}
	if err := l.fault(ctx, tx, s.TxID); err != nil {
		return SuspendResult{}, err
	}
	payload := map[string]any{}
	for k, v := range s.Payload {
		payload[k] = v
	}
	payload["reason_code"] = s.ReasonCode
	if cur.Owner != OwnerZC {
		payload["owner_from"], payload["owner_to"] = cur.Owner, OwnerZC
	}
	entry, err := l.log.Append(ctx, tx, finality.Event{TxID: s.TxID, Type: finality.Suspended, StateFrom: string(cur.State), StateTo: string(s.To), Payload: payload})
	if err != nil {
		return SuspendResult{}, err
	}
	if s.SideUpdates != nil {
		if err := s.SideUpdates(ctx, tx); err != nil {
			return SuspendResult{}, err
		}
	}
	return SuspendResult{Result: Result{Applied: true, PreviousState: cur.State, State: s.To, Version: cur.Version + 1, Owner: OwnerZC, Entry: entry}}, nil
}
