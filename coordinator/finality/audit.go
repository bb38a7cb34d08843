package finality

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Break reasons of the range audits (VerifySince).
const (
	// SeqGap: event_seq values are missing from the audited range (or
	// after the last entry, up to the last value FinalitySeq allocated):
	// entries were deleted. event_seq is allocated in the appending
	// transaction, so it has no gaps of its own.
	SeqGap BreakReason = "SEQ_GAP"
	// AnchorMismatch: the stored audit anchor does not match the log (its
	// entry was edited or removed) or the anchor rows were edited.
	AnchorMismatch BreakReason = "ANCHOR_MISMATCH"
)

// Chain ids of the breaks that belong to no transaction chain.
const (
	LogChain    = "(log)"    // a SeqGap
	AnchorChain = "(anchor)" // an AnchorMismatch
)

// Anchor is a point up to which the log was audited clean: a row of
// FinalityAuditAnchors.
type Anchor struct {
	Seq        int64 // event_seq of the last entry audited
	LogID      string
	EntryHash  string
	PrevSeq    int64 // the previous anchor's Seq, 0 for the first
	Entries    int64
	AuditedAt  string
	AnchorHash string
}

// anchorHash chains an anchor row after the previous row's anchor_hash.
func anchorHash(prev string, a Anchor) string {
	s := strings.Join([]string{prev, strconv.FormatInt(a.Seq, 10), a.LogID, a.EntryHash,
		strconv.FormatInt(a.Entries, 10), a.AuditedAt}, "|")
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Audit is the result of VerifySince.
type Audit struct {
	Report
	From, To int64   // the entries with From < event_seq <= To were verified
	Anchor   *Anchor // the anchor the audit started after (nil: from the start)
	Full     bool    // verified from the start: no anchor, or the anchor failed its check
	// Next is the anchor to record when the audit is clean and verified
	// at least one entry (nil otherwise).
	Next *Anchor
}

// Workers is how many goroutines a range audit uses: both cores of the
// machine when it has them (GOMAXPROCS, at most 2).
func Workers() int { return max(1, min(2, runtime.GOMAXPROCS(0))) }

// VerifySince is the nightly (incremental) audit. It checks the stored
// anchors first: every FinalityAuditAnchors row recomputes its
// anchor_hash over the previous row's, and the newest anchor's entry is in
// the log with the anchored log_id and entry_hash, which recomputes from
// the entry's fields. It then verifies the entries appended after the
// anchor (every entry after event_seq 0 when there is none, or when the
// anchor failed: then the failure is a break and the whole log is
// verified): each entry's hash, each entry's link to the previous entry of
// its chain (looked up before the range when the chain started earlier)
// and that no event_seq is missing, in workers parallel slices of the
// range. Tampering before the anchor that leaves the anchor entry intact
// is the full audit's to find (VerifyAll).
func VerifySince(ctx context.Context, db *store.DB, workers int) (Audit, error) {
	var out Audit
	var anchorBreak *Break
	var hi, next int64
	err := db.Read(ctx, func(tx *store.Tx) error {
		var err error
		if out.Anchor, anchorBreak, err = checkAnchors(ctx, tx); err != nil {
			return err
		}
		var maxSeq sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(event_seq) FROM FinalityLog`).Scan(&maxSeq); err != nil {
			return fmt.Errorf("finality: audit bounds: %w", err)
		}
		if err := tx.QueryRowContext(ctx, `SELECT next_seq FROM FinalitySeq WHERE id = 1`).Scan(&next); err != nil {
			return fmt.Errorf("finality: audit bounds: %w", err)
		}
		hi = maxSeq.Int64
		return nil
	})
	if err != nil {
		return out, err
	}
	if out.Anchor == nil || anchorBreak != nil {
		out.Full = true
	} else {
		out.From = out.Anchor.Seq
	}
	out.To = hi
	rep, last, err := verifyRange(ctx, db, out.From, hi, workers, true)
	if err != nil {
		return out, err
	}
	if next > hi { // allocated values after the last entry: the tail was deleted
		rep.Breaks = append(rep.Breaks, Break{ChainID: LogChain, EventSeq: hi + 1, Reason: SeqGap,
			Expected: fmt.Sprintf("entries up to event_seq %d", next), Actual: fmt.Sprintf("last entry at %d", hi)})
	}
	if anchorBreak != nil {
		rep.Breaks = append([]Break{*anchorBreak}, rep.Breaks...)
	}
	out.Report = rep
	if rep.OK() && last != nil && hi > out.From {
		out.Next = &Anchor{Seq: last.EventSeq, LogID: last.LogID, EntryHash: last.EntryHash, Entries: int64(rep.Entries)}
	}
	return out, nil
}

// RecordAnchorTx stores a as the newest anchor inside tx, chained after
// the newest stored one, which must still be prev (nil: none): a guarded
// write, so two audits that raced record one anchor. It reports whether a
// was recorded.
func RecordAnchorTx(ctx context.Context, tx *store.Tx, clk clock.Clock, prev *Anchor, a Anchor) (bool, error) {
	var seq sql.NullInt64
	var prevHash sql.NullString
	if err := tx.QueryRowContext(ctx, `SELECT anchor_seq, anchor_hash FROM FinalityAuditAnchors ORDER BY anchor_seq DESC LIMIT 1`).
		Scan(&seq, &prevHash); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("finality: read anchor: %w", err)
	}
	switch {
	case prev == nil && seq.Valid, prev != nil && (!seq.Valid || seq.Int64 != prev.Seq || prevHash.String != prev.AnchorHash):
		return false, nil // another audit moved the anchor meanwhile
	}
	var prevSeq any
	if prev != nil {
		a.PrevSeq, prevSeq = prev.Seq, prev.Seq
	}
	a.AuditedAt = clock.Stamp(clk.Now())
	a.AnchorHash = anchorHash(prevHash.String, a)
	ok, err := store.Applied(tx.ExecContext(ctx, `INSERT OR IGNORE INTO FinalityAuditAnchors
		(anchor_seq, log_id, entry_hash, prev_anchor_seq, entries, audited_at, anchor_hash) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		a.Seq, a.LogID, a.EntryHash, prevSeq, a.Entries, a.AuditedAt, a.AnchorHash))
	if err != nil {
		return false, fmt.Errorf("finality: record anchor: %w", err)
	}
	return ok, nil
}

// VerifyAnchors checks the stored anchors as VerifySince does and returns
// the newest (nil: none) and the break when they do not verify.
func VerifyAnchors(ctx context.Context, db *store.DB) (*Anchor, *Break, error) {
	var a *Anchor
	var b *Break
	err := db.Read(ctx, func(tx *store.Tx) error {
		var err error
		a, b, err = checkAnchors(ctx, tx)
		return err
	})
	return a, b, err
}

func checkAnchors(ctx context.Context, tx *store.Tx) (*Anchor, *Break, error) {
	rows, err := tx.QueryContext(ctx, `SELECT anchor_seq, log_id, entry_hash, COALESCE(prev_anchor_seq, 0), entries, audited_at, anchor_hash
		FROM FinalityAuditAnchors ORDER BY anchor_seq`)
	if err != nil {
		return nil, nil, fmt.Errorf("finality: read anchors: %w", err)
	}
	defer rows.Close()
	var last *Anchor
	broken := func(a Anchor, why, expected, actual string) *Break {
		return &Break{ChainID: AnchorChain, LogID: a.LogID, EventSeq: a.Seq, Reason: AnchorMismatch,
			Expected: expected, Actual: why + ": " + actual}
	}
	var bad *Break
	for rows.Next() {
		var a Anchor
		if err := rows.Scan(&a.Seq, &a.LogID, &a.EntryHash, &a.PrevSeq, &a.Entries, &a.AuditedAt, &a.AnchorHash); err != nil {
			return nil, nil, fmt.Errorf("finality: read anchors: %w", err)
		}
		prevHash, prevSeq := "", int64(0)
		if last != nil {
			prevHash, prevSeq = last.AnchorHash, last.Seq
		}
		if bad == nil && a.PrevSeq != prevSeq {
			bad = broken(a, "anchor row not chained to the previous one", strconv.FormatInt(prevSeq, 10), strconv.FormatInt(a.PrevSeq, 10))
		}
		if h := anchorHash(prevHash, a); bad == nil && h != a.AnchorHash {
			bad = broken(a, "anchor row edited", h, a.AnchorHash)
		}
		last = &a
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("finality: read anchors: %w", err)
	}
	if last == nil || bad != nil {
		return last, bad, nil
	}
	var r row
	err = tx.QueryRowContext(ctx, selectCols+" WHERE event_seq = ?", last.Seq).Scan(r.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return last, broken(*last, "anchored entry missing from the log", last.LogID, "no entry at event_seq "+strconv.FormatInt(last.Seq, 10)), nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("finality: read anchored entry: %w", err)
	}
	e := r.entry()
	switch {
	case e.LogID != last.LogID:
		return last, broken(*last, "anchored entry replaced", last.LogID, e.LogID), nil
	case e.EntryHash != last.EntryHash:
		return last, broken(*last, "anchored entry_hash changed", last.EntryHash, e.EntryHash), nil
	case !r.prev.Valid || ComputeHash(e.PrevHash, e) != e.EntryHash:
		return last, broken(*last, "anchored entry edited", e.EntryHash, ComputeHash(e.PrevHash, e)), nil
	}
	return last, nil, nil
}

// pendingLink is the first entry of a chain in a slice whose prev_hash
// names an entry before the slice: checked by a lookup afterwards.
type pendingLink struct {
	chain, logID string
	txChain      bool // a txid chain (else a gtid chain or GLOBAL)
	seq          int64
	prev         string
}

type slice struct {
	lo, hi  int64
	entries int
	chains  int // chains that start in the slice (GENESIS or unchained)
	breaks  map[string]Break
	pending []pendingLink
	last    *Entry
}

// verifyRange verifies the entries with lo < event_seq <= hi in workers
// slices of the range, each in its own read transaction (the log is
// append-only and event_seq follows commit order, so every entry up to hi
// is there for each of them).
func verifyRange(ctx context.Context, db *store.DB, lo, hi int64, workers int, gaps bool) (Report, *Entry, error) {
	var rep Report
	if hi <= lo {
		return rep, nil, nil
	}
	workers = max(1, min(workers, int(hi-lo)))
	slices := make([]*slice, workers)
	step := (hi - lo + int64(workers) - 1) / int64(workers)
	for i := range slices {
		slices[i] = &slice{lo: lo + int64(i)*step, hi: min(hi, lo+int64(i+1)*step), breaks: map[string]Break{}}
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i, s := range slices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.verify(ctx, db, gaps)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return rep, nil, err
	}
	first := map[string]Break{}
	keep := func(b Break) {
		if old, ok := first[b.ChainID]; !ok || b.EventSeq < old.EventSeq {
			first[b.ChainID] = b
		}
	}
	err := db.Read(ctx, func(tx *store.Tx) error {
		// The links first: at the same entry, a wrong prev_hash is the
		// cause of the hash mismatch the slice saw (prev is hashed).
		for _, s := range slices {
			rep.Entries += s.entries
			rep.Chains += s.chains
			for _, p := range s.pending {
				seq, hash, found, err := predecessor(ctx, tx, p, p.seq)
				if err != nil {
					return err
				}
				if !found || seq <= lo {
					rep.Chains++ // the chain's first entry in the range
				}
				expected := Genesis
				if found {
					expected = hash
				}
				if p.prev != expected {
					keep(Break{ChainID: p.chain, LogID: p.logID, EventSeq: p.seq, Reason: PrevHashMismatch, Expected: expected, Actual: p.prev})
				}
			}
		}
		for _, s := range slices {
			for _, b := range s.breaks {
				keep(b)
			}
		}
		for _, b := range first {
			if b.ChainID == LogChain || b.ChainID == AnchorChain {
				continue
			}
			n, err := chainPosition(ctx, tx, b.ChainID, b.EventSeq)
			if err != nil {
				return err
			}
			b.Position = n
			first[b.ChainID] = b
		}
		return nil
	})
	if err != nil {
		return rep, nil, err
	}
	for _, b := range first {
		rep.Breaks = append(rep.Breaks, b)
	}
	sort.Slice(rep.Breaks, func(i, j int) bool { return rep.Breaks[i].EventSeq < rep.Breaks[j].EventSeq })
	var last *Entry
	for _, s := range slices {
		if s.last != nil {
			last = s.last
		}
	}
	return rep, last, nil
}

func (s *slice) verify(ctx context.Context, db *store.DB, gaps bool) error {
	return db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, selectCols+" WHERE event_seq > ? AND event_seq <= ? ORDER BY event_seq", s.lo, s.hi)
		if err != nil {
			return fmt.Errorf("finality: read log: %w", err)
		}
		defer rows.Close()
		tips := map[string]tip{}
		want := s.lo + 1
		gap := func(from, to int64) {
			if gaps && from <= to {
				if _, ok := s.breaks[LogChain]; !ok {
					s.breaks[LogChain] = Break{ChainID: LogChain, EventSeq: from, Reason: SeqGap,
						Expected: fmt.Sprintf("event_seq %d", from), Actual: fmt.Sprintf("next entry at %d", to+1)}
				}
			}
		}
		var r row
		var buf []byte
		for rows.Next() {
			if err := rows.Scan(r.dest()...); err != nil {
				return fmt.Errorf("finality: scan log: %w", err)
			}
			gap(want, r.e.EventSeq-1)
			want = r.e.EventSeq + 1
			id := ChainIDOf(r.txid.String, r.gtid.String)
			t, seen := tips[id]
			if !seen {
				if r.prev.Valid && r.prev.String != Genesis && r.hash.Valid {
					// Continues a chain that started before the slice:
					// its link is checked by a lookup afterwards.
					s.pending = append(s.pending, pendingLink{chain: id, logID: r.e.LogID, txChain: r.txid.String != "",
						seq: r.e.EventSeq, prev: r.prev.String})
					t.n, t.tip = 1, decodeHash(r.prev.String)
				} else {
					s.chains++
				}
			}
			if !t.broken {
				var b *Break
				b, buf = t.check(&r, id, buf)
				if b != nil {
					t.broken = true
					s.breaks[id] = *b
				}
			}
			t.n++
			tips[id] = t
			s.entries++
			if r.e.EventSeq == s.hi {
				e := r.entry()
				s.last = &e
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("finality: read log: %w", err)
		}
		gap(want, s.hi)
		return nil
	})
}

