package finality

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

var t0 = time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)

func openDB(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.OpenCoordinator(context.Background(), filepath.Join(t.TempDir(), "zc.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func appendOne(t testing.TB, db *store.DB, l *Log, ev Event) Entry {
	t.Helper()
	var e Entry
	if err := db.Write(context.Background(), func(tx *store.Tx) error {
		var err error
		e, err = l.Append(context.Background(), tx, ev)
		return err
	}); err != nil {
		t.Fatalf("append %+v: %v", ev, err)
	}
	return e
}

// Golden values computed outside Go:
//
//	printf '%s' 'GENESIS|L1|TX-1||PaymentInitiated||RECEIVED|{"a":1}|1|2026-01-01T00:00:00Z' | sha256sum
func TestComputeHashMatchesTheContract(t *testing.T) {
	cases := []struct {
		prev string
		e    Entry
		want string
	}{
		{"GENESIS", Entry{LogID: "L1", TxID: "TX-1", EventType: PaymentInitiated, StateTo: "RECEIVED", PayloadJSON: `{"a":1}`, EventSeq: 1, OccurredAt: "2026-01-01T00:00:00Z"},
			"22cd45c5d94d6f9e6dd1e97aae820a4f1529f75f4980ad5822dc75989a45a1d4"},
		{"abc", Entry{LogID: "L2", EventType: SystemBcpActivated, StateFrom: "NORMAL", StateTo: "BCP_READONLY", PayloadJSON: `{}`, EventSeq: 12345678901, OccurredAt: "2026-01-01T00:00:00.5Z",
			PrevHash: "ignored", EntryHash: "ignored"},
			"8406c479519ec3777f4017fd1cd217afee41862a66005f7e7a410fd14d925595"},
	}
	for _, c := range cases {
		if got := ComputeHash(c.prev, c.e); got != c.want {
			t.Errorf("ComputeHash(%q, %+v) = %s, want %s", c.prev, c.e, got, c.want)
		}
	}
}

func TestAppendChainsEntriesPerChain(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	clk := clock.NewManual(t0)
	l := New(clk)
	a1 := appendOne(t, db, l, Event{TxID: "TX-A", Type: PaymentInitiated, StateTo: "RECEIVED", Payload: map[string]any{"amount": 1000}})
	g1 := appendOne(t, db, l, Event{GTID: "GT-B", Type: GtidRegistered, StateTo: "GT_RECEIVED"})
	clk.Advance(time.Second)
	a2 := appendOne(t, db, l, Event{TxID: "TX-A", GTID: "GT-B", Type: PreCheckPassed, StateFrom: "RECEIVED", StateTo: "PRECHECKED"})
	s1 := appendOne(t, db, l, Event{Type: SystemBcpActivated, StateFrom: "NORMAL", StateTo: "BCP_READONLY"})
	g2 := appendOne(t, db, l, Event{GTID: "GT-B", Type: GtidDecided, StateFrom: "GT_RECEIVED", StateTo: "GT_PRECHECKED"})

	for i, c := range []struct {
		e          Entry
		chain      string
		prev       string
		seq        int64
		occurredAt string
	}{
		{a1, "TX-A", Genesis, 1, "2026-04-01T00:00:00.000000000Z"},
		{g1, "GT-B", Genesis, 2, "2026-04-01T00:00:00.000000000Z"},
		{a2, "TX-A", a1.EntryHash, 3, "2026-04-01T00:00:01.000000000Z"}, // txid wins over gtid
		{s1, "GLOBAL", Genesis, 4, "2026-04-01T00:00:01.000000000Z"},
		{g2, "GT-B", g1.EntryHash, 5, "2026-04-01T00:00:01.000000000Z"}, // a2 (with txid) is not on GT-B's chain
	} {
		if c.e.ChainID() != c.chain || c.e.PrevHash != c.prev || c.e.EventSeq != c.seq || c.e.OccurredAt != c.occurredAt {
			t.Errorf("entry %d: chain=%s prev=%.12s seq=%d at=%s, want %s %.12s %d %s", i, c.e.ChainID(), c.e.PrevHash, c.e.EventSeq, c.e.OccurredAt, c.chain, c.prev, c.seq, c.occurredAt)
		}
	}
	if a1.PayloadJSON != `{"amount":1000}` || g1.PayloadJSON != "{}" {
		t.Errorf("payloads %q %q", a1.PayloadJSON, g1.PayloadJSON)
	}

	// The stored row recomputes to its entry_hash with NULL -> "".
	var (
		logID, eventType, stateTo, payload, at, prev, hash string
		txid, gtid, from                                   sql.NullString
		seq                                                int64
	)
	if err := db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, "SELECT log_id, txid, gtid, event_type, state_from, state_to, payload_json, event_seq, occurred_at, prev_hash, entry_hash FROM FinalityLog WHERE log_id = ?", g1.LogID).
			Scan(&logID, &txid, &gtid, &eventType, &from, &stateTo, &payload, &seq, &at, &prev, &hash)
	}); err != nil {
		t.Fatal(err)
	}
	if txid.Valid || from.Valid {
		t.Errorf("empty txid/state_from stored as %v/%v, want NULL", txid, from)
	}
	recomputed := ComputeHash(prev, Entry{LogID: logID, TxID: txid.String, GTID: gtid.String, EventType: EventType(eventType), StateFrom: from.String, StateTo: stateTo, PayloadJSON: payload, EventSeq: seq, OccurredAt: at})
	if recomputed != hash || hash != g1.EntryHash {
		t.Errorf("stored hash %s, recomputed %s, returned %s", hash, recomputed, g1.EntryHash)
	}

	rep, err := VerifyAll(ctx, db)
	if err != nil || !rep.OK() || rep.Chains != 3 || rep.Entries != 5 {
		t.Fatalf("VerifyAll = %+v, %v; want 3 intact chains, 5 entries", rep, err)
	}
	for chain, n := range map[string]int{"TX-A": 2, "GT-B": 2, "GLOBAL": 1, "TX-NONE": 0} {
		r, err := VerifyChain(ctx, db, chain)
		if err != nil || !r.OK() || r.Entries != n {
			t.Errorf("VerifyChain(%s) = %+v, %v; want %d entries intact", chain, r, err, n)
		}
	}
}

