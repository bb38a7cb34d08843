package kafkapub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/zclog"
	"github.com/zcgw/zcgw/outbox/events"
)

// DefaultTopic is the topic of events no family matches.
const DefaultTopic = "zc.events"

// Topics routes event types to topics by family.
type Topics struct {
	// Default receives every event type no family matches (DefaultTopic
	// when empty).
	Default string
	// Families maps an event-type prefix (a family: "Dns", "Htlc",
	// "Gtid", or a whole type name) to its topic; the longest matching
	// prefix wins.
	Families map[string]string
}

// For returns the topic of eventType.
func (t Topics) For(eventType string) string {
	best, topic := -1, t.Default
	for prefix, tp := range t.Families {
		if strings.HasPrefix(eventType, prefix) && len(prefix) > best {
			best, topic = len(prefix), tp
		}
	}
	if topic == "" {
		return DefaultTopic
	}
	return topic
}

// All returns every topic the routing can choose, sorted.
func (t Topics) All() []string {
	set := map[string]bool{t.For(""): true}
	for _, tp := range t.Families {
		set[tp] = true
	}
	out := make([]string, 0, len(set))
	for tp := range set {
		out = append(out, tp)
	}
	sort.Strings(out)
	return out
}

// Config configures a Publisher. Zero fields take the defaults noted.
type Config struct {
	Brokers []string // host:port of the bootstrap brokers (required)
	Topics  Topics

	BatchRows  int // rows per drain step (500)
	BatchBytes int // approximate bytes per drain step (900,000; at most 960,000 so one partition's share stays one produce request under 1 MiB)

	BatchTimeout    time.Duration // kafka-go Writer.BatchTimeout (2ms; kafka-go's 1s default caps a sync writer at ~1,000 msg/s)
	WriteTimeout    time.Duration // kafka-go Writer.WriteTimeout and ReadTimeout (5s)
	MaxAttempts     int           // kafka-go Writer.MaxAttempts per batch (3)
	WriteBackoffMin time.Duration // kafka-go Writer.WriteBackoffMin (20ms)
	WriteBackoffMax time.Duration // kafka-go Writer.WriteBackoffMax (200ms)

	BackoffMin time.Duration // first wait after a failed step (200ms), doubling per consecutive failure
	BackoffMax time.Duration // cap of that wait (30s)
	Idle       time.Duration // Run's wait when the outbox is empty (10ms: one indexed read per wait, unless Changed says nothing changed)

	// Changed, when set, is a counter that moves whenever the outbox's
	// database may hold new rows: the node passes zc.db's commit counter
	// (store.DB.Stats().Commits, an atomic read). An idle Run then reads
	// the outbox only after the counter moved, or after IdleRead (1s) for
	// rows written by another process, which the counter cannot see; so
	// an idle node costs no read per Idle.
	Changed  func() int64
	IdleRead time.Duration

	Clock  clock.Clock  // decides when a retry is due (clock.System{})
	Logger *slog.Logger // events.publish_failed / events.publish_resumed (nil: discard)
}

// maxStepBytes keeps a step's records of one partition inside one kafka-go
// batch (BatchBytes 1 MiB): a partition's rows of a step then succeed or
// fail together, which the per-chain ordering relies on.
const maxStepBytes = 960_000

func (c *Config) defaults() {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.BatchRows <= 0 {
		c.BatchRows = 500
	}
	if c.BatchBytes <= 0 || c.BatchBytes > maxStepBytes {
		c.BatchBytes = 900_000
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 3
	}
	set(&c.BatchTimeout, 2*time.Millisecond)
	set(&c.WriteTimeout, 5*time.Second)
	set(&c.WriteBackoffMin, 20*time.Millisecond)
	set(&c.WriteBackoffMax, 200*time.Millisecond)
	set(&c.BackoffMin, 200*time.Millisecond)
	set(&c.BackoffMax, 30*time.Second)
	set(&c.Idle, 10*time.Millisecond)
	set(&c.IdleRead, time.Second)
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
}

// ErrNoBrokers is returned by New when no broker is configured: the events
// then stay in the outbox (the default), and nothing publishes them.
var ErrNoBrokers = errors.New("kafkapub: no brokers configured; events stay in the event outbox")