// predecessor is the entry of p's chain just before event_seq seq: its
// event_seq and entry_hash, found false when there is none.
func predecessor(ctx context.Context, tx *store.Tx, p pendingLink, seq int64) (int64, string, bool, error) {
	q, args := " WHERE txid = ?1 AND event_seq < ?2", []any{p.chain, seq}
	switch {
	case p.chain == GlobalChain:
		q, args = store.IndexedBy("idx_fl_global_seq")+" WHERE txid IS NULL AND gtid IS NULL AND event_seq < ?1", []any{seq}
	case !p.txChain:
		q = " WHERE txid IS NULL AND gtid = ?1 AND event_seq < ?2"
	}
	var s int64
	var h sql.NullString
	err := tx.QueryRowContext(ctx, "SELECT event_seq, entry_hash FROM FinalityLog"+q+" ORDER BY event_seq DESC LIMIT 1", args...).Scan(&s, &h)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", false, nil
	}
	if err != nil {
		return 0, "", false, fmt.Errorf("finality: previous entry of chain %s: %w", p.chain, err)
	}
	return s, h.String, true, nil
}

// chainPosition is how many entries of chain come before event_seq seq.
func chainPosition(ctx context.Context, tx *store.Tx, chain string, seq int64) (int, error) {
	q, args := " WHERE (txid = ?1 OR (txid IS NULL AND gtid = ?1)) AND event_seq < ?2", []any{chain, seq}
	if chain == GlobalChain {
		q, args = store.IndexedBy("idx_fl_global_seq")+" WHERE txid IS NULL AND gtid IS NULL AND event_seq < ?1", []any{seq}
	}
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM FinalityLog"+q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("finality: position in chain %s: %w", chain, err)
	}
	return n, nil
}

