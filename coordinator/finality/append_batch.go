package finality

import (
	"context"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// batchRows is how many entries one multi-row INSERT writes (11
// placeholders each, well below SQLite's limit).
const batchRows = 128

var entryColumns = []string{"log_id", "txid", "gtid", "event_type", "state_from", "state_to", "payload_json",
	"event_seq", "occurred_at", "prev_hash", "entry_hash"}

// AppendFirstTx appends evs inside tx, each as the FIRST entry of its own
// new chain (prev_hash Genesis): the first entries of transfers created in
// the same transaction (a bulk submission). It is Append for many chains
// at once, with the same checks and the same entries (consecutive
// event_seq in evs order, one occurred_at), written by multi-row INSERTs;
// AfterAppendFirst runs once for all of them when set, else AfterAppend
// for every entry. A chain that already has an entry is
// refused by the fork guard (the unique index on the chain and prev_hash):
// CONCURRENCY_CONFLICT, and the caller must roll back, since earlier rows
// of evs may be written. It is PrepareFirstTx, InsertTx and FinishTx in a
// row.
func (l *Log) AppendFirstTx(ctx context.Context, tx *store.Tx, evs []Event) ([]Entry, error) {
	b, err := l.PrepareFirstTx(ctx, tx, evs)
	if err != nil {
		return nil, err
	}
	if err := b.InsertTx(ctx, tx); err != nil {
		return nil, err
	}
	if err := b.FinishTx(ctx, tx); err != nil {
		return nil, err
	}
	return b.Entries(), nil
}

// FirstBatch is an AppendFirstTx taken in three steps inside one
// transaction, so that a caller's own writes can run while the
// after-append hook prepares its rows on the other cores (the event
// outbox signs one message per entry): PrepareFirstTx, then InsertTx,
// then the caller's writes, then FinishTx. A batch whose transaction is
// rolled back is dropped as it is.
type FirstBatch struct {
	l     *Log
	out   []Entry
	after func(ctx context.Context, tx *store.Tx) error
}

// PrepareFirstTx checks evs as AppendFirstTx does, allocates their
// consecutive event_seq inside tx, builds the entries and starts
// AfterAppendFirst with them. It writes nothing else.
func (l *Log) PrepareFirstTx(ctx context.Context, tx *store.Tx, evs []Event) (*FirstBatch, error) {
	b := &FirstBatch{l: l}
	if len(evs) == 0 {
		return b, nil
	}
	out := make([]Entry, len(evs))
	for i, ev := range evs {
		if !ev.Type.Declared() {
			return nil, domainerr.New("INVARIANT_VIOLATION", "undeclared FinalityLog event type", map[string]any{"event_type": string(ev.Type)})
		}
		if ev.StateTo == "" {
			return nil, domainerr.New("MISSING_FIELD", "FinalityLog entry needs state_to", map[string]any{"field": "state_to", "event_type": string(ev.Type)})
		}
		if ev.TxID == GlobalChain || ev.GTID == GlobalChain || (ev.TxID == "" && ev.GTID == "") {
			return nil, domainerr.New("INVALID_REQUEST", "a first entry of a new chain needs a txid or gtid other than 'GLOBAL'", nil)
		}
		payload, err := payloadJSON(ev.Payload)
		if err != nil {
			return nil, domainerr.Wrap("INVALID_REQUEST", err, "FinalityLog payload is not JSON-encodable", map[string]any{"event_type": string(ev.Type)})
		}
		out[i] = Entry{LogID: l.newID(), TxID: ev.TxID, GTID: ev.GTID, EventType: ev.Type, StateFrom: ev.StateFrom,
			StateTo: ev.StateTo, PayloadJSON: payload, PrevHash: Genesis}
	}
	first, err := store.NextFinalitySeqs(ctx, tx, len(evs))
	if err != nil {
		return nil, err
	}
	now := clock.Stamp(l.clock.Now())
	for i := range out {
		out[i].EventSeq, out[i].OccurredAt = first+int64(i), now
		out[i].EntryHash = ComputeHash(Genesis, out[i])
	}
	b.out = out
	if l.AfterAppendFirst != nil {
		b.after = l.AfterAppendFirst(ctx, out)
	}
	return b, nil
}

// Entries are the batch's entries, in evs order.
func (b *FirstBatch) Entries() []Entry { return b.out }

// InsertTx writes the batch's entries inside tx by multi-row INSERTs.
func (b *FirstBatch) InsertTx(ctx context.Context, tx *store.Tx) error {
	args := make([]any, 0, batchRows*len(entryColumns))
	for lo := 0; lo < len(b.out); lo += batchRows {
		part := b.out[lo:min(lo+batchRows, len(b.out))]
		args = args[:0]
		for _, e := range part {
			args = append(args, e.LogID, nullable(e.TxID), nullable(e.GTID), string(e.EventType), nullable(e.StateFrom), e.StateTo,
				e.PayloadJSON, e.EventSeq, e.OccurredAt, e.PrevHash, e.EntryHash)
		}
		if _, err := tx.ExecContext(ctx, store.InsertRows("FinalityLog", entryColumns, len(part)), args...); err != nil {
			if store.IsUniqueViolation(err) {
				return domainerr.Wrap("CONCURRENCY_CONFLICT", err, "FinalityLog chain fork refused: a chain of the batch already has an entry",
					map[string]any{"chain_id": part[0].ChainID()})
			}
			return fmt.Errorf("finality: insert %d first entries: %w", len(part), err)
		}
	}
	for _, e := range b.out {
		tx.SetMemo(tipMemo(e.ChainID()), chainTipMemo{e.LogID, e.EntryHash})
	}
	return nil
}

// FinishTx runs the after-append hook for the batch's entries inside tx
// (AfterAppendFirst's function, else AfterAppend per entry), after
// InsertTx; call it before the transaction ends.
func (b *FirstBatch) FinishTx(ctx context.Context, tx *store.Tx) error {
	if b.after != nil {
		if err := b.after(ctx, tx); err != nil {
			return fmt.Errorf("finality: after-append hook for %d first entries: %w", len(b.out), err)
		}
	} else if b.l.AfterAppend != nil {
		for _, e := range b.out {
			if err := b.l.AfterAppend(ctx, tx, e); err != nil {
				return fmt.Errorf("finality: after-append hook for %s: %w", e.LogID, err)
			}
		}
	}
	return nil
}
