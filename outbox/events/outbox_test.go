package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

var t0 = time.Date(2026, 4, 1, 1, 2, 3, 0, time.UTC)

func openDB(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.OpenCoordinator(context.Background(), filepath.Join(t.TempDir(), "zc.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func appendAll(t testing.TB, db *store.DB, l *finality.Log, evs ...finality.Event) []finality.Entry {
	t.Helper()
	var out []finality.Entry
	if err := db.Write(context.Background(), func(tx *store.Tx) error {
		out = out[:0]
		for _, ev := range evs {
			e, err := l.Append(context.Background(), tx, ev)
			if err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func count(t testing.TB, db *store.DB, table string) int {
	t.Helper()
	var n int
	if err := db.Read(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM "+table).Scan(&n)
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestInstallWritesOneRowPerEntryWithPerChainSeq(t *testing.T) {
	db := openDB(t)
	l := finality.New(clock.NewManual(t0))
	Install(l, Producer{}, nil)
	entries := appendAll(t, db, l,
		finality.Event{TxID: "TX-1", Type: finality.PaymentInitiated, StateTo: "RECEIVED", Payload: map[string]any{"amount": 1200}},
		finality.Event{TxID: "TX-2", Type: finality.PaymentInitiated, StateTo: "RECEIVED"},
		finality.Event{TxID: "TX-1", Type: finality.PreCheckPassed, StateFrom: "RECEIVED", StateTo: "PRECHECKED"},
		finality.Event{GTID: "GT-9", Type: finality.GtidRegistered, StateTo: "GT_RECEIVED"},
		finality.Event{Type: finality.DnsIntradayCutoff, StateTo: "CUTOFF"},
		finality.Event{TxID: "TX-1", Type: finality.Settled, StateFrom: "PRECHECKED", StateTo: "SETTLED"},
	)
	rows, err := New(db, nil).Since(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(entries) {
		t.Fatalf("%d outbox rows for %d entries", len(rows), len(entries))
	}
	wantSeq := []int64{1, 1, 2, 1, 1, 3}
	wantChain := []string{"TX-1", "TX-2", "TX-1", "GT-9", "GLOBAL", "TX-1"}
	wantAgg := []string{"TX:TX-1", "TX:TX-2", "TX:TX-1", "GT:GT-9", "GLOBAL", "TX:TX-1"}
	for i, r := range rows {
		e := entries[i]
		if r.OutboxSeq != e.EventSeq || r.LogID != e.LogID || r.ChainID != wantChain[i] || r.EventSeq != wantSeq[i] || r.EventType != string(e.EventType) || r.Sent {
			t.Errorf("row %d = %+v, entry %+v", i, r, e)
		}
		m, err := r.Message()
		if err != nil {
			t.Fatal(err)
		}
		if m.SchemaVersion != "1.0" || m.MessageType != "EVENT" || m.Name != string(e.EventType) || m.MessageID != e.LogID ||
			m.OccurredAt != e.OccurredAt || m.EventSeq != wantSeq[i] || m.Aggregate != wantAgg[i] || m.ChainID != wantChain[i] ||
			m.Producer != DefaultProducer || m.Body.EntryHash != e.EntryHash || m.Body.PrevHash != e.PrevHash ||
			m.Body.FinalitySeq != e.EventSeq || m.Body.StateTo != e.StateTo || m.Body.StateFrom != e.StateFrom {
			t.Errorf("message %d = %+v", i, m)
		}
		if hs, err := DecodeHeaders(r.Headers); err != nil || fmt.Sprint(hs) != fmt.Sprint(m.Headers()) {
			t.Errorf("headers column %q (%v), message headers %v", r.Headers, err, m.Headers())
		}
		if want := fmt.Sprintf("%s:%s:ZC:%d", wantAgg[i], e.EventType, wantSeq[i]); m.IdempotencyKey != want {
			t.Errorf("idempotency_key %q, want %q", m.IdempotencyKey, want)
		}
		if m.CorrelationID != CorrelationID(wantChain[i]) || len(m.CorrelationID) != 36 {
			t.Errorf("correlation_id %q", m.CorrelationID)
		}
	}
	// causation_id is the chain's previous event.
	m2, _ := rows[2].Message()
	m5, _ := rows[5].Message()
	m0, _ := rows[0].Message()
	if m0.CausationID != "" || m2.CausationID != entries[0].LogID || m5.CausationID != entries[2].LogID {
		t.Errorf("causation ids %q %q %q", m0.CausationID, m2.CausationID, m5.CausationID)
	}
	if string(m0.Body.Payload) != `{"amount":1200}` {
		t.Errorf("payload %s", m0.Body.Payload)
	}
	var raw map[string]any
	_ = json.Unmarshal([]byte(rows[0].MessageJSON), &raw)
	if _, has := raw["command_seq"]; has {
		t.Error("an EVENT must not carry command_seq")
	}
}

func TestRolledBackTransactionLeavesNeitherEntryNorOutboxRow(t *testing.T) {
	db := openDB(t)
	l := finality.New(clock.NewManual(t0))
	Install(l, Producer{}, nil)
	boom := errors.New("caller's state change failed")
	err := db.Write(context.Background(), func(tx *store.Tx) error {
		if _, err := l.Append(context.Background(), tx, finality.Event{TxID: "TX-1", Type: finality.PaymentInitiated, StateTo: "RECEIVED"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if n, m := count(t, db, "FinalityLog"), count(t, db, "EventOutbox"); n != 0 || m != 0 {
		t.Fatalf("after rollback: %d entries, %d outbox rows", n, m)
	}
	// The next committed append still starts the chain at event_seq 1.
	appendAll(t, db, l, finality.Event{TxID: "TX-1", Type: finality.PaymentInitiated, StateTo: "RECEIVED"})
	rows, _ := New(db, nil).Since(context.Background(), 0, 10)
	if len(rows) != 1 || rows[0].EventSeq != 1 {
		t.Fatalf("rows %+v", rows)
	}
}

func TestOutboxFailureRollsBackTheEntry(t *testing.T) {
	db := openDB(t)
	l := finality.New(clock.NewManual(t0))
	Install(l, Producer{}, nil)
	// A stray row occupying the next outbox_seq makes the hook's insert fail.
	if err := db.Write(context.Background(), func(tx *store.Tx) error {
		_, err := tx.ExecContext(context.Background(), `INSERT INTO EventOutbox (outbox_seq, log_id, chain_id, event_seq, event_type, message_json, headers, created_at) VALUES (1, 'x', 'X', 1, 'Settled', '{}', '', 'now')`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	err := db.Write(context.Background(), func(tx *store.Tx) error {
		_, err := l.Append(context.Background(), tx, finality.Event{TxID: "TX-1", Type: finality.PaymentInitiated, StateTo: "RECEIVED"})
		return err
	})
	if err == nil {
		t.Fatal("append succeeded although its outbox row could not be written")
	}
	if n := count(t, db, "FinalityLog"); n != 0 {
		t.Fatalf("%d FinalityLog entries committed without their outbox row", n)
	}
}

func TestInstallKeepsAnEarlierHook(t *testing.T) {
	db := openDB(t)
	l := finality.New(clock.NewManual(t0))
	var seen []string
	l.AfterAppend = func(_ context.Context, _ *store.Tx, e finality.Entry) error {
		seen = append(seen, e.LogID)
		return nil
	}
	Install(l, Producer{OrgID: "ZC", SystemID: "test"}, nil)
	e := appendAll(t, db, l, finality.Event{TxID: "TX-1", Type: finality.PaymentInitiated, StateTo: "RECEIVED"})
	rows, _ := New(db, nil).Since(context.Background(), 0, 10)
	if len(seen) != 1 || seen[0] != e[0].LogID || len(rows) != 1 {
		t.Fatalf("earlier hook saw %v, outbox %d rows", seen, len(rows))
	}
	if m, _ := rows[0].Message(); m.Producer.SystemID != "test" {
		t.Fatalf("producer %+v", m.Producer)
	}
}

// The cursor: rows up to acked_seq are sent, the rest unsent; Unsent,
// Since, Counts and Lag all read it.
func TestCursorSplitsSentFromUnsent(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	clk := clock.NewManual(t0)
	l := finality.New(clk)
	Install(l, Producer{}, nil)
	var evs []finality.Event
	for i := 0; i < 5; i++ {
		evs = append(evs, finality.Event{TxID: fmt.Sprintf("TX-%d", i), Type: finality.PaymentInitiated, StateTo: "RECEIVED"})
	}
	appendAll(t, db, l, evs...)
	o := New(db, clk)
	if c, err := o.Counts(ctx); err != nil || c != (Counts{Total: 5, Unsent: 5}) {
		t.Fatalf("counts before any publisher %+v %v", c, err)
	}
	lease, err := o.AcquireLease(ctx, "n1/e1/events", time.Minute)
	if err != nil || lease.Acked != 0 || lease.Token != 1 {
		t.Fatalf("lease %+v %v", lease, err)
	}
	clk.Advance(time.Second)
	if lease, err = o.Advance(ctx, lease, 3); err != nil || lease.Acked != 3 || !lease.Until.Equal(t0.Add(time.Second+time.Minute)) {
		t.Fatalf("advance %+v %v", lease, err)
	}
	un, err := o.Unsent(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, r := range un {
		got = append(got, r.OutboxSeq)
	}
	if fmt.Sprint(got) != "[4 5]" {
		t.Fatalf("unsent %v", got)
	}
	all, _ := o.Since(ctx, 3, 2)
	if len(all) != 2 || !all[0].Sent || all[1].Sent {
		t.Fatalf("rows 3, 4: %+v", all)
	}
	if c, err := o.Counts(ctx); err != nil || c != (Counts{Total: 5, Unsent: 2}) {
		t.Fatalf("counts %+v %v", c, err)
	}
	if lag, err := o.Lag(ctx); err != nil || lag.Unsent != 2 || !lag.Oldest.Equal(t0) {
		t.Fatalf("lag %+v %v", lag, err)
	}
	// The cursor never moves back.
	if lease, err = o.Advance(ctx, lease, 2); err != nil || lease.Acked != 3 {
		t.Fatalf("advance back %+v %v", lease, err)
	}
	if st, err := o.State(ctx); err != nil || st.Acked != 3 || st.Owner != "n1/e1/events" || !st.AckedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("state %+v %v", st, err)
	}
}

func TestTail(t *testing.T) {
	db := openDB(t)
	l := finality.New(clock.NewManual(t0))
	Install(l, Producer{}, nil)
	for i := 0; i < 3; i++ {
		appendAll(t, db, l, finality.Event{TxID: "TX-1", Type: finality.PaymentInitiated, StateTo: "RECEIVED"})
	}
	o := New(db, nil)
	var got []int64
	if err := o.Tail(context.Background(), 2, false, 0, func(r Row) error { got = append(got, r.OutboxSeq); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[2 3]" {
		t.Fatalf("tail from 2: %v", got)
	}

	// Follow: rows appended later arrive; the tail ends with ctx.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got = nil
	done := make(chan error, 1)
	go func() {
		done <- o.Tail(ctx, 0, true, 5*time.Millisecond, func(r Row) error {
			got = append(got, r.EventSeq)
			if len(got) == 5 {
				cancel()
			}
			return nil
		})
	}()
	appendAll(t, db, l, finality.Event{TxID: "TX-1", Type: finality.Settled, StateTo: "SETTLED"})
	appendAll(t, db, l, finality.Event{TxID: "TX-1", Type: finality.Settled, StateTo: "SETTLED"})
	err := <-done
	if !errors.Is(err, context.Canceled) || fmt.Sprint(got) != "[1 2 3 4 5]" {
		t.Fatalf("follow: %v %v", got, err)
	}
}

func TestHeadersColumn(t *testing.T) {
	hs := []Header{{"event_seq", "12"}, {"name", "Settled"}, {"producer_system_id", "zc gw&=%\n\u3042"}, {"k=&", ""}}
	enc := EncodeHeaders(hs)
	if enc != "event_seq=12&name=Settled&producer_system_id=zc+gw%26%3D%25%0A%E3%81%82&k%3D%26=" {
		t.Fatalf("encoded %q", enc)
	}
	back, err := DecodeHeaders(enc)
	if err != nil || fmt.Sprint(back) != fmt.Sprint(hs) {
		t.Fatalf("decoded %v %v", back, err)
	}
	for _, bad := range []string{"novalue", "a=1&b", "a=%zz", "%zz=1"} {
		if _, err := DecodeHeaders(bad); err == nil {
			t.Errorf("DecodeHeaders(%q) accepted", bad)
		}
	}
}

// FuzzDecodeHeaders: never panics; whatever it accepts re-encodes to an
// equivalent column.
func FuzzDecodeHeaders(f *testing.F) {
	f.Add("event_seq=12&name=Settled")
	f.Add("a=%zz")
	f.Add("=&=")
	f.Add("k%3D%26=v+w")
	f.Fuzz(func(t *testing.T, s string) {
		hs, err := DecodeHeaders(s)
		if err != nil {
			return
		}
		again, err := DecodeHeaders(EncodeHeaders(hs))
		if err != nil || fmt.Sprint(again) != fmt.Sprint(hs) {
			t.Fatalf("%q: %v re-decoded as %v (%v)", s, hs, again, err)
		}
	})
}

// A consumer can recompute entry_hash from the published message alone:
// body.payload is the stored payload_json byte for byte (HTML characters
// and non-ASCII included).
func TestPublishedMessageVerifiesAgainstTheHashChain(t *testing.T) {
	db := openDB(t)
	l := finality.New(clock.NewManual(t0))
	Install(l, Producer{}, nil)
	entries := appendAll(t, db, l,
		finality.Event{TxID: "TX-1", Type: finality.PaymentInitiated, StateTo: "RECEIVED", Payload: map[string]any{"memo": "<a&b> 振込", "amount": 1200}},
		finality.Event{TxID: "TX-1", Type: finality.Settled, StateFrom: "RECEIVED", StateTo: "SETTLED", Payload: json.RawMessage(`{"note":"x<y"}`)},
	)
	rows, _ := New(db, nil).Since(context.Background(), 0, 10)
	prev := finality.Genesis
	for i, r := range rows {
		m, err := r.Message()
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Body.Payload) != entries[i].PayloadJSON {
			t.Errorf("payload %s, stored %s", m.Body.Payload, entries[i].PayloadJSON)
		}
		e := finality.Entry{LogID: m.Body.LogID, TxID: m.Body.TxID, GTID: m.Body.GTID, EventType: finality.EventType(m.Name),
			StateFrom: m.Body.StateFrom, StateTo: m.Body.StateTo, PayloadJSON: string(m.Body.Payload), EventSeq: m.Body.FinalitySeq, OccurredAt: m.OccurredAt}
		if m.Body.PrevHash != prev || finality.ComputeHash(prev, e) != m.Body.EntryHash {
			t.Fatalf("message %d does not verify against the chain", i)
		}
		prev = m.Body.EntryHash
	}
}