// tip is a chain's running state in a slice: its last entry_hash (as
// bytes: a slice of a million new chains holds a million of them), how
// many entries were checked, whether it broke.
type tip struct {
	tip    [sha256.Size]byte
	n      int32
	broken bool
}

func decodeHash(s string) [sha256.Size]byte {
	var h [sha256.Size]byte
	if len(s) == hex.EncodedLen(sha256.Size) {
		_, _ = hex.Decode(h[:], []byte(s))
	}
	return h
}

// check is chainState.check without allocating: the same rules, in the
// same order, comparing the hex texts as stored.
func (t *tip) check(r *row, chain string, buf []byte) (*Break, []byte) {
	e := &r.e
	pos := int(t.n)
	brk := func(reason BreakReason, expected, actual string) *Break {
		return &Break{ChainID: chain, LogID: e.LogID, EventSeq: e.EventSeq, Position: pos, Reason: reason, Expected: expected, Actual: actual}
	}
	if !r.prev.Valid || !r.hash.Valid {
		return brk(LegacyUnchainedEntry, "", ""), buf
	}
	var enc [2 * sha256.Size]byte
	if pos == 0 {
		if r.prev.String != Genesis {
			return brk(PrevHashMismatch, Genesis, r.prev.String), buf
		}
	} else {
		hex.Encode(enc[:], t.tip[:])
		if r.prev.String != string(enc[:]) {
			return brk(PrevHashMismatch, string(enc[:]), r.prev.String), buf
		}
	}
	buf = appendHashInput(buf[:0], r)
	sum := sha256.Sum256(buf)
	hex.Encode(enc[:], sum[:])
	if r.hash.String != string(enc[:]) {
		return brk(EntryHashMismatch, string(enc[:]), r.hash.String), buf
	}
	t.tip = sum
	return nil, buf
}

// appendHashInput appends what ComputeHash hashes for the scanned row.
func appendHashInput(b []byte, r *row) []byte {
	for i, f := range [...]string{r.prev.String, r.e.LogID, r.txid.String, r.gtid.String, r.eventTypeRaw, r.from.String, r.e.StateTo, r.e.PayloadJSON} {
		if i > 0 {
			b = append(b, '|')
		}
		b = append(b, f...)
	}
	b = append(b, '|')
	b = strconv.AppendInt(b, r.e.EventSeq, 10)
	b = append(b, '|')
	return append(b, r.e.OccurredAt...)
}