func TestAppendRefusesBadEventsAndWritesNothing(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	l := New(clock.NewManual(t0))
	for _, c := range []struct {
		ev   Event
		code string
	}{
		{Event{TxID: "TX-1", Type: "PaymentDone", StateTo: "X"}, "INVARIANT_VIOLATION"},
		{Event{TxID: "TX-1", Type: Settled}, "MISSING_FIELD"},
		{Event{TxID: "GLOBAL", Type: Settled, StateTo: "SETTLED"}, "INVALID_REQUEST"},
		{Event{TxID: "TX-1", Type: Settled, StateTo: "SETTLED", Payload: json.RawMessage(`{"a":`)}, "INVALID_REQUEST"},
		{Event{TxID: "TX-1", Type: Settled, StateTo: "SETTLED", Payload: func() {}}, "INVALID_REQUEST"},
	} {
		err := db.Write(ctx, func(tx *store.Tx) error {
			_, err := l.Append(ctx, tx, c.ev)
			return err
		})
		if domainerr.Code(err) != c.code {
			t.Errorf("Append(%+v) error %v, want %s", c.ev, err, c.code)
		}
	}
	var rows, next int
	if err := db.Read(ctx, func(tx *store.Tx) error {
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM FinalityLog").Scan(&rows); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT next_seq FROM FinalitySeq").Scan(&next)
	}); err != nil {
		t.Fatal(err)
	}
	if rows != 0 || next != 0 {
		t.Fatalf("rows=%d next_seq=%d after refused appends, want 0 0", rows, next)
	}
}