// PublishError is a failed drain step: Rows rows were attempted, Sent of
// them were acknowledged and marked sent; the rest stay unsent and are
// retried after Backoff.
type PublishError struct {
	Rows, Sent int
	Backoff    time.Duration
	Err        error
}

func (e *PublishError) Error() string {
	return fmt.Sprintf("kafkapub: %d of %d events not acknowledged (retry in %s): %v", e.Rows-e.Sent, e.Rows, e.Backoff, e.Err)
}

func (e *PublishError) Unwrap() error { return e.Err }

// Step is what one drain step did.
type Step struct {
	Read int           // unsent rows read from the outbox
	Sent int           // rows acknowledged and marked sent
	Wait time.Duration // > 0: a backoff is running; nothing was attempted
}

// Stats are the publisher's counters since New.
type Stats struct {
	Published int64 // rows acknowledged and marked sent
	Failures  int64 // failed steps
}

// Publisher drains one outbox to Kafka. Step and Run are not for
// concurrent use on one Publisher; two Publishers on one outbox are safe
// (each row is marked sent once) but duplicate records.
type Publisher struct {
	cfg   Config
	ob    *events.Outbox
	log   *slog.Logger
	w     *kafka.Writer
	fails int // consecutive failed steps
	retry time.Time
	// cursor: rows up to it were acknowledged; their MarkSent may still be
	// running (marking). Reset to 0 by any failure.
	cursor  int64
	marking chan error
	pub     atomic.Int64
	failed  atomic.Int64
	// lastErr is the last step's failure, nil after a successful step
	// (Health reads it from other goroutines).
	lastErr atomic.Pointer[PublishError]
}

// New returns a Publisher draining ob to cfg.Brokers. It does not connect
// until the first Step.
func New(ob *events.Outbox, cfg Config) (*Publisher, error) {
	if len(cfg.Brokers) == 0 {
		return nil, ErrNoBrokers
	}
	cfg.defaults()
	return &Publisher{cfg: cfg, ob: ob, log: zclog.OrDiscard(cfg.Logger)}, nil
}

func (p *Publisher) writer() *kafka.Writer {
	if p.w == nil {
		p.w = &kafka.Writer{
			Addr:            kafka.TCP(p.cfg.Brokers...),
			Balancer:        &kafka.Murmur2Balancer{}, // the Java client's key hashing
			RequiredAcks:    kafka.RequireAll,
			BatchSize:       p.cfg.BatchRows, // one step's rows of a partition form one batch
			BatchBytes:      1 << 20,
			BatchTimeout:    p.cfg.BatchTimeout,
			WriteTimeout:    p.cfg.WriteTimeout,
			ReadTimeout:     p.cfg.WriteTimeout,
			MaxAttempts:     p.cfg.MaxAttempts,
			WriteBackoffMin: p.cfg.WriteBackoffMin,
			WriteBackoffMax: p.cfg.WriteBackoffMax,
		}
	}
	return p.w
}

