package kafkapub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/procid"
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

	BatchRows  int // rows per drain step (5,000)
	BatchBytes int // approximate bytes per drain step (8 MB); one partition's share of a step is at most 960,000 bytes

	// Compression of each produced batch: "lz4" (default), "snappy",
	// "zstd", "gzip" or "none". kafka-go's readers (and every Kafka
	// consumer) decompress transparently. LZ4 halves the CPU the broker
	// (kfake measured: BenchmarkKfakeCeiling) and the writer spend on a
	// ~1.2 kB event, whose envelope repeats its keys and header names
	// record after record (docs/PERFORMANCE.md, session 7).
	Compression string

	BatchTimeout    time.Duration // kafka-go Writer.BatchTimeout (2ms; kafka-go's 1s default caps a sync writer at ~1,000 msg/s)
	WriteTimeout    time.Duration // kafka-go Writer.WriteTimeout and ReadTimeout (5s)
	MaxAttempts     int           // kafka-go Writer.MaxAttempts per batch (3)
	WriteBackoffMin time.Duration // kafka-go Writer.WriteBackoffMin (20ms)
	WriteBackoffMax time.Duration // kafka-go Writer.WriteBackoffMax (200ms)

	BackoffMin time.Duration // first wait after a failed step (200ms), doubling per consecutive failure
	BackoffMax time.Duration // cap of that wait (30s)
	// Idle is Run's longest wait when the outbox is empty (1s). Run wakes
	// earlier on Wake; Idle only bounds how long a row committed without a
	// Wake notification (another process, a Log without Install) waits.
	Idle time.Duration
	// Wake is notified after each commit that added outbox rows
	// (events.WakeOf of the Log the outbox is installed on). Nil: Run polls
	// every Idle.
	Wake *events.Wake
	// CreateTopics, when set, makes Prepare create the missing topics
	// with this layout. Nil: a missing topic is a *MissingTopicError.
	CreateTopics *TopicLayout

	// Owner names this publisher in the stream's lease
	// (coordinator/procid Owner form: the node passes
	// Identity.Owner("events")); empty: an ephemeral identity.
	Owner string
	// LeaseTTL is how long the lease lasts without a renewal (10s): a
	// publisher that stopped without releasing it (a crash) is taken over
	// this long after its last step. The holder renews it with every step
	// and, when idle, once a third of it has passed.
	LeaseTTL time.Duration

	Clock  clock.Clock  // decides when a retry is due (clock.System{})
	Logger *slog.Logger // events.publish_failed / events.publish_resumed (nil: discard)
}

// TopicLayout is how Prepare creates a missing topic.
type TopicLayout struct {
	Partitions  int // > 0
	Replication int // > 0
}

// maxPartitionBytes keeps a step's records of one partition inside one
// kafka-go batch (BatchBytes 1 MiB): a partition's rows of a step then
// succeed or fail together, which the per-chain ordering relies on.
const maxPartitionBytes = 960_000

func (c *Config) defaults() {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.BatchRows <= 0 {
		c.BatchRows = 5000
	}
	if c.BatchBytes <= 0 {
		c.BatchBytes = 8 << 20
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 3
	}
	if c.Compression == "" {
		c.Compression = "lz4"
	}
	set(&c.BatchTimeout, 2*time.Millisecond)
	set(&c.WriteTimeout, 5*time.Second)
	set(&c.WriteBackoffMin, 20*time.Millisecond)
	set(&c.WriteBackoffMax, 200*time.Millisecond)
	set(&c.BackoffMin, 200*time.Millisecond)
	set(&c.BackoffMax, 30*time.Second)
	set(&c.Idle, time.Second)
	set(&c.LeaseTTL, 10*time.Second)
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Owner == "" {
		c.Owner = procid.Ephemeral("publisher", c.Clock).Owner("events")
	}
}

// ErrNoBrokers is returned by New when no broker is configured: the events
// then stay in the outbox (the default), and nothing publishes them.
var ErrNoBrokers = errors.New("kafkapub: no brokers configured; events stay in the event outbox")

// PublishError is a failed drain step: Rows rows were attempted, Sent of
// them (a prefix in outbox order) were acknowledged and recorded by the
// cursor; the rest stay unsent and are retried after Backoff.
type PublishError struct {
	Rows, Sent int
	Backoff    time.Duration
	Err        error
}

