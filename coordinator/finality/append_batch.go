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
// of evs may be written.
func (l *Log) AppendFirstTx(ctx context.Context, tx *store.Tx, evs []Event) ([]Entry, error) {
	if len(evs) == 0 {
		return nil, nil
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
	var after func(ctx context.Context, tx *store.Tx) error
	if l.AfterAppendFirst != nil {
		after = l.AfterAppendFirst(ctx, out)
	}
	args := make([]any, 0, batchRows*len(entryColumns))
	for lo := 0; lo < len(out); lo += batchRows {
		part := out[lo:min(lo+batchRows, len(out))]
		args = args[:0]
		for _, e := range part {
			args = append(args, e.LogID, nullable(e.TxID), nullable(e.GTID), string(e.EventType), nullable(e.StateFrom), e.StateTo,
				e.PayloadJSON, e.EventSeq, e.OccurredAt, e.PrevHash, e.EntryHash)
		}
		if _, err := tx.ExecContext(ctx, store.InsertRows("FinalityLog", entryColumns, len(part)), args...); err != nil {
			if store.IsUniqueViolation(err) {
				return nil, domainerr.Wrap("CONCURRENCY_CONFLICT", err, "FinalityLog chain fork refused: a chain of the batch already has an entry",
					map[string]any{"chain_id": part[0].ChainID()})
			}
			return nil, fmt.Errorf("finality: insert %d first entries: %w", len(part), err)
		}
	}
	for _, e := range out {
		tx.SetMemo(tipMemo(e.ChainID()), chainTipMemo{e.LogID, e.EntryHash})
	}
	if after != nil {
		if err := after(ctx, tx); err != nil {
			return nil, fmt.Errorf("finality: after-append hook for %d first entries: %w", len(out), err)
		}
	} else if l.AfterAppend != nil {
		for _, e := range out {
			if err := l.AfterAppend(ctx, tx, e); err != nil {
				return nil, fmt.Errorf("finality: after-append hook for %s: %w", e.LogID, err)
			}
		}
	}
	return out, nil
}