// Step drains one batch: it reads the oldest unsent rows, writes them, and
// marks sent the rows the broker acknowledged. While a backoff runs (after
// a failed step, until the Clock passes the retry time) it attempts
// nothing and returns the remaining wait.
//
// After a fully acknowledged write, the MarkSent of that batch runs in the
// background while the next Step reads and writes the rows after it (the
// fsync of one overlaps the produce round trip of the other). A failed
// background MarkSent only means those rows are published again later:
// they were delivered before everything after them, so the consumer drops
// them as duplicates.
func (p *Publisher) Step(ctx context.Context) (Step, error) {
	now := p.cfg.Clock.Now()
	if now.Before(p.retry) {
		return Step{Wait: p.retry.Sub(now)}, nil
	}
	rows, err := p.ob.UnsentAfter(ctx, p.cursor, p.cfg.BatchRows)
	if err != nil {
		return Step{}, p.fail(0, 0, errors.Join(err, p.awaitMark()))
	}
	msgs, rows := p.messages(rows)
	if len(msgs) == 0 {
		if err := p.awaitMark(); err != nil {
			return Step{}, p.fail(0, 0, err)
		}
		return Step{}, nil
	}
	werr := p.writer().WriteMessages(ctx, msgs...)
	acks := acknowledged(rows, msgs, werr)
	if werr == nil {
		if err := p.awaitMark(); err != nil {
			// The previous batch stays unsent and is published again
			// (duplicates); this one was acknowledged: mark it now.
			marked, merr := p.ob.MarkSent(ctx, acks)
			p.pub.Add(int64(marked))
			return Step{Read: len(rows), Sent: marked}, p.fail(len(rows), marked, errors.Join(err, merr))
		}
		p.markAsync(ctx, acks)
		p.cursor = rows[len(rows)-1].OutboxSeq
		if p.fails > 0 {
			p.log.Info("events.publish_resumed", "after_failures", p.fails, "sent", len(acks))
		}
		p.fails, p.retry = 0, time.Time{}
		p.lastErr.Store(nil)
		return Step{Read: len(rows), Sent: len(acks)}, nil
	}
	// Start the next attempt on fresh connections and metadata, from the
	// oldest unsent row.
	_ = p.w.Close()
	p.w = nil
	aerr := p.awaitMark()
	marked, merr := p.ob.MarkSent(ctx, acks)
	p.pub.Add(int64(marked))
	return Step{Read: len(rows), Sent: marked}, p.fail(len(rows), marked, errors.Join(werr, aerr, merr))
}

// markAsync marks acks sent in the background; awaitMark collects it.
func (p *Publisher) markAsync(ctx context.Context, acks []events.Ack) {
	done := make(chan error, 1)
	ctx = context.WithoutCancel(ctx) // an acknowledged batch is marked even if the caller's ctx ends
	go func() {
		n, err := p.ob.MarkSent(ctx, acks)
		p.pub.Add(int64(n))
		done <- err
	}()
	p.marking = done
}

// awaitMark waits for the background MarkSent, if any. On its failure the
// cursor goes back so the next step rereads the unmarked rows.
func (p *Publisher) awaitMark() error {
	if p.marking == nil {
		return nil
	}
	err := <-p.marking
	p.marking = nil
	if err != nil {
		p.cursor = 0
	}
	return err
}

func (p *Publisher) fail(rows, sent int, err error) error {
	p.cursor = 0
	p.fails++
	p.failed.Add(1)
	backoff := p.cfg.BackoffMin
	for i := 1; i < p.fails && backoff < p.cfg.BackoffMax; i++ {
		backoff *= 2
	}
	backoff = min(backoff, p.cfg.BackoffMax)
	p.retry = p.cfg.Clock.Now().Add(backoff)
	pe := &PublishError{Rows: rows, Sent: sent, Backoff: backoff, Err: err}
	p.lastErr.Store(pe)
	p.log.Warn("events.publish_failed", "rows", rows, "sent", sent, "consecutive_failures", p.fails, "backoff_ms", backoff.Milliseconds(), "error", err)
	return pe
}

// messages turns rows into records, stopping before BatchBytes would be
// exceeded (always keeping the first row). It returns the rows it used.
func (p *Publisher) messages(rows []events.Row) ([]kafka.Message, []events.Row) {
	msgs := make([]kafka.Message, 0, len(rows))
	size := 0
	for i, r := range rows {
		hs, err := events.DecodeHeaders(r.Headers)
		if err != nil {
			// A row this package cannot read was not written by
			// events.Insert; publish it with the headers its message
			// gives rather than hold every later event back.
			m, _ := r.Message()
			hs = m.Headers()
		}
		km := kafka.Message{Topic: p.cfg.Topics.For(r.EventType), Key: []byte(r.ChainID), Value: []byte(r.MessageJSON),
			Headers: make([]kafka.Header, len(hs))}
		for k, h := range hs {
			km.Headers[k] = kafka.Header{Key: h.Key, Value: []byte(h.Value)}
		}
		n := len(km.Value) + len(km.Key) + 64
		for _, h := range km.Headers {
			n += len(h.Key) + len(h.Value) + 8
		}
		if i > 0 && size+n > p.cfg.BatchBytes {
			return msgs, rows[:i]
		}
		size += n
		msgs = append(msgs, km)
	}
	return msgs, rows
}

