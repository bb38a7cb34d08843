package finality

import (
	"context"
	"fmt"
	"testing"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
)

// buildTamperFixture writes three chains (TX, GTID, GLOBAL) of three
// entries each, interleaved with filler entries that are then deleted, so
// every real entry has free event_seq values on both sides.
func buildTamperFixture(t *testing.T) (*store.DB, map[string][]Entry) {
	t.Helper()
	ctx := context.Background()
	db := openDB(t)
	l := New(clock.NewManual(t0))
	chains := map[string][]Entry{}
	if err := db.Write(ctx, func(tx *store.Tx) error {
		for i := 0; i < 3; i++ {
			for _, ev := range []Event{
				{TxID: "TX-A", GTID: "", Type: PreCheckPassed, StateFrom: "S" + fmt.Sprint(i), StateTo: "S" + fmt.Sprint(i+1), Payload: map[string]int{"i": i}},
				{TxID: "FILL", Type: Settled, StateTo: "X"},
				{GTID: "GT-B", Type: GtidDecided, StateFrom: "G" + fmt.Sprint(i), StateTo: "G" + fmt.Sprint(i+1)},
				{TxID: "FILL", Type: Settled, StateTo: "X"},
				{Type: SystemBcpActivated, StateFrom: "NORMAL", StateTo: "BCP_READONLY", Payload: map[string]int{"i": i}},
				{TxID: "FILL", Type: Settled, StateTo: "X"},
			} {
				e, err := l.Append(ctx, tx, ev)
				if err != nil {
					return err
				}
				if e.ChainID() != "FILL" {
					chains[e.ChainID()] = append(chains[e.ChainID()], e)
				}
			}
		}
		_, err := tx.ExecContext(ctx, "DELETE FROM FinalityLog WHERE txid = 'FILL'")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return db, chains
}

func exec(t *testing.T, db *store.DB, q string, args ...any) {
	t.Helper()
	if err := db.Write(context.Background(), func(tx *store.Tx) error {
		_, err := tx.ExecContext(context.Background(), q, args...)
		return err
	}); err != nil {
		t.Fatalf("%s %v: %v", q, args, err)
	}
}

// Tampering with any field of any entry is found at that entry, with the
// reason the field implies; restoring the field makes the chain verify.
func TestVerifyDetectsTamperingOfEveryField(t *testing.T) {
	ctx := context.Background()
	db, chains := buildTamperFixture(t)
	type tamper struct {
		col    string
		value  func(e Entry) any
		reason BreakReason
	}
	tampers := []tamper{
		{"log_id", func(e Entry) any { return e.LogID + "x" }, EntryHashMismatch},
		{"event_type", func(e Entry) any { return string(Cancelled) }, EntryHashMismatch},
		{"state_from", func(e Entry) any { return "FORGED" }, EntryHashMismatch},
		{"state_to", func(e Entry) any { return "FORGED" }, EntryHashMismatch},
		{"payload_json", func(e Entry) any { return `{"amount":999999}` }, EntryHashMismatch},
		{"event_seq", func(e Entry) any { return e.EventSeq + 1 }, EntryHashMismatch}, // +1 keeps the order (fillers deleted)
		{"occurred_at", func(e Entry) any { return "2030-01-01T00:00:00.000000000Z" }, EntryHashMismatch},
		{"prev_hash", func(e Entry) any { return ComputeHash("forged", e) }, PrevHashMismatch},
		{"entry_hash", func(e Entry) any { return ComputeHash("forged", e) }, EntryHashMismatch},
		{"prev_hash", func(e Entry) any { return nil }, LegacyUnchainedEntry},
		{"entry_hash", func(e Entry) any { return nil }, LegacyUnchainedEntry},
	}
	for chainID, entries := range chains {
		for pos, e := range entries {
			// gtid (TX and GLOBAL entries) and txid (GT entries, which stay
			// on their chain only if txid is left NULL) are covered by the
			// hash too: setting gtid on a TX entry keeps it on its chain.
			ts := tampers
			if chainID == "TX-A" {
				ts = append(ts, tamper{"gtid", func(Entry) any { return "GT-FORGED" }, EntryHashMismatch})
			}
			for _, tm := range ts {
				name := fmt.Sprintf("%s[%d].%s=%v", chainID, pos, tm.col, tm.value(e))
				t.Run(name, func(t *testing.T) {
					exec(t, db, "UPDATE FinalityLog SET "+tm.col+" = ? WHERE log_id = ?", tm.value(e), e.LogID)
					key := e.LogID
					if tm.col == "log_id" {
						key = e.LogID + "x"
					}
					r, err := VerifyChain(ctx, db, chainID)
					if err != nil {
						t.Fatal(err)
					}
					if r.Break == nil || r.Break.Reason != tm.reason || r.Break.LogID != key || r.Break.Position != pos {
						t.Errorf("break = %+v, want %s at %s (position %d)", r.Break, tm.reason, key, pos)
					}
					all, err := VerifyAll(ctx, db)
					if err != nil || len(all.Breaks) != 1 || all.Breaks[0].LogID != key || all.Breaks[0].Reason != tm.reason {
						t.Errorf("VerifyAll breaks = %+v, %v; want only %s at %s", all.Breaks, err, tm.reason, key)
					}
					orig := map[string]any{"log_id": e.LogID, "event_type": string(e.EventType), "state_from": nullable(e.StateFrom), "state_to": e.StateTo,
						"payload_json": e.PayloadJSON, "event_seq": e.EventSeq, "occurred_at": e.OccurredAt, "prev_hash": e.PrevHash, "entry_hash": e.EntryHash, "gtid": nullable(e.GTID)}[tm.col]
					exec(t, db, "UPDATE FinalityLog SET "+tm.col+" = ? WHERE log_id = ?", orig, key)
					if r, err := VerifyChain(ctx, db, chainID); err != nil || !r.OK() {
						t.Fatalf("after restoring: %+v %v", r, err)
					}
				})
			}
		}
	}
}

func TestVerifyDetectsReorderAndRemoval(t *testing.T) {
	ctx := context.Background()
	for chainID := range map[string]bool{"TX-A": true, "GT-B": true, "GLOBAL": true} {
		for k := 0; k < 2; k++ {
			t.Run(fmt.Sprintf("swap %s[%d,%d]", chainID, k, k+1), func(t *testing.T) {
				db, chains := buildTamperFixture(t)
				a, b := chains[chainID][k], chains[chainID][k+1]
				exec(t, db, "UPDATE FinalityLog SET event_seq = -1 WHERE log_id = ?", a.LogID)
				exec(t, db, "UPDATE FinalityLog SET event_seq = ? WHERE log_id = ?", a.EventSeq, b.LogID)
				exec(t, db, "UPDATE FinalityLog SET event_seq = ? WHERE log_id = ?", b.EventSeq, a.LogID)
				r, err := VerifyChain(ctx, db, chainID)
				if err != nil || r.Break == nil || r.Break.Reason != PrevHashMismatch || r.Break.LogID != b.LogID || r.Break.Position != k {
					t.Fatalf("break = %+v %v; want PREV_HASH_MISMATCH at %s (moved to position %d)", r.Break, err, b.LogID, k)
				}
			})
			t.Run(fmt.Sprintf("delete %s[%d]", chainID, k), func(t *testing.T) {
				db, chains := buildTamperFixture(t)
				exec(t, db, "DELETE FROM FinalityLog WHERE log_id = ?", chains[chainID][k].LogID)
				next := chains[chainID][k+1]
				r, err := VerifyChain(ctx, db, chainID)
				if err != nil || r.Break == nil || r.Break.Reason != PrevHashMismatch || r.Break.LogID != next.LogID || r.Break.Expected == r.Break.Actual {
					t.Fatalf("break = %+v %v; want PREV_HASH_MISMATCH at %s", r.Break, err, next.LogID)
				}
			})
		}
	}
}

// Moving an entry to another chain (editing txid) breaks both chains.
func TestVerifyAllDetectsEntryMovedBetweenChains(t *testing.T) {
	ctx := context.Background()
	db, chains := buildTamperFixture(t)
	moved, next := chains["TX-A"][1], chains["TX-A"][2]
	exec(t, db, "UPDATE FinalityLog SET txid = 'TX-Z' WHERE log_id = ?", moved.LogID)
	rep, err := VerifyAll(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]BreakReason{}
	for _, b := range rep.Breaks {
		got[b.ChainID+"/"+b.LogID] = b.Reason
	}
	want := map[string]BreakReason{"TX-Z/" + moved.LogID: PrevHashMismatch, "TX-A/" + next.LogID: PrevHashMismatch}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("breaks %v, want %v", got, want)
	}
}

func TestAppendRefusesToExtendAnUnchainedTip(t *testing.T) {
	ctx := context.Background()
	db, chains := buildTamperFixture(t)
	exec(t, db, "UPDATE FinalityLog SET entry_hash = NULL WHERE log_id = ?", chains["TX-A"][2].LogID)
	l := New(clock.NewManual(t0))
	err := db.Write(ctx, func(tx *store.Tx) error {
		_, err := l.Append(ctx, tx, Event{TxID: "TX-A", Type: Settled, StateTo: "SETTLED"})
		return err
	})
	if got := errCode(err); got != "CHAIN_TAMPERED" {
		t.Fatalf("err %v, want CHAIN_TAMPERED", err)
	}
}
