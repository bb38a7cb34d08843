package lane

import (
	"context"
	"fmt"
	"slices"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Cancel cancels an in-flight transaction.
type Cancel struct {
	TxID string
	// ReasonCode is the state reason_code written to the row and the log
	// (TIMELOCK_EXPIRED, CANCEL_BY_PAYER, ...). Required.
	ReasonCode string
	// FromStates guards the cancel; nil means every state with an edge to
	// DECIDED_CANCEL (CancellableStates).
	FromStates []TxState
	Issuer     string // "" means 'ZC'; must be the owner
	// SkipReleaseH leaves the H reservations alone (for lanes that never
	// reserved H or release it elsewhere).
	SkipReleaseH bool
	EventType    finality.EventType // "" means DecidedCancel
	Payload      map[string]any     // extra payload fields
	SetColumns   map[string]any
	SideUpdates  SideUpdates
}

// CancelResult reports a cancel. Released lists the H reservations the
// cancel released; it is empty unless Applied.
type CancelResult struct {
	Result
	Released []Release
}

// CancelInFlightTx runs c in its own write transaction.
func (l *Lanes) CancelInFlightTx(ctx context.Context, c Cancel) (CancelResult, error) {
	var res CancelResult
	err := l.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		res, err = l.CancelInTx(ctx, tx, c)
		return err
	})
	if err != nil {
		return CancelResult{}, err
	}
	return res, nil
}

// CancelInTx runs c inside the caller's write transaction in the order
// spec 000 §4 fixes: state guard (the CAS to DECIDED_CANCEL, which also
// hands the owner back to 'ZC'), then H release (and the payer's daily
// total given back, hlimit.GiveBackDailyForTx), then the log entry, then
// the side updates. H is released only when the CAS applied, so a cancel
// that lost to a concurrent decision never frees a LOCKED reservation.
func (l *Lanes) CancelInTx(ctx context.Context, tx *store.Tx, c Cancel) (CancelResult, error) {
	if c.TxID == "" {
		return CancelResult{}, missing("txid")
	}
	if c.ReasonCode == "" {
		return CancelResult{}, missing("reason_code")
	}
	from := c.FromStates
	if from == nil {
		from = CancellableStates()
	}
	for _, s := range from {
		if !CanTransition(s, DecidedCancel) {
			return CancelResult{}, impossible(c.TxID, s, DecidedCancel)
		}
	}
	if c.EventType == "" {
		c.EventType = finality.DecidedCancel
	}
	if err := l.gate.CheckWritable(ctx, tx); err != nil {
		return CancelResult{}, err
	}
	issuer := issuerOrZC(c.Issuer)
	cols := map[string]any{"reason_code": c.ReasonCode}
	for k, v := range c.SetColumns {
		if k == "reason_code" {
			return CancelResult{}, domainerr.New("INVALID_REQUEST", "set reason_code through Cancel.ReasonCode", nil)
		}
		cols[k] = v
	}
	now := l.now()
	var refused error
	cur, ok, err := casGuarded(ctx, tx, c.TxID, func(cur row) bool {
		refused = nil
		if cur.Owner != issuer {
			refused = ownershipViolation(c.TxID, cur.Owner, issuer)
			return false
		}
		return slices.Contains(from, cur.State)
	}, func(cur row) casUpdate {
		return casUpdate{txid: c.TxID, from: cur, to: DecidedCancel, newOwner: OwnerZC, setCols: cols, pending: true, updatedAt: now}
	})
	notApplied := CancelResult{Result: Result{PreviousState: cur.State, State: cur.State, Version: cur.Version, Owner: cur.Owner}}
	switch {
	case err != nil:
		return notApplied, err
	case refused != nil:
		return CancelResult{}, refused
	case !ok:
		return notApplied, nil
	}
	if err := l.fault(ctx, tx, c.TxID); err != nil {
		return CancelResult{}, err
	}
	var released []Release
	if !c.SkipReleaseH {
		if released, err = l.releaseH(ctx, tx, c.TxID); err != nil {
			return CancelResult{}, err
		}
	}
	daily, err := hlimit.New(l.clock, l.logger).GiveBackDailyForTx(ctx, tx, c.TxID)
	if err != nil {
		return CancelResult{}, fmt.Errorf("lane: give back daily total of %s: %w", c.TxID, err)
	}
	payload := map[string]any{}
	for k, v := range c.Payload {
		payload[k] = v
	}
	payload["reason_code"] = c.ReasonCode
	payload["h_released"] = released
	payload["daily_given_back"] = daily
	if cur.Owner != OwnerZC {
		payload["owner_from"], payload["owner_to"] = cur.Owner, OwnerZC
	}
	entry, err := l.log.Append(ctx, tx, finality.Event{TxID: c.TxID, Type: c.EventType, StateFrom: string(cur.State), StateTo: string(DecidedCancel), Payload: payload})
	if err != nil {
		return CancelResult{}, err
	}
	if c.SideUpdates != nil {
		if err := c.SideUpdates(ctx, tx); err != nil {
			return CancelResult{}, err
		}
	}
	return CancelResult{Result: Result{Applied: true, PreviousState: cur.State, State: DecidedCancel, Version: cur.Version + 1, Owner: OwnerZC, Entry: entry}, Released: released}, nil
}

// Release is one H reservation a cancel released.
type Release struct {
	ReservationID string `json:"reservation_id"`
	BankID        string `json:"bank_id"`
	Currency      string `json:"currency"`
	Amount        int64  `json:"amount"`
}

// releaseH releases every unreleased H reservation of txid through
// coordinator/hlimit, the one owner of the H model (guarded flip of each
// HReservations row, then a guarded decrement of h_used), inside the
// cancel's transaction.
func (l *Lanes) releaseH(ctx context.Context, tx *store.Tx, txid string) ([]Release, error) {
	rs, err := hlimit.New(l.clock, l.logger).ReleaseForTx(ctx, tx, txid)
	if err != nil {
		return nil, fmt.Errorf("lane: release H of %s: %w", txid, err)
	}
	out := make([]Release, 0, len(rs))
	for _, r := range rs {
		out = append(out, Release{ReservationID: r.ID, BankID: r.BankID, Currency: r.Currency, Amount: r.Amount})
	}
	return out, nil
}