func TestAfterAppendRunsInTheSameTransaction(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	l := New(clock.NewManual(t0))
	var seen []string
	fail := false
	l.AfterAppend = func(ctx context.Context, tx *store.Tx, e Entry) error {
		if fail {
			return errors.New("outbox full")
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO EntityStateLog (log_id, entity_type, entity_id, event_type, state_to, occurred_at) VALUES (?, 'OUTBOX', ?, ?, 'QUEUED', ?)`,
			"ESL-"+e.LogID, e.LogID, string(e.EventType), e.OccurredAt)
		seen = append(seen, e.LogID)
		return err
	}
	e := appendOne(t, db, l, Event{TxID: "TX-1", Type: PaymentInitiated, StateTo: "RECEIVED"})
	fail = true
	err := db.Write(ctx, func(tx *store.Tx) error {
		_, err := l.Append(ctx, tx, Event{TxID: "TX-1", Type: PreCheckPassed, StateFrom: "RECEIVED", StateTo: "PRECHECKED"})
		return err
	})
	if err == nil {
		t.Fatal("append with failing hook succeeded")
	}
	var logs, outbox int
	var entity string
	if err := db.Read(ctx, func(tx *store.Tx) error {
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM FinalityLog").Scan(&logs); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT COUNT(*), MAX(entity_id) FROM EntityStateLog").Scan(&outbox, &entity)
	}); err != nil {
		t.Fatal(err)
	}
	if logs != 1 || outbox != 1 || entity != e.LogID || len(seen) != 1 {
		t.Fatalf("logs=%d hook rows=%d (%s), want exactly the first entry %s and its hook row", logs, outbox, entity, e.LogID)
	}
}

// The partial unique indexes refuse a forked chain even if a writer
// bypassed Append (belt and braces for the single-writer serialisation).
func TestSchemaRefusesForkedChains(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	l := New(clock.NewManual(t0))
	tx1 := appendOne(t, db, l, Event{TxID: "TX-1", Type: PaymentInitiated, StateTo: "RECEIVED"})
	gt1 := appendOne(t, db, l, Event{GTID: "GT-1", Type: GtidRegistered, StateTo: "GT_RECEIVED"})
	gl1 := appendOne(t, db, l, Event{Type: SystemBcpActivated, StateTo: "BCP_READONLY"})
	for i, e := range []Entry{tx1, gt1, gl1} {
		err := db.Write(ctx, func(tx *store.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO FinalityLog (log_id, txid, gtid, event_type, state_to, payload_json, event_seq, occurred_at, prev_hash, entry_hash)
				VALUES (?, ?, ?, 'Settled', 'X', '{}', ?, 'x', ?, 'h')`, fmt.Sprint("fork-", i), nullable(e.TxID), nullable(e.GTID), 100+i, e.PrevHash)
			return err
		})
		if !store.IsUniqueViolation(err) {
			t.Errorf("fork of chain %s: err %v, want unique violation", e.ChainID(), err)
		}
	}
}

func errCode(err error) string { return domainerr.Code(err) }

// Log ids are version 7 UUIDs of the log's clock: ids of later instants
// sort after earlier ones (the log_id index is appended to, not written
// at random), and ids of one instant are still distinct.
func TestLogIDsAreTimeOrderedUUIDs(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 12, 3, 1, 2, 3, 0, time.UTC))
	l := New(clk)
	var ids []string
	seen := map[string]bool{}
	for i := range 2000 {
		if i%100 == 0 {
			clk.Advance(time.Millisecond)
		}
		id := l.newID()
		if len(id) != 36 || id[14] != '7' || !strings.ContainsRune("89ab", rune(id[19])) || seen[id] {
			t.Fatalf("id %d %q: not a fresh version 7 UUID", i, id)
		}
		seen[id] = true
		ids = append(ids, id)
	}
	for i := 100; i < len(ids); i += 100 {
		if ids[i-1] >= ids[i] {
			t.Fatalf("id of a later millisecond %s sorts before %s", ids[i], ids[i-1])
		}
	}
	if !strings.HasPrefix(ids[0], "01a2396c-") { // 2026-12-03T01:02:03.001Z in Unix ms, hex
		t.Fatalf("id %s does not start with the clock's milliseconds", ids[0])
	}
}
