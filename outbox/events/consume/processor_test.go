package consume

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

const effectSchema = `CREATE TABLE IF NOT EXISTS Effects (chain_id TEXT NOT NULL, event_seq INTEGER NOT NULL, amount INTEGER NOT NULL);`

func openConsumerDB(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "consumer.db"), Schema+effectSchema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// addAmount is a handler with a visible effect: one Effects row per call.
func addAmount(ctx context.Context, tx *store.Tx, ev Event) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO Effects (chain_id, event_seq, amount) VALUES (?, ?, 1200)`, ev.ChainID, ev.EventSeq)
	return err
}

func effects(t testing.TB, db *store.DB) string {
	t.Helper()
	var out []string
	if err := db.Read(context.Background(), func(tx *store.Tx) error {
		rows, err := tx.QueryContext(context.Background(), `SELECT chain_id, event_seq FROM Effects ORDER BY rowid`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c string
			var s int64
			if err := rows.Scan(&c, &s); err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%s/%d", c, s))
		}
		return rows.Err()
	}); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(out)
}

func TestProcessSeqRules(t *testing.T) {
	ctx := context.Background()
	db := openConsumerDB(t)
	p := NewProcessor(db, "ledger", nil, nil)
	reused := event("TX-1", 2)
	reused.MessageID = "someone-else"
	otherTopic := event("TX-1", 2)
	otherTopic.Topic = "zc.other"
	steps := []struct {
		name    string
		ev      Event
		outcome Outcome
		missing int64
		refuse  string // "rewind" | "reused"
	}{
		{"first", event("TX-1", 1), Applied, 0, ""},
		{"next", event("TX-1", 2), Applied, 0, ""},
		{"redelivered", event("TX-1", 2), Duplicate, 0, ""},
		{"gap of one", event("TX-1", 4), Applied, 1, ""},
		{"late 3 is a rewind", event("TX-1", 3), 0, 0, "rewind"},
		{"seq 2 reused with another message", reused, 0, 0, "reused"},
		{"redelivered on another topic", otherTopic, Duplicate, 0, ""},
		{"another chain starts late", event("TX-2", 3), Applied, 2, ""},
		{"old redelivery still a duplicate", event("TX-1", 1), Duplicate, 0, ""},
	}
	for _, s := range steps {
		res, err := p.Process(ctx, s.ev, addAmount)
		var rw *RewindError
		switch {
		case s.refuse != "":
			if !errors.As(err, &rw) || rw.Reused != (s.refuse == "reused") || domainerr.Code(err) != "INVARIANT_VIOLATION" {
				t.Fatalf("%s: err %v, want a %s refusal", s.name, err, s.refuse)
			}
		case err != nil:
			t.Fatalf("%s: %v", s.name, err)
		case res.Outcome != s.outcome || res.Missing != s.missing:
			t.Fatalf("%s: %+v, want %s missing %d", s.name, res, s.outcome, s.missing)
		}
	}
	if got := effects(t, db); got != "[TX-1/1 TX-1/2 TX-1/4 TX-2/3]" {
		t.Fatalf("effects %s", got)
	}
	if st := p.Stats(); st != (Stats{Applied: 4, Duplicates: 3, Gaps: 2, Missing: 3, Refused: 2}) {
		t.Fatalf("stats %+v", st)
	}
	cs, err := p.Chain(ctx, "zc.events", "TX-1")
	if err != nil || cs != (ChainState{LastSeq: 4, Gaps: 1, Missing: 1}) {
		t.Fatalf("chain state %+v %v", cs, err)
	}
	// The durable state survives a new Processor (a restart).
	p2 := NewProcessor(db, "ledger", nil, nil)
	if res, err := p2.Process(ctx, event("TX-1", 4), addAmount); err != nil || res.Outcome != Duplicate {
		t.Fatalf("after restart: %+v %v", res, err)
	}
	// Another consumer name has its own dedup and positions.
	p3 := NewProcessor(db, "fraud", nil, nil)
	if res, err := p3.Process(ctx, event("TX-1", 4), addAmount); err != nil || res.Outcome != Applied || res.Missing != 3 {
		t.Fatalf("second consumer: %+v %v", res, err)
	}
}

func TestHandlerErrorRollsBackTheClaim(t *testing.T) {
	ctx := context.Background()
	db := openConsumerDB(t)
	p := NewProcessor(db, "ledger", nil, nil)
	boom := errors.New("downstream full")
	failing := func(ctx context.Context, tx *store.Tx, ev Event) error {
		if err := addAmount(ctx, tx, ev); err != nil {
			return err
		}
		return boom
	}
	if _, err := p.Process(ctx, event("TX-1", 1), failing); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if got := effects(t, db); got != "[]" {
		t.Fatalf("effects after a failed handler: %s", got)
	}
	// Redelivered, it is applied (not taken for a duplicate).
	if res, err := p.Process(ctx, event("TX-1", 1), addAmount); err != nil || res.Outcome != Applied {
		t.Fatalf("retry: %+v %v", res, err)
	}
	if got := effects(t, db); got != "[TX-1/1]" {
		t.Fatalf("effects %s", got)
	}
}

// N goroutines deliver the same events at once (a rebalance handing a
// partition over while the old member still processes): each event's
// effect happens exactly once.
func TestProcessRace(t *testing.T) {
	ctx := context.Background()
	db := openConsumerDB(t)
	p := NewProcessor(db, "ledger", nil, nil)
	const n, seqs = 8, 20
	var wg sync.WaitGroup
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := int64(1); s <= seqs; s++ {
				if _, err := p.Process(ctx, event("TX-1", s), addAmount); err != nil {
					var rw *RewindError
					if !errors.As(err, &rw) {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	var rows, distinct int
	_ = db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(DISTINCT event_seq) FROM Effects`).Scan(&rows, &distinct)
	})
	if rows != seqs || distinct != seqs {
		t.Fatalf("%d effects (%d distinct), want %d", rows, distinct, seqs)
	}
	if st := p.Stats(); st.Applied != seqs || st.Applied+st.Duplicates+st.Refused != n*seqs {
		t.Fatalf("stats %+v", st)
	}
}

