package finality

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/store"
)

// BreakReason says why a chain fails verification (spec 003).
type BreakReason string

// The break reasons, checked in this order for each entry.
const (
	// LegacyUnchainedEntry: the entry has no prev_hash or no entry_hash.
	LegacyUnchainedEntry BreakReason = "LEGACY_UNCHAINED_ENTRY"
	// PrevHashMismatch: prev_hash is not the previous entry's entry_hash
	// (or 'GENESIS' for the first entry): an entry was removed, inserted
	// or reordered, or prev_hash was edited.
	PrevHashMismatch BreakReason = "PREV_HASH_MISMATCH"
	// EntryHashMismatch: recomputing the hash over the stored fields does
	// not give entry_hash: a field of this entry was edited.
	EntryHashMismatch BreakReason = "ENTRY_HASH_MISMATCH"
)

// Break is the first broken entry of a chain.
type Break struct {
	ChainID  string
	LogID    string
	EventSeq int64
	Position int // 0-based position in the chain (event_seq order)
	Reason   BreakReason
	Expected string // the hash verification expected
	Actual   string // the hash stored
}

// ChainReport is the result of verifying one chain.
type ChainReport struct {
	ChainID string
	Entries int
	Break   *Break // nil when the chain is intact
}

// OK reports whether the chain verified.
func (r ChainReport) OK() bool { return r.Break == nil }

// Report is the result of verifying every chain.
type Report struct {
	Chains  int
	Entries int
	Breaks  []Break // the first broken entry of each broken chain, in event_seq order
}

// OK reports whether every chain verified.
func (r Report) OK() bool { return len(r.Breaks) == 0 }

type row struct {
	e            Entry
	prev, hash   sql.NullString
	txid, gtid   sql.NullString
	from         sql.NullString
	eventTypeRaw string
}

func (r *row) dest() []any {
	return []any{&r.e.LogID, &r.txid, &r.gtid, &r.eventTypeRaw, &r.from, &r.e.StateTo,
		&r.e.PayloadJSON, &r.e.EventSeq, &r.e.OccurredAt, &r.prev, &r.hash}
}

func (r *row) entry() Entry {
	e := r.e
	e.TxID, e.GTID, e.StateFrom = r.txid.String, r.gtid.String, r.from.String
	e.EventType = EventType(r.eventTypeRaw)
	e.PrevHash, e.EntryHash = r.prev.String, r.hash.String
	return e
}

const selectCols = `SELECT log_id, txid, gtid, event_type, state_from, state_to, payload_json, event_seq, occurred_at, prev_hash, entry_hash FROM FinalityLog`

// chainState checks one chain entry by entry.
type chainState struct {
	id     string
	n      int
	tip    string
	broken *Break
}

func (c *chainState) check(r *row) {
	if c.broken != nil {
		return
	}
	e := r.entry()
	pos := c.n
	c.n++
	expectedPrev := Genesis
	if pos > 0 {
		expectedPrev = c.tip
	}
	switch {
	case !r.prev.Valid || !r.hash.Valid:
		c.broken = &Break{ChainID: c.id, LogID: e.LogID, EventSeq: e.EventSeq, Position: pos, Reason: LegacyUnchainedEntry}
	case e.PrevHash != expectedPrev:
		c.broken = &Break{ChainID: c.id, LogID: e.LogID, EventSeq: e.EventSeq, Position: pos, Reason: PrevHashMismatch, Expected: expectedPrev, Actual: e.PrevHash}
	default:
		if h := ComputeHash(e.PrevHash, e); h != e.EntryHash {
			c.broken = &Break{ChainID: c.id, LogID: e.LogID, EventSeq: e.EventSeq, Position: pos, Reason: EntryHashMismatch, Expected: h, Actual: e.EntryHash}
		}
	}
	c.tip = e.EntryHash
}

// VerifyChain recomputes chainID's chain (a txid, a gtid or "GLOBAL") in
// event_seq order and reports the first broken entry. A chain with no
// entries verifies with Entries 0.
func VerifyChain(ctx context.Context, db *store.DB, chainID string) (ChainReport, error) {
	var rep ChainReport
	err := db.Read(ctx, func(tx *store.Tx) error {
		var err error
		rep, err = VerifyChainInTx(ctx, tx, chainID)
		return err
	})
	return rep, err
}

// VerifyChainInTx is VerifyChain inside an existing transaction.
func VerifyChainInTx(ctx context.Context, tx *store.Tx, chainID string) (ChainReport, error) {
	q := selectCols + " WHERE txid = ?1 OR (txid IS NULL AND gtid = ?1) ORDER BY event_seq"
	args := []any{chainID}
	if chainID == GlobalChain {
		q, args = selectCols+store.IndexedBy("idx_fl_global_seq")+" WHERE txid IS NULL AND gtid IS NULL ORDER BY event_seq", nil
	}
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return ChainReport{}, fmt.Errorf("finality: read chain %s: %w", chainID, err)
	}
	defer rows.Close()
	c := &chainState{id: chainID}
	var r row
	for rows.Next() {
		if err := rows.Scan(r.dest()...); err != nil {
			return ChainReport{}, fmt.Errorf("finality: scan chain %s: %w", chainID, err)
		}
		c.check(&r)
	}
	if err := rows.Err(); err != nil {
		return ChainReport{}, fmt.Errorf("finality: read chain %s: %w", chainID, err)
	}
	return ChainReport{ChainID: chainID, Entries: c.n, Break: c.broken}, nil
}

// VerifyAll is the full audit: it verifies every chain over the whole log
// (each entry's hash and its link to the previous entry of its chain) in
// Workers() parallel slices of the event_seq range, each keeping only its
// chains' running tips in memory.
func VerifyAll(ctx context.Context, db *store.DB) (Report, error) {
	var lo, hi sql.NullInt64
	if err := db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT MIN(event_seq), MAX(event_seq) FROM FinalityLog`).Scan(&lo, &hi)
	}); err != nil {
		return Report{}, fmt.Errorf("finality: log bounds: %w", err)
	}
	if !hi.Valid {
		return Report{}, nil
	}
	rep, _, err := verifyRange(ctx, db, lo.Int64-1, hi.Int64, Workers(), false)
	return rep, err
}