func (e *PublishError) Error() string {
	if e.Rows == 0 {
		return fmt.Sprintf("kafkapub: cannot publish (retry in %s): %v", e.Backoff, e.Err)
	}
	return fmt.Sprintf("kafkapub: %d of %d events not acknowledged (retry in %s): %v", e.Rows-e.Sent, e.Rows, e.Backoff, e.Err)
}

func (e *PublishError) Unwrap() error { return e.Err }

// MissingTopicError says which topics the routing needs and the cluster
// does not have (Prepare without CreateTopics). The publisher does not
// start: it would only fail forever.
type MissingTopicError struct{ Topics []string }

func (e *MissingTopicError) Error() string {
	return fmt.Sprintf("kafkapub: topic %s does not exist on the cluster (create it, or let the publisher create missing topics)", strings.Join(e.Topics, ", "))
}

// Step is what one drain step did.
type Step struct {
	Read int           // unsent rows read from the outbox
	Sent int           // rows acknowledged (their cursor move may still be committing)
	Wait time.Duration // > 0: a backoff runs, or another publisher holds the lease; nothing was attempted
	// Holder is the other publisher holding the stream's lease ("" when
	// this one holds it): this one stands by.
	Holder string
}

// Stats are the publisher's counters since New.
type Stats struct {
	Published int64 // rows acknowledged and recorded by the cursor
	Failures  int64 // failed steps
}

// batch is one step's rows and their records.
type batch struct {
	rows []events.Pending
	msgs []kafka.Message
	more bool // the read stopped at a limit: more rows may follow
	err  error
}

// Publisher drains one outbox to Kafka. Step and Run are not for
// concurrent use on one Publisher. Publishers of several nodes on one
// database take turns through the stream's lease: one publishes, the
// others stand by (docs/events.md, "Several nodes").
type Publisher struct {
	cfg   Config
	codec kafka.Compression
	ob    *events.Outbox
	log   *slog.Logger
	w     *kafka.Writer
	parts sync.Map // topic -> partition count, learned by the balancer
	fails int      // consecutive failed steps
	retry time.Time
	// lease is the stream's lease while this publisher holds it (nil:
	// not held). A background cursor move (marking) renews it and hands
	// the renewed lease back.
	lease *events.Lease
	// cursor: rows up to it were acknowledged; the durable cursor
	// (lease.Acked) may still be moving there (marking). Any failure
	// resets it to the durable cursor.
	cursor  int64
	marking chan markResult
	// ahead is the next step's batch, read while this step's records were
	// on the wire (nil: none).
	ahead  chan batch
	pub    atomic.Int64
	failed atomic.Int64
	// lastErr is the last step's failure, nil after a successful step
	// (Health reads it from other goroutines).
	lastErr  atomic.Pointer[error]
	lag      prometheus.Histogram
	prepared bool // Prepare succeeded (Run publishes only then)
}

// markResult is a background cursor move's outcome.
type markResult struct {
	lease events.Lease
	err   error
}