func TestReject(t *testing.T) {
	ctx := context.Background()
	db := openConsumerDB(t)
	p := NewProcessor(db, "ledger", nil, nil)
	m := withHeader(record("TX-1", 1), "event_seq", "x")
	_, derr := Decode(m)
	if err := p.Reject(ctx, m.Topic, m.Partition, m.Offset, "", 0, "", derr); err != nil {
		t.Fatal(err)
	}
	if err := p.Reject(ctx, m.Topic, m.Partition, m.Offset, "", 0, "", derr); err != nil {
		t.Fatal(err)
	}
	var code, reason string
	var count int
	_ = db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*), MAX(reason_code), MAX(reason) FROM EventConsumerRejected`).Scan(&count, &code, &reason)
	})
	if count != 1 || code != "INVALID_REQUEST" || reason != derr.Error() {
		t.Fatalf("rejected rows %d %s %q", count, code, reason)
	}
}

// The lag histogram gets one sample per applied event, from its
// occurred_at to the handler's call on the Processor's clock; a duplicate
// adds none.
func TestProcessObservesAppendToHandlerLag(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 4, 1, 1, 0, 3, 0, time.UTC)) // 3 s after the events' occurred_at
	p := NewProcessor(openConsumerDB(t), "ledger", clk, nil)
	for _, ev := range []Event{event("TX-1", 1), event("TX-1", 2), event("TX-1", 2)} {
		if _, err := p.Process(ctx, ev, addAmount); err != nil {
			t.Fatal(err)
		}
	}
	var m dto.Metric
	if err := p.Collector().(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	if h := m.GetHistogram(); h.GetSampleCount() != 2 || h.GetSampleSum() != 6 {
		t.Fatalf("lag histogram: %d samples, sum %v s; want 2 and 6", h.GetSampleCount(), h.GetSampleSum())
	}
}
