package consume

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/zclog"
)

// Schema is the DDL of the consumer's tables. Include it in the schema the
// consumer passes to store.Open (with its own tables after it). It is
// idempotent.
const Schema = `
-- EventConsumerProcessed: every (chain, event_seq) a consumer processed,
-- claimed in the transaction that ran the handler (exactly-once effect).
CREATE TABLE IF NOT EXISTS EventConsumerProcessed (
  consumer        TEXT    NOT NULL,
  chain_id        TEXT    NOT NULL,
  event_seq       INTEGER NOT NULL,
  message_id      TEXT    NOT NULL,
  topic           TEXT    NOT NULL,
  kafka_partition INTEGER NOT NULL,
  kafka_offset    INTEGER NOT NULL,
  processed_at    TEXT    NOT NULL,
  PRIMARY KEY (consumer, chain_id, event_seq)
);
-- EventConsumerChains: the last event_seq applied per (topic, chain), and
-- the gaps seen (count of jumps, events missing in total).
CREATE TABLE IF NOT EXISTS EventConsumerChains (
  consumer   TEXT    NOT NULL,
  topic      TEXT    NOT NULL,
  chain_id   TEXT    NOT NULL,
  last_seq   INTEGER NOT NULL,
  gaps       INTEGER NOT NULL DEFAULT 0,
  missing    INTEGER NOT NULL DEFAULT 0,
  updated_at TEXT    NOT NULL,
  PRIMARY KEY (consumer, topic, chain_id)
);
-- EventConsumerRejected: records a Consumer with SkipRefused committed past
-- without applying them (rewinds, undecodable records), for an operator.
CREATE TABLE IF NOT EXISTS EventConsumerRejected (
  consumer        TEXT    NOT NULL,
  topic           TEXT    NOT NULL,
  kafka_partition INTEGER NOT NULL,
  kafka_offset    INTEGER NOT NULL,
  chain_id        TEXT,
  event_seq       INTEGER,
  message_id      TEXT,
  reason_code     TEXT    NOT NULL,
  reason          TEXT    NOT NULL,
  rejected_at     TEXT    NOT NULL,
  PRIMARY KEY (consumer, topic, kafka_partition, kafka_offset)
);
`

// Handler applies one event's effect inside tx, the transaction that also
// records (chain, event_seq) as processed. Returning an error rolls both
// back; the event is then processed again on redelivery.
type Handler func(ctx context.Context, tx *store.Tx, ev Event) error

// Outcome is what Process did with an event.
type Outcome int

// The outcomes of Process.
const (
	Applied   Outcome = iota + 1 // the handler ran and committed
	Duplicate                    // already processed: skipped
)

func (o Outcome) String() string {
	switch o {
	case Applied:
		return "applied"
	case Duplicate:
		return "duplicate"
	}
	return "none"
}

// Result is one Process call's outcome; Missing > 0 means the event came
// after a gap of that many event_seq values in its (topic, chain).
type Result struct {
	Outcome Outcome
	Missing int64
}

// RewindError refuses an event whose event_seq goes back in its chain
// (spec 002 §12.5: gaps are allowed, a rewind is refused): Seq is at or
// below the chain's Last applied seq and was never processed, or Reused is
// true: (chain, Seq) was processed with another message_id (a reused seq).
type RewindError struct {
	Consumer, Topic, ChainID string
	Seq, Last                int64
	MessageID                string
	Reused                   bool
	ProcessedID              string // the message_id processed under (chain, Seq) when Reused
}

func (e *RewindError) Error() string {
	if e.Reused {
		return fmt.Sprintf("consume: chain %s event_seq %d reused: message %s, but %s was processed under it", e.ChainID, e.Seq, e.MessageID, e.ProcessedID)
	}
	return fmt.Sprintf("consume: chain %s (topic %s) rewinds to event_seq %d after %d", e.ChainID, e.Topic, e.Seq, e.Last)
}

// Unwrap gives the reason code INVARIANT_VIOLATION.
func (e *RewindError) Unwrap() error {
	return domainerr.New("INVARIANT_VIOLATION", "event_seq rewind refused", map[string]any{
		"chain_id": e.ChainID, "topic": e.Topic, "event_seq": e.Seq, "last_seq": e.Last, "reused": e.Reused})
}

