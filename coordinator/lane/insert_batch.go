package lane

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// ErrNotAllNew is InsertNewTxsInTx's answer when a txid or idempotency
// key of the batch already exists.
var ErrNotAllNew = errors.New("lane: a transaction of the batch already exists")

// insertRows is how many Transactions rows one multi-row INSERT writes.
const insertRows = 64

// InsertNewTxsInTx creates every NewTx of ns inside the caller's write
// transaction, with its first FinalityLog entry and side updates: the
// rows InsertTxInTx would create one by one, for a batch (a bulk
// submission) whose txids and idempotency keys are all new, written by
// multi-row INSERTs (finality.Log.PrepareFirstTx for the entries). Every
// NewTx is checked as InsertTxInTx checks it, and the writable gate is
// passed once. When a txid or key exists it returns ErrNotAllNew; rows of
// ns may then be written, so the caller must roll its transaction back
// (and use InsertTxInTx per row to learn which one exists).
//
// also, when not nil, runs after those rows and before the FinalityLog's
// after-append hooks (the event outbox rows): the caller's own writes for
// the batch overlap the hooks' preparation (the events are signed on the
// other cores meanwhile). Its error is InsertNewTxsInTx's.
func (l *Lanes) InsertNewTxsInTx(ctx context.Context, tx *store.Tx, ns []NewTx, also func() error) ([]finality.Entry, error) {
	if len(ns) == 0 {
		return nil, nil
	}
	now := l.now()
	cols := make([][]string, len(ns))
	args := make([][]any, len(ns))
	for i := range ns {
		var err error
		if cols[i], args[i], err = newTxRow(&ns[i], now); err != nil {
			return nil, err
		}
	}
	if err := l.gate.CheckWritable(ctx, tx); err != nil {
		return nil, err
	}
	evs := make([]finality.Event, len(ns))
	for i, n := range ns {
		evs[i] = finality.Event{TxID: n.TxID, Type: n.EventType, StateTo: string(n.State), Payload: n.Payload}
	}
	// The entries first (their event_seq allocated, the hooks started),
	// so the hooks work while the rows are written.
	first, err := l.log.PrepareFirstTx(ctx, tx, evs)
	if err != nil {
		return nil, err
	}
	var batch []any
	for lo := 0; lo < len(ns); {
		hi := lo + 1
		for hi < len(ns) && hi-lo < insertRows && slices.Equal(cols[hi], cols[lo]) {
			hi++
		}
		batch = batch[:0]
		for i := lo; i < hi; i++ {
			batch = append(batch, args[i]...)
		}
		if _, err := tx.ExecContext(ctx, store.InsertRows("Transactions", cols[lo], hi-lo), batch...); err != nil {
			if store.IsUniqueViolation(err) {
				return nil, fmt.Errorf("%w: %w", ErrNotAllNew, err)
			}
			return nil, fmt.Errorf("lane: insert %d transactions: %w", hi-lo, err)
		}
		lo = hi
	}
	for _, n := range ns {
		if err := l.fault(ctx, tx, n.TxID); err != nil {
			return nil, err
		}
	}
	if err := first.InsertTx(ctx, tx); err != nil {
		return nil, err
	}
	for _, n := range ns {
		if n.SideUpdates != nil {
			if err := n.SideUpdates(ctx, tx); err != nil {
				return nil, err
			}
		}
	}
	if also != nil {
		if err := also(); err != nil {
			return nil, err
		}
	}
	if err := first.FinishTx(ctx, tx); err != nil {
		return nil, err
	}
	return first.Entries(), nil
}