// acknowledged returns the rows to mark sent after WriteMessages returned
// err. A chain's rows are marked only up to its first unacknowledged row,
// so the retry resends that chain's rows in order (the ones already
// delivered come again as duplicates the consumer drops).
func acknowledged(rows []events.Row, msgs []kafka.Message, err error) []events.Ack {
	if err == nil {
		acks := make([]events.Ack, len(rows))
		for i, r := range rows {
			acks[i] = events.Ack{OutboxSeq: r.OutboxSeq, Topic: msgs[i].Topic}
		}
		return acks
	}
	var werrs kafka.WriteErrors
	if !errors.As(err, &werrs) || len(werrs) != len(rows) {
		return nil // nothing known to be acknowledged
	}
	broken := map[string]bool{}
	var acks []events.Ack
	for i, r := range rows {
		if werrs[i] != nil || broken[r.ChainID] {
			broken[r.ChainID] = true
			continue
		}
		acks = append(acks, events.Ack{OutboxSeq: r.OutboxSeq, Topic: msgs[i].Topic})
	}
	return acks
}

// Run drains the outbox until ctx ends: immediately while rows remain,
// every Idle when it is empty (with Config.Changed: only once the counter
// moved, or every IdleRead), and after a failure when the backoff ends.
// It returns ctx.Err().
func (p *Publisher) Run(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		var seen int64
		if p.cfg.Changed != nil {
			seen = p.cfg.Changed() // before the read: a commit after it makes the next look read
		}
		read := time.Now()
		st, err := p.Step(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var wait time.Duration
		idle := false
		switch {
		case st.Wait > 0:
			wait = st.Wait
		case err != nil:
			wait = p.retry.Sub(p.cfg.Clock.Now())
		case st.Read < p.cfg.BatchRows && st.Read == st.Sent:
			wait, idle = p.cfg.Idle, true
			if st.Read > 0 {
				continue // a short batch may have been the tail of a burst: look once more
			}
		default:
			continue
		}
		for {
			timer.Reset(max(wait, time.Millisecond))
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-timer.C:
			}
			if !idle || p.cfg.Changed == nil || p.cfg.Changed() != seen || time.Since(read) >= p.cfg.IdleRead {
				break
			}
		}
	}
}

// Stats returns the publisher's counters.
func (p *Publisher) Stats() Stats {
	return Stats{Published: p.pub.Load(), Failures: p.failed.Load()}
}

// Health is nil unless the publisher's last step failed; then it is that
// failure (a *PublishError). It is safe to call while Run runs: the
// node's readiness check reports it.
func (p *Publisher) Health() error {
	if pe := p.lastErr.Load(); pe != nil {
		return pe
	}
	return nil
}

// Close waits for a background MarkSent, then flushes and closes the Kafka
// writer.
func (p *Publisher) Close() error {
	err := p.awaitMark()
	if p.w != nil {
		err = errors.Join(err, p.w.Close())
		p.w = nil
	}
	return err
}

// EnsureTopics creates each topic with the given partition count
// (replication factor 1 when replication <= 0) and accepts topics that
// already exist. Create topics before any consumer group reader starts: a
// group reader started before its topic exists never gets partitions.
func EnsureTopics(ctx context.Context, brokers []string, topics []string, partitions, replication int) error {
	if len(brokers) == 0 {
		return ErrNoBrokers
	}
	if replication <= 0 {
		replication = 1
	}
	req := &kafka.CreateTopicsRequest{}
	for _, t := range topics {
		req.Topics = append(req.Topics, kafka.TopicConfig{Topic: t, NumPartitions: partitions, ReplicationFactor: replication})
	}
	c := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second}
	resp, err := c.CreateTopics(ctx, req)
	if err != nil {
		return fmt.Errorf("kafkapub: create topics %v: %w", topics, err)
	}
	for t, e := range resp.Errors {
		if e != nil && !errors.Is(e, kafka.TopicAlreadyExists) {
			return fmt.Errorf("kafkapub: create topic %s: %w", t, e)
		}
	}
	return nil
}