// Stats are a Processor's counters since it was created.
type Stats struct {
	Applied, Duplicates, Gaps, Missing, Refused int64
}

// Processor runs handlers exactly once per (chain, event_seq) for one named
// consumer. It is safe for concurrent use (the store serialises writers).
type Processor struct {
	db   *store.DB
	name string
	clk  clock.Clock
	log  *slog.Logger

	applied, dups, gaps, missing, refused atomic.Int64
	lag                                   prometheus.Histogram
}

// NewProcessor returns the Processor of consumer name on db, which must
// have Schema applied. clk stamps processed_at (clock.System{} when nil).
func NewProcessor(db *store.DB, name string, clk clock.Clock, logger *slog.Logger) *Processor {
	if clk == nil {
		clk = clock.System{}
	}
	return &Processor{db: db, name: name, clk: clk, log: zclog.OrDiscard(logger),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "zcgw_event_consumer_lag_seconds",
			Help:        "From an event's FinalityLog append (its occurred_at) to this consumer's handler being called for it (applied events only).",
			ConstLabels: prometheus.Labels{"consumer": name},
			Buckets:     []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}})}
}

// Collector is the Processor's append-to-handler lag histogram, for the
// consumer's own Prometheus registry.
func (p *Processor) Collector() prometheus.Collector { return p.lag }

var processedCols = []string{"consumer", "chain_id", "event_seq", "message_id", "topic", "kafka_partition", "kafka_offset", "processed_at"}

// Process applies ev once: it claims (chain, event_seq), checks the seq
// against the (topic, chain)'s last one, runs h and advances the chain, all
// in one transaction. See the package comment for the rules.
func (p *Processor) Process(ctx context.Context, ev Event, h Handler) (Result, error) {
	var res Result
	var handled time.Time
	now := clock.Stamp(p.clk.Now())
	err := p.db.Write(ctx, func(tx *store.Tx) error {
		res = Result{}
		claimed, err := store.Insert(ctx, tx, "EventConsumerProcessed", processedCols,
			p.name, ev.ChainID, ev.EventSeq, ev.MessageID, ev.Topic, ev.Partition, ev.Offset, now)
		if err != nil {
			return fmt.Errorf("consume: claim %s/%d: %w", ev.ChainID, ev.EventSeq, err)
		}
		if !claimed {
			var id string
			if err := tx.QueryRowContext(ctx, `SELECT message_id FROM EventConsumerProcessed WHERE consumer = ? AND chain_id = ? AND event_seq = ?`,
				p.name, ev.ChainID, ev.EventSeq).Scan(&id); err != nil {
				return fmt.Errorf("consume: read claim %s/%d: %w", ev.ChainID, ev.EventSeq, err)
			}
			if id != ev.MessageID {
				return &RewindError{Consumer: p.name, Topic: ev.Topic, ChainID: ev.ChainID, Seq: ev.EventSeq, MessageID: ev.MessageID, Reused: true, ProcessedID: id}
			}
			res.Outcome = Duplicate
			return nil
		}
		var last int64
		err = tx.QueryRowContext(ctx, `SELECT last_seq FROM EventConsumerChains WHERE consumer = ? AND topic = ? AND chain_id = ?`,
			p.name, ev.Topic, ev.ChainID).Scan(&last)
		known := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("consume: read chain %s: %w", ev.ChainID, err)
		}
		if known && ev.EventSeq <= last {
			return &RewindError{Consumer: p.name, Topic: ev.Topic, ChainID: ev.ChainID, Seq: ev.EventSeq, Last: last, MessageID: ev.MessageID}
		}
		res.Missing = ev.EventSeq - last - 1
		jumps := 0
		if res.Missing > 0 {
			jumps = 1
		}
		if !known {
			if _, err := tx.ExecContext(ctx, `INSERT INTO EventConsumerChains (consumer, topic, chain_id, last_seq, gaps, missing, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				p.name, ev.Topic, ev.ChainID, ev.EventSeq, jumps, res.Missing, now); err != nil {
				return fmt.Errorf("consume: start chain %s: %w", ev.ChainID, err)
			}
		} else {
			ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE EventConsumerChains SET last_seq = ?, gaps = gaps + ?, missing = missing + ?, updated_at = ?
				WHERE consumer = ? AND topic = ? AND chain_id = ? AND last_seq = ?`,
				ev.EventSeq, jumps, res.Missing, now, p.name, ev.Topic, ev.ChainID, last))
			if err != nil {
				return fmt.Errorf("consume: advance chain %s: %w", ev.ChainID, err)
			}
			if !ok {
				return domainerr.New("CONCURRENCY_CONFLICT", "chain advanced concurrently", map[string]any{"chain_id": ev.ChainID, "last_seq": last})
			}
		}
		handled = p.clk.Now()
		if err := h(ctx, tx, ev); err != nil {
			return fmt.Errorf("consume: handler for %s/%d (%s): %w", ev.ChainID, ev.EventSeq, ev.Name, err)
		}
		res.Outcome = Applied
		return nil
	})
	if err != nil {
		var rw *RewindError
		if errors.As(err, &rw) {
			p.refused.Add(1)
			p.log.Error("events.rewind_refused", "consumer", p.name, "topic", rw.Topic, "chain_id", rw.ChainID, "event_seq", rw.Seq, "last_seq", rw.Last, "reused", rw.Reused)
		}
		return Result{}, err
	}
	switch res.Outcome {
	case Duplicate:
		p.dups.Add(1)
		p.log.Debug("events.duplicate", "consumer", p.name, "chain_id", ev.ChainID, "event_seq", ev.EventSeq)
	case Applied:
		p.applied.Add(1)
		if at, err := clock.ParseStamp(ev.OccurredAt); err == nil {
			p.lag.Observe(max(handled.Sub(at), 0).Seconds())
		}
		if res.Missing > 0 {
			p.gaps.Add(1)
			p.missing.Add(res.Missing)
			p.log.Warn("events.gap", "consumer", p.name, "topic", ev.Topic, "chain_id", ev.ChainID, "event_seq", ev.EventSeq, "missing", res.Missing)
		}
	}
	return res, nil
}

