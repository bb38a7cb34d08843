package finality

import (
	"context"
	"fmt"
	"testing"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
)

// anchoredLog appends a day of entries (TX, GTID and GLOBAL chains),
// audits and anchors it, then appends the next day's entries, which
// continue the same chains and start new ones. It returns the entries
// appended after the anchor, in event_seq order.
func anchoredLog(t *testing.T) (*store.DB, *Anchor, []Entry) {
	t.Helper()
	ctx := context.Background()
	db := openDB(t)
	clk := clock.NewManual(t0)
	l := New(clk)
	day := func(d int) []Entry {
		var out []Entry
		for i := 0; i < 4; i++ {
			for _, ev := range []Event{
				{TxID: fmt.Sprintf("TX-%d", i%3), Type: PreCheckPassed, StateTo: fmt.Sprintf("D%d-%d", d, i)},
				{TxID: fmt.Sprintf("TX-NEW-%d-%d", d, i), Type: PaymentInitiated, StateTo: "RECEIVED"},
				{GTID: "GT-1", Type: GtidDecided, StateTo: fmt.Sprintf("G%d-%d", d, i)},
				{Type: SystemBcpActivated, StateTo: "BCP_READONLY", Payload: map[string]int{"d": d, "i": i}},
			} {
				out = append(out, appendOne(t, db, l, ev))
			}
		}
		return out
	}
	day(1)
	a, err := VerifySince(ctx, db, 2)
	if err != nil || !a.OK() || !a.Full || a.Next == nil || a.Entries != 16 {
		t.Fatalf("first audit %+v %v", a, err)
	}
	if err := db.Write(ctx, func(tx *store.Tx) error {
		ok, err := RecordAnchorTx(ctx, tx, clk, a.Anchor, *a.Next)
		if err == nil && !ok {
			err = fmt.Errorf("anchor not recorded")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	anchor, b, err := VerifyAnchors(ctx, db)
	if err != nil || b != nil || anchor == nil || anchor.Seq != 16 {
		t.Fatalf("anchor %+v %+v %v", anchor, b, err)
	}
	return db, anchor, day(2)
}

// The nightly audit verifies only what was appended since its anchor, and
// catches a tampered entry, a deleted entry (inside a chain or the last of
// the log) and a reordered pair (same chain or two chains) after it.
func TestVerifySinceDetectsTamperingAfterTheAnchor(t *testing.T) {
	ctx := context.Background()
	db, anchor, _ := anchoredLog(t)
	a, err := VerifySince(ctx, db, 2)
	if err != nil || !a.OK() || a.Full || a.From != anchor.Seq || a.To != 32 || a.Entries != 16 || a.Next == nil || a.Next.Seq != 32 {
		t.Fatalf("clean audit %+v %v", a, err)
	}
	// after: per round i, TX-(i%3), TX-NEW-2-i, GT-1, GLOBAL.
	cases := []struct {
		name   string
		tamper func(t *testing.T, db *store.DB, after []Entry)
		chain  string
		logID  func(after []Entry) string
		reason BreakReason
	}{
		{"payload edited", func(t *testing.T, db *store.DB, after []Entry) {
			exec(t, db, `UPDATE FinalityLog SET payload_json = '{"amount":1}' WHERE log_id = ?`, after[0].LogID)
		}, "TX-0", func(after []Entry) string { return after[0].LogID }, EntryHashMismatch},
		{"entry deleted inside its chain", func(t *testing.T, db *store.DB, after []Entry) {
			exec(t, db, `DELETE FROM FinalityLog WHERE log_id = ?`, after[2].LogID) // GT-1, continued by after[6]
		}, "GT-1", func(after []Entry) string { return after[6].LogID }, PrevHashMismatch},
		{"last entry deleted", func(t *testing.T, db *store.DB, after []Entry) {
			exec(t, db, `DELETE FROM FinalityLog WHERE log_id = ?`, after[15].LogID)
		}, LogChain, nil, SeqGap},
		{"new chain's only entry deleted", func(t *testing.T, db *store.DB, after []Entry) {
			exec(t, db, `DELETE FROM FinalityLog WHERE log_id = ?`, after[5].LogID)
		}, LogChain, nil, SeqGap},
		{"pair of one chain reordered", func(t *testing.T, db *store.DB, after []Entry) {
			x, y := after[3], after[7] // GLOBAL, consecutive in the chain
			exec(t, db, `UPDATE FinalityLog SET event_seq = -1 WHERE log_id = ?`, x.LogID)
			exec(t, db, `UPDATE FinalityLog SET event_seq = ? WHERE log_id = ?`, x.EventSeq, y.LogID)
			exec(t, db, `UPDATE FinalityLog SET event_seq = ? WHERE log_id = ?`, y.EventSeq, x.LogID)
		}, GlobalChain, func(after []Entry) string { return after[7].LogID }, PrevHashMismatch},
		{"pair of two chains reordered", func(t *testing.T, db *store.DB, after []Entry) {
			x, y := after[8], after[9] // TX-2 and TX-NEW-2-2
			exec(t, db, `UPDATE FinalityLog SET event_seq = -1 WHERE log_id = ?`, x.LogID)
			exec(t, db, `UPDATE FinalityLog SET event_seq = ? WHERE log_id = ?`, x.EventSeq, y.LogID)
			exec(t, db, `UPDATE FinalityLog SET event_seq = ? WHERE log_id = ?`, y.EventSeq, x.LogID)
		}, "TX-2", func(after []Entry) string { return after[8].LogID }, EntryHashMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, _, after := anchoredLog(t)
			c.tamper(t, db, after)
			want := ""
			if c.logID != nil {
				want = c.logID(after)
			}
			a, err := VerifySince(ctx, db, 2)
			if err != nil {
				t.Fatal(err)
			}
			if a.Full {
				t.Errorf("the anchor should still hold: %+v", a)
			}
			found := false
			for _, b := range a.Breaks {
				if b.ChainID == c.chain && b.Reason == c.reason && (want == "" || b.LogID == want) {
					found = true
				}
			}
			if !found || a.Next != nil {
				t.Fatalf("breaks %+v (next anchor %+v), want %s on %s at %q", a.Breaks, a.Next, c.reason, c.chain, want)
			}
			// The full audit finds it too (except a deleted tip, which
			// leaves every chain intact: only the range audit's
			// event_seq check sees it).
			if c.reason != SeqGap {
				full, err := VerifyAll(ctx, db)
				if err != nil || full.OK() {
					t.Fatalf("full audit %+v %v", full, err)
				}
			}
		})
	}
}

// The anchor is protected: editing or removing the anchored entry, or
// editing the anchor row to skip ahead, is an ANCHOR_MISMATCH break and the
// audit falls back to verifying the whole log.
func TestVerifySinceProtectsTheAnchor(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		tamper func(t *testing.T, db *store.DB, anchor *Anchor, after []Entry)
	}{
		{"anchored entry edited", func(t *testing.T, db *store.DB, a *Anchor, _ []Entry) {
			exec(t, db, `UPDATE FinalityLog SET state_to = 'FORGED' WHERE log_id = ?`, a.LogID)
		}},
		{"anchored entry and its hash rewritten", func(t *testing.T, db *store.DB, a *Anchor, _ []Entry) {
			exec(t, db, `UPDATE FinalityLog SET state_to = 'FORGED', entry_hash = 'x' WHERE log_id = ?`, a.LogID)
		}},
		{"anchored entry deleted", func(t *testing.T, db *store.DB, a *Anchor, _ []Entry) {
			exec(t, db, `DELETE FROM FinalityLog WHERE log_id = ?`, a.LogID)
		}},
		{"anchor row moved past a tampered entry", func(t *testing.T, db *store.DB, a *Anchor, after []Entry) {
			exec(t, db, `UPDATE FinalityLog SET payload_json = '{"amount":1}' WHERE log_id = ?`, after[0].LogID)
			last := after[len(after)-1]
			exec(t, db, `UPDATE FinalityAuditAnchors SET anchor_seq = ?, log_id = ?, entry_hash = ?`, last.EventSeq, last.LogID, last.EntryHash)
		}},
		{"anchor row deleted and re-inserted with its hash recomputed from another prev", func(t *testing.T, db *store.DB, a *Anchor, after []Entry) {
			last := after[len(after)-1]
			forged := Anchor{Seq: last.EventSeq, LogID: last.LogID, EntryHash: last.EntryHash, PrevSeq: 7, Entries: 1, AuditedAt: a.AuditedAt}
			exec(t, db, `INSERT INTO FinalityAuditAnchors (anchor_seq, log_id, entry_hash, prev_anchor_seq, entries, audited_at, anchor_hash)
				VALUES (?, ?, ?, 7, 1, ?, ?)`, forged.Seq, forged.LogID, forged.EntryHash, forged.AuditedAt, anchorHash(a.AnchorHash, forged))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, anchor, after := anchoredLog(t)
			c.tamper(t, db, anchor, after)
			a, err := VerifySince(ctx, db, 2)
			if err != nil {
				t.Fatal(err)
			}
			if !a.Full || a.From != 0 || len(a.Breaks) == 0 || a.Breaks[0].Reason != AnchorMismatch || a.Next != nil {
				t.Fatalf("audit %+v, want an ANCHOR_MISMATCH break first and a full verification", a)
			}
		})
	}
}

// Tampering before the anchor (not at the anchored entry) is outside the
// nightly range; the full audit finds it.
func TestFullAuditFindsTamperingBeforeTheAnchor(t *testing.T) {
	ctx := context.Background()
	db, anchor, _ := anchoredLog(t)
	exec(t, db, `UPDATE FinalityLog SET state_to = 'FORGED' WHERE event_seq = ?`, anchor.Seq-5)
	if a, err := VerifySince(ctx, db, 2); err != nil || !a.OK() {
		t.Fatalf("nightly audit %+v %v", a, err)
	}
	full, err := VerifyAll(ctx, db)
	if err != nil || len(full.Breaks) != 1 || full.Breaks[0].EventSeq != anchor.Seq-5 || full.Breaks[0].Reason != EntryHashMismatch {
		t.Fatalf("full audit %+v %v", full, err)
	}
}

// Two audits racing to record their anchor record one.
func TestRecordAnchorIsGuarded(t *testing.T) {
	ctx := context.Background()
	db, _, _ := anchoredLog(t)
	a, err := VerifySince(ctx, db, 2)
	if err != nil || a.Next == nil {
		t.Fatal(a, err)
	}
	recorded := 0
	for i := 0; i < 2; i++ {
		if err := db.Write(ctx, func(tx *store.Tx) error {
			ok, err := RecordAnchorTx(ctx, tx, clock.NewManual(t0), a.Anchor, *a.Next)
			if ok {
				recorded++
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if recorded != 1 {
		t.Fatalf("recorded %d anchors", recorded)
	}
	if got, b, err := VerifyAnchors(ctx, db); err != nil || b != nil || got.Seq != 32 || got.PrevSeq != 16 {
		t.Fatalf("anchors %+v %+v %v", got, b, err)
	}
}
