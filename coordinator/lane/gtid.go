package lane

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// GtidTransition moves a GTID aggregate from From to To.
type GtidTransition struct {
	GTID        string
	From, To    GtidState
	EventType   finality.EventType
	Payload     any
	SideUpdates SideUpdates
}

// GtidResult reports a GTID transition.
type GtidResult struct {
	Applied       bool
	PreviousState GtidState
	Version       int64
	Entry         finality.Entry
}

// TransitionGtidWithLog runs t in its own write transaction.
func (l *Lanes) TransitionGtidWithLog(ctx context.Context, t GtidTransition) (GtidResult, error) {
	var res GtidResult
	err := l.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		res, err = l.TransitionGtidInTx(ctx, tx, t)
		return err
	})
	if err != nil {
		return GtidResult{}, err
	}
	return res, nil
}

// TransitionGtidInTx is TransitionInTx for GtidTransactions: the edge is
// checked against AllowedGtidTransitions (no bypass), the gate is passed,
// the CAS is guarded by state and version, and the entry goes on the
// GTID's own chain (gtid set, txid NULL).
func (l *Lanes) TransitionGtidInTx(ctx context.Context, tx *store.Tx, t GtidTransition) (GtidResult, error) {
	if t.GTID == "" {
		return GtidResult{}, missing("gtid")
	}
	if !CanTransitionGtid(t.From, t.To) {
		return GtidResult{}, domainerr.New("IMPOSSIBLE_TRANSITION", "transition not in ALLOWED_GTID_TRANSITIONS",
			map[string]any{"gtid": t.GTID, "from": string(t.From), "to": string(t.To)})
	}
	if t.EventType == "" {
		return GtidResult{}, missing("event_type")
	}
	if err := l.gate.CheckWritable(ctx, tx); err != nil {
		return GtidResult{}, err
	}
	var state string
	var version int64
	err := tx.QueryRowContext(ctx, "SELECT state, version FROM GtidTransactions WHERE gtid = ?", t.GTID).Scan(&state, &version)
	if errors.Is(err, sql.ErrNoRows) {
		return GtidResult{}, domainerr.New("GTID_NOT_FOUND", "GTID not found", map[string]any{"gtid": t.GTID})
	}
	if err != nil {
		return GtidResult{}, fmt.Errorf("lane: read %s: %w", t.GTID, err)
	}
	notApplied := GtidResult{PreviousState: GtidState(state), Version: version}
	if GtidState(state) != t.From {
		return notApplied, nil
	}
	ok, err := store.Applied(tx.ExecContext(ctx, "UPDATE GtidTransactions SET state = ?, version = version + 1, updated_at = ? WHERE gtid = ? AND state = ? AND version = ?",
		string(t.To), l.now(), t.GTID, state, version))
	if err != nil {
		return GtidResult{}, fmt.Errorf("lane: CAS %s %s->%s: %w", t.GTID, t.From, t.To, err)
	}
	if !ok {
		return notApplied, nil
	}
	if err := l.fault(ctx, tx, t.GTID); err != nil {
		return GtidResult{}, err
	}
	entry, err := l.log.Append(ctx, tx, finality.Event{GTID: t.GTID, Type: t.EventType, StateFrom: state, StateTo: string(t.To), Payload: t.Payload})
	if err != nil {
		return GtidResult{}, err
	}
	if t.SideUpdates != nil {
		if err := t.SideUpdates(ctx, tx); err != nil {
			return GtidResult{}, err
		}
	}
	return GtidResult{Applied: true, PreviousState: t.From, Version: version + 1, Entry: entry}, nil
}