// Reject records a record this consumer commits past without applying it
// (reasonErr says why: a *RewindError or a *DecodeError), so an operator
// sees it. chain, seq and messageID may be empty/0 for an undecodable
// record. Recording the same record twice keeps the first.
func (p *Processor) Reject(ctx context.Context, topic string, partition int, offset int64, chain string, seq int64, messageID string, reasonErr error) error {
	code := domainerr.Code(reasonErr)
	if code == "" {
		code = domainerr.InternalReasonCode
	}
	err := p.db.Write(ctx, func(tx *store.Tx) error {
		_, err := store.Insert(ctx, tx, "EventConsumerRejected",
			[]string{"consumer", "topic", "kafka_partition", "kafka_offset", "chain_id", "event_seq", "message_id", "reason_code", "reason", "rejected_at"},
			p.name, topic, partition, offset, nullable(chain), nullableSeq(seq), nullable(messageID), code, reasonErr.Error(), clock.Stamp(p.clk.Now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("consume: record rejected %s/%d@%d: %w", topic, partition, offset, err)
	}
	p.log.Warn("events.rejected", "consumer", p.name, "topic", topic, "partition", partition, "offset", offset, "reason_code", code, "error", reasonErr)
	return nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullableSeq(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}

// ChainState is a (topic, chain)'s durable position.
type ChainState struct {
	LastSeq, Gaps, Missing int64
}

// Chain returns the durable state of (topic, chain) (zero if never seen).
func (p *Processor) Chain(ctx context.Context, topic, chain string) (ChainState, error) {
	var s ChainState
	err := p.db.Read(ctx, func(tx *store.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT last_seq, gaps, missing FROM EventConsumerChains WHERE consumer = ? AND topic = ? AND chain_id = ?`,
			p.name, topic, chain).Scan(&s.LastSeq, &s.Gaps, &s.Missing)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	return s, err
}

// Stats returns the counters since the Processor was created.
func (p *Processor) Stats() Stats {
	return Stats{Applied: p.applied.Load(), Duplicates: p.dups.Load(), Gaps: p.gaps.Load(), Missing: p.missing.Load(), Refused: p.refused.Load()}
}