// New returns a Publisher draining ob to cfg.Brokers. It does not connect
// until Prepare or the first Step.
func New(ob *events.Outbox, cfg Config) (*Publisher, error) {
	if len(cfg.Brokers) == 0 {
		return nil, ErrNoBrokers
	}
	if l := cfg.CreateTopics; l != nil && (l.Partitions <= 0 || l.Replication <= 0) {
		return nil, fmt.Errorf("kafkapub: create topics with %d partitions and replication %d: both must be at least 1", l.Partitions, l.Replication)
	}
	cfg.defaults()
	codec, ok := codecs[cfg.Compression]
	if !ok {
		return nil, fmt.Errorf("kafkapub: compression %q: want lz4, snappy, zstd, gzip or none", cfg.Compression)
	}
	return &Publisher{cfg: cfg, ob: ob, codec: codec, log: zclog.OrDiscard(cfg.Logger),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "zcgw_event_publish_lag_seconds",
			Help:    "From a FinalityLog append (the event's occurred_at) to the broker's acknowledgement of its record.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}})}, nil
}

// codecs are the Config.Compression names.
var codecs = map[string]kafka.Compression{"none": 0, "lz4": kafka.Lz4, "snappy": kafka.Snappy, "zstd": kafka.Zstd, "gzip": kafka.Gzip}

// learningBalancer is the Java client's key hashing (Murmur2); it records
// each topic's partition count so the next steps can bound every
// partition's share.
type learningBalancer struct {
	kafka.Murmur2Balancer
	parts *sync.Map
}

func (b learningBalancer) Balance(m kafka.Message, partitions ...int) int {
	b.parts.Store(m.Topic, len(partitions))
	return b.Murmur2Balancer.Balance(m, partitions...)
}

func (p *Publisher) writer() *kafka.Writer {
	if p.w == nil {
		p.w = &kafka.Writer{
			Addr:            kafka.TCP(p.cfg.Brokers...),
			Balancer:        learningBalancer{parts: &p.parts},
			RequiredAcks:    kafka.RequireAll,
			BatchSize:       p.cfg.BatchRows, // one step's rows of a partition form one batch
			BatchBytes:      1 << 20,
			BatchTimeout:    p.cfg.BatchTimeout,
			Compression:     p.codec,
			WriteTimeout:    p.cfg.WriteTimeout,
			ReadTimeout:     p.cfg.WriteTimeout,
			MaxAttempts:     p.cfg.MaxAttempts,
			WriteBackoffMin: p.cfg.WriteBackoffMin,
			WriteBackoffMax: p.cfg.WriteBackoffMax,
		}
	}
	return p.w
}

// Prepare checks that every topic the routing can choose exists, creating
// the missing ones when Config.CreateTopics says how. Without CreateTopics
// a missing topic is a *MissingTopicError. A broker that cannot be reached
// is an error too (the caller decides whether to start anyway: Run
// publishes once the broker is back).
func (p *Publisher) Prepare(ctx context.Context) error {
	topics := p.cfg.Topics.All()
	if l := p.cfg.CreateTopics; l != nil {
		err := EnsureTopics(ctx, p.cfg.Brokers, topics, l.Partitions, l.Replication)
		p.prepared = err == nil
		return err
	}
	c := &kafka.Client{Addr: kafka.TCP(p.cfg.Brokers...), Timeout: 10 * time.Second}
	md, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return fmt.Errorf("kafkapub: read metadata of topics %v: %w", topics, err)
	}
	have := map[string]bool{}
	for _, t := range md.Topics {
		if t.Error == nil && len(t.Partitions) > 0 {
			have[t.Name] = true
		} else if t.Error != nil && !errors.Is(t.Error, kafka.UnknownTopicOrPartition) {
			return fmt.Errorf("kafkapub: metadata of topic %s: %w", t.Name, t.Error)
		}
	}
	var missing []string
	for _, t := range topics {
		if !have[t] {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return &MissingTopicError{Topics: missing}
	}
	p.prepared = true
	return nil
}

// Step drains one batch: it reads the rows after the stream's cursor,
// writes them, and moves the cursor past the rows the broker
// acknowledged. While a backoff runs (after a failed step, until the Clock
// passes the retry time) it attempts nothing and returns the remaining
// wait; while another publisher holds the stream's lease it stands by
// (Step.Holder names it, Step.Wait says when to look again).
//
// A step is a pipeline stage: while its records are on the wire, the
// cursor move of the previous step commits and the rows of the next step
// are read. A failed background move only means those rows are published
// again later: they were delivered before everything after them, so the
// consumer drops them as duplicates.
func (p *Publisher) Step(ctx context.Context) (Step, error) {
	now := p.cfg.Clock.Now()
	if now.Before(p.retry) {
		return Step{Wait: p.retry.Sub(now)}, nil
	}
	if st, held, err := p.holdLease(ctx); held || err != nil {
		return st, err
	}
	if !now.Before(p.lease.Until) {
		// Expired on our clock (a long outage or pause): make sure nobody
		// took the stream over before writing more.
		err := p.awaitMark()
		if err == nil {
			err = p.renewIfDue(ctx)
		}
		if err != nil {
			return Step{}, p.fail(0, 0, err)
		}
	}
	b := p.takeAhead()
	if b == nil || len(b.rows) == 0 || b.err != nil {
		// An empty read-ahead may be stale: read again.
		nb := p.read(ctx, p.cursor)
		b = &nb
	}
	if b.err != nil {
		return Step{}, p.fail(0, 0, errors.Join(b.err, p.awaitMark()))
	}
	if len(b.msgs) == 0 {
		if err := p.awaitMark(); err != nil {
			return Step{}, p.fail(0, 0, err)
		}
		if err := p.renewIfDue(ctx); err != nil {
			return Step{}, p.fail(0, 0, err)
		}
		return Step{}, nil
	}
	last := b.rows[len(b.rows)-1].OutboxSeq
	if b.more {
		p.readAhead(ctx, last)
	}
	werr := p.writer().WriteMessages(ctx, b.msgs...)
	if werr == nil {
		p.observeLag(b.rows)
		if err := p.awaitMark(); err != nil {
			// The previous batch's cursor move failed: the cursor stays
			// before it, and the next step publishes it and this batch
			// again (exact duplicates, after their first delivery).
			p.dropAhead()
			return Step{Read: len(b.rows)}, p.fail(len(b.rows), 0, err)
		}
		p.markAsync(ctx, last, len(b.rows))
		p.cursor = last
		if p.fails > 0 {
			p.log.Info("events.publish_resumed", "after_failures", p.fails, "sent", len(b.rows))
		}
		p.fails, p.retry = 0, time.Time{}
		p.lastErr.Store(nil)
		return Step{Read: len(b.rows), Sent: len(b.rows)}, nil
	}
	// Start the next attempt on fresh connections and metadata, from the
	// first row that was not acknowledged.
	p.dropAhead()
	_ = p.w.Close()
	p.w = nil
	aerr := p.awaitMark()
	through, sent := acknowledgedThrough(b.rows, werr)
	var merr error
	if sent > 0 && aerr == nil && p.lease != nil {
		if merr = p.advance(ctx, through, sent); merr != nil {
			sent = 0
		}
	} else {
		sent = 0
	}
	return Step{Read: len(b.rows), Sent: sent}, p.fail(len(b.rows), sent, errors.Join(werr, aerr, merr))
}

// holdLease makes sure this publisher holds the stream's lease, taking it
// when it is free or expired. held is true when another publisher holds
// it: st then says who and until when (capped at Idle, so a released
// lease is taken soon).
func (p *Publisher) holdLease(ctx context.Context) (st Step, held bool, err error) {
	if p.lease != nil {
		return Step{}, false, nil
	}
	// Look before writing: a standby publisher runs one read per Idle.
	cur, err := p.ob.State(ctx)
	if err != nil {
		return Step{}, false, p.fail(0, 0, err)
	}
	now := p.cfg.Clock.Now()
	if cur.Takeable(p.cfg.Owner, now) {
		l, err := p.ob.AcquireLease(ctx, p.cfg.Owner, p.cfg.LeaseTTL)
		if err == nil {
			if cur.Owner != "" && cur.Owner != p.cfg.Owner {
				p.log.Info("events.publisher_took_over", "owner", p.cfg.Owner, "from", cur.Owner, "token", l.Token, "acked_seq", l.Acked)
			} else {
				p.log.Info("events.publisher_leased", "owner", p.cfg.Owner, "token", l.Token, "acked_seq", l.Acked)
			}
			p.lease, p.cursor = &l, l.Acked
			p.dropAhead()
			return Step{}, false, nil
		}
		var he *events.LeaseHeldError
		if !errors.As(err, &he) {
			return Step{}, false, p.fail(0, 0, err)
		}
		cur.Owner, cur.Until = he.Owner, he.Until
	}
	// Standing by is not a failure.
	p.fails, p.retry = 0, time.Time{}
	p.lastErr.Store(nil)
	return Step{Wait: min(max(cur.Until.Sub(now), time.Millisecond), p.cfg.Idle), Holder: cur.Owner}, true, nil
}

// renewIfDue renews the lease of an idle holder once a third of its TTL
// has passed since the last renewal (every cursor move renews it too).
func (p *Publisher) renewIfDue(ctx context.Context) error {
	if p.lease == nil || p.cfg.Clock.Now().Before(p.renewAt()) {
		return nil
	}
	l, err := p.ob.Renew(ctx, *p.lease)
	return p.leaseResult(l, err)
}

// renewAt is when the held lease is due for renewal.
func (p *Publisher) renewAt() time.Time {
	return p.lease.Until.Add(-p.lease.TTL * 2 / 3)
}

// advance moves the durable cursor to acked (n rows past it) now.
func (p *Publisher) advance(ctx context.Context, acked int64, n int) error {
	l, err := p.ob.Advance(ctx, *p.lease, acked)
	if err == nil {
		p.pub.Add(int64(n))
	}
	return p.leaseResult(l, err)
}

// leaseResult keeps a renewed lease, or forgets a fenced one (the next
// step stands by or takes the lease anew).
func (p *Publisher) leaseResult(l events.Lease, err error) error {
	var lost *events.LeaseLostError
	switch {
	case errors.As(err, &lost):
		p.log.Warn("events.publisher_fenced", "owner", p.cfg.Owner, "token", lost.Token, "holder", lost.Holder, "current_token", lost.Current)
		p.lease = nil
		p.dropAhead()
	case err == nil:
		p.lease = &l
	}
	return err
}

// read reads the rows after cursor and turns them into records.
func (p *Publisher) read(ctx context.Context, after int64) batch {
	rows, err := p.ob.PendingAfter(ctx, after, p.cfg.BatchRows)
	if err != nil {
		return batch{err: err}
	}
	n := len(rows)
	msgs, rows := p.messages(rows)
	return batch{rows: rows, msgs: msgs, more: n == p.cfg.BatchRows || len(rows) < n}
}

// readAhead reads the rows after last in the background.
func (p *Publisher) readAhead(ctx context.Context, last int64) {
	ch := make(chan batch, 1)
	go func() { ch <- p.read(ctx, last) }()
	p.ahead = ch
}

func (p *Publisher) takeAhead() *batch {
	if p.ahead == nil {
		return nil
	}
	b := <-p.ahead
	p.ahead = nil
	return &b
}

// dropAhead discards the read-ahead (the next step rereads from the
// cursor).
func (p *Publisher) dropAhead() { _ = p.takeAhead() }

// observeLag records each acknowledged row's append-to-acknowledgement lag.
func (p *Publisher) observeLag(rows []events.Pending) {
	now := p.cfg.Clock.Now()
	for _, r := range rows {
		if t, err := clock.ParseStamp(r.CreatedAt); err == nil {
			p.lag.Observe(max(now.Sub(t), 0).Seconds())
		}
	}
}

// markAsync moves the durable cursor to acked (n rows past the previous
// one) in the background; awaitMark collects it.
func (p *Publisher) markAsync(ctx context.Context, acked int64, n int) {
	done := make(chan markResult, 1)
	ctx = context.WithoutCancel(ctx) // an acknowledged batch is recorded even if the caller's ctx ends
	l := *p.lease
	go func() {
		nl, err := p.ob.Advance(ctx, l, acked)
		if err == nil {
			p.pub.Add(int64(n))
		}
		done <- markResult{lease: nl, err: err}
	}()
	p.marking = done
}

// awaitMark waits for the background cursor move, if any. On its failure
// the cursor goes back so the next step rereads the rows it did not
// record.
func (p *Publisher) awaitMark() error {
	if p.marking == nil {
		return nil
	}
	r := <-p.marking
	p.marking = nil
	err := p.leaseResult(r.lease, r.err)
	if err != nil && p.lease != nil {
		p.cursor = p.lease.Acked
	}
	return err
}

func (p *Publisher) fail(rows, sent int, err error) error {
	if p.lease != nil {
		p.cursor = p.lease.Acked
	}
	p.fails++
	p.failed.Add(1)
	backoff := p.cfg.BackoffMin
	for i := 1; i < p.fails && backoff < p.cfg.BackoffMax; i++ {
		backoff *= 2
	}
	backoff = min(backoff, p.cfg.BackoffMax)
	p.retry = p.cfg.Clock.Now().Add(backoff)
	var pe error = &PublishError{Rows: rows, Sent: sent, Backoff: backoff, Err: err}
	p.lastErr.Store(&pe)
	p.log.Warn("events.publish_failed", "rows", rows, "sent", sent, "consecutive_failures", p.fails, "backoff_ms", backoff.Milliseconds(), "error", err)
	return pe
}

// messages turns rows into records, stopping before BatchBytes would be
// exceeded, or one partition's share would exceed maxPartitionBytes
// (always keeping the first row). It returns the rows it used.
func (p *Publisher) messages(rows []events.Pending) ([]kafka.Message, []events.Pending) {
	msgs := make([]kafka.Message, 0, len(rows))
	size := 0
	type partition struct {
		topic string
		id    int // -1 while the topic's partition count is not known
	}
	share := map[partition]int{}
	var bal kafka.Murmur2Balancer
	for i, r := range rows {
		hs, err := kafkaHeaders(r.Headers)
		if err != nil {
			// A row this package cannot read was not written by
			// events.Insert; publish it with the headers its message
			// gives rather than hold every later event back.
			var m events.Message
			_ = json.Unmarshal(r.Value, &m)
			hs = hs[:0]
			for _, h := range m.Headers() {
				hs = append(hs, kafka.Header{Key: h.Key, Value: []byte(h.Value)})
			}
		}
		km := kafka.Message{Topic: p.cfg.Topics.For(r.EventType), Key: keyBytes(r.ChainID), Value: r.Value, Headers: hs}
		n := len(km.Value) + len(km.Key) + 64 + 8*len(hs) + len(r.Headers)
		part := partition{km.Topic, -1}
		if np, ok := p.parts.Load(km.Topic); ok && np.(int) > 0 {
			part.id = bal.Balance(km, partitionIDs(np.(int))...)
		}
		if i > 0 && (size+n > p.cfg.BatchBytes || share[part]+n > maxPartitionBytes) {
			return msgs, rows[:i]
		}
		size += n
		share[part] += n
		msgs = append(msgs, km)
	}
	return msgs, rows
}

// keyBytes is a record key sharing the row's chain id (kafka-go only reads
// it); an empty chain id stays an empty, not a null, key.
func keyBytes(chain string) []byte {
	if chain == "" {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(chain), len(chain))
}

var ids = func() []int {
	s := make([]int, 1024)
	for i := range s {
		s[i] = i
	}
	return s
}()

// partitionIDs is 0..n-1, as kafka-go's Writer hands them to its balancer.
func partitionIDs(n int) []int {
	if n <= len(ids) {
		return ids[:n]
	}
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// kafkaHeaders decodes an EventOutbox.headers column (events.EncodeHeaders:
// query-escaped key=value pairs joined by '&') into record headers, in one
// pass and one allocation for the values: a column without escapes shares
// its memory, one with escapes ('%XX', '+') is decoded into one buffer the
// values share. It refuses what events.DecodeHeaders refuses (FuzzKafkaHeaders).
func kafkaHeaders(s string) ([]kafka.Header, error) {
	if s == "" {
		return nil, nil
	}
	shared := !strings.ContainsAny(s, "%+")
	var buf []byte
	if shared {
		buf = unsafe.Slice(unsafe.StringData(s), len(s))
	} else {
		buf = make([]byte, 0, len(s))
	}
	out := make([]kafka.Header, 0, strings.Count(s, "&")+1)
	for off, i := 0, 0; off <= len(s); i++ {
		end := strings.IndexByte(s[off:], '&')
		if end < 0 {
			end = len(s)
		} else {
			end += off
		}
		pair := s[off:end]
		eq := strings.IndexByte(pair, '=')
		if eq < 0 {
			return nil, fmt.Errorf("kafkapub: headers pair %d %q has no '='", i+1, pair)
		}
		k := pair[:eq]
		var v []byte
		if shared {
			v = buf[off+eq+1 : end : end]
		} else {
			if strings.ContainsAny(k, "%+") {
				dk, err := events.DecodeHeaders(k + "=")
				if err != nil {
					return nil, err
				}
				k = dk[0].Key
			}
			from := len(buf)
			var err error
			if buf, err = appendUnescaped(buf, pair[eq+1:]); err != nil {
				return nil, fmt.Errorf("kafkapub: headers pair %d value: %w", i+1, err)
			}
			v = buf[from:len(buf):len(buf)]
		}
		out = append(out, kafka.Header{Key: k, Value: v})
		off = end + 1
	}
	return out, nil
}

// appendUnescaped appends s query-unescaped (url.QueryUnescape: '+' is a
// space, '%XX' a byte) to dst; len(s) bounds what it appends, so dst never
// grows past a buffer sized for the whole column.
func appendUnescaped(dst []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			dst = append(dst, ' ')
		case '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return dst, url.EscapeError(s[i:min(i+3, len(s))])
			}
			dst = append(dst, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		default:
			dst = append(dst, c)
		}
	}
	return dst, nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// acknowledgedThrough returns, after WriteMessages returned err for rows,
// the outbox_seq through which every row was acknowledged and how many
// rows that is: the cursor may move only past an acknowledged prefix. The
// rows after it are resent (the acknowledged ones among them come again as
// exact duplicates, after their first delivery).
func acknowledgedThrough(rows []events.Pending, err error) (int64, int) {
	if err == nil {
		return rows[len(rows)-1].OutboxSeq, len(rows)
	}
	var werrs kafka.WriteErrors
	if !errors.As(err, &werrs) || len(werrs) != len(rows) {
		return 0, 0 // nothing known to be acknowledged
	}
	var through int64
	for i, r := range rows {
		if werrs[i] != nil {
			return through, i
		}
		through = r.OutboxSeq
	}
	return through, len(rows)
}

// Run drains the outbox until ctx ends: immediately while rows remain,
// on Wake (or every Idle) when it is empty, and after a failure when the
// backoff ends. It returns ctx.Err().
//
// Unless Prepare succeeded already, Run first runs it, retrying (with the
// backoff, reported by Health) while the broker cannot be reached; a
// *MissingTopicError stops Run: it returns it and Health keeps reporting it.
func (p *Publisher) Run(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for !p.prepared {
		err := p.Prepare(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var mt *MissingTopicError
		if errors.As(err, &mt) {
			p.lastErr.Store(&err)
			p.failed.Add(1)
			p.log.Error("events.publisher_stopped", "error", err)
			return err
		}
		if err != nil {
			_ = p.fail(0, 0, err)
			timer.Reset(max(p.retry.Sub(p.cfg.Clock.Now()), time.Millisecond))
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-timer.C:
			}
		}
	}
	for {
		var woken <-chan struct{}
		if p.cfg.Wake != nil {
			woken = p.cfg.Wake.Wait() // before the read: a commit after it closes this channel
		}
		st, err := p.Step(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var wait time.Duration
		switch {
		case st.Wait > 0:
			wait, woken = st.Wait, nil
		case err != nil:
			wait, woken = p.retry.Sub(p.cfg.Clock.Now()), nil
		case st.Read > 0:
			continue // a short batch may have been the tail of a burst: look once more
		default:
			wait = p.cfg.Idle
			if p.lease != nil { // an idle holder wakes to renew its lease
				wait = min(wait, p.renewAt().Sub(p.cfg.Clock.Now()))
			}
		}
		timer.Reset(max(wait, time.Millisecond))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-woken:
			if !timer.Stop() {
				<-timer.C
			}
		case <-timer.C:
		}
	}
}

// Stats returns the publisher's counters.
func (p *Publisher) Stats() Stats {
	return Stats{Published: p.pub.Load(), Failures: p.failed.Load()}
}

// Health is nil unless the publisher's last step failed; then it is that
// failure (a *PublishError, or the *MissingTopicError that stopped Run). It is safe to call while Run runs: the
// node's readiness check reports it.
func (p *Publisher) Health() error {
	if pe := p.lastErr.Load(); pe != nil {
		return *pe
	}
	return nil
}

// Collectors are the publisher's metrics: events published, failed steps,
// whether the last step failed, and the append-to-acknowledgement lag.
func (p *Publisher) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "zcgw_events_published_total",
			Help: "Event-outbox rows the broker acknowledged and the publisher's cursor recorded."}, func() float64 { return float64(p.pub.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "zcgw_event_publish_failures_total",
			Help: "Failed publisher steps (broker unreachable, records refused, outbox not readable, cursor not movable)."}, func() float64 { return float64(p.failed.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "zcgw_event_publisher_failing",
			Help: "1 while the publisher's last step failed (it backs off and retries), else 0."}, func() float64 {
			if p.Health() != nil {
				return 1
			}
			return 0
		}),
		p.lag,
	}
}

// Close waits for a background cursor move and read-ahead, releases the
// stream's lease (another node's publisher takes over at once), then
// flushes and closes the Kafka writer. A publisher that was taken over
// meanwhile has nothing to release; that is not an error.
func (p *Publisher) Close() error {
	p.dropAhead()
	err := p.awaitMark()
	if errors.Is(err, events.ErrLeaseLost) {
		err = nil // taken over (logged): the new holder publishes those rows again
	}
	if p.lease != nil {
		ctx, cancel := context.WithTimeout(context.Background(), p.cfg.LeaseTTL)
		err = errors.Join(err, p.ob.ReleaseLease(ctx, *p.lease))
		cancel()
		p.lease = nil
		p.log.Info("events.publisher_released", "owner", p.cfg.Owner)
	}
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
