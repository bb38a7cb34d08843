package consume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/zcgw/zcgw/coordinator/zclog"
	"github.com/zcgw/zcgw/outbox/events"
)

// Config configures a Consumer. Zero durations take the defaults noted;
// they are the values that work against kfake and a real broker alike.
type Config struct {
	Brokers []string // bootstrap brokers (required)
	GroupID string   // consumer group (required)
	Topics  []string // topics to read (required); create them before starting

	MaxWait           time.Duration // longest broker wait per fetch (250ms; kafka-go's 10s makes Close take ~9s)
	HeartbeatInterval time.Duration // group heartbeat (250ms)
	SessionTimeout    time.Duration // group session (6s; kfake refuses less)
	FetchTimeout      time.Duration // deadline of each fetch (2s): Next returns ErrNoMessage after it
	StartOffset       int64         // where a new group starts (kafka.FirstOffset)

	// SkipRefused: a refused (rewound) or undecodable record is recorded
	// in EventConsumerRejected and committed past. When false (the
	// default) Run stops with the error and the record is not committed,
	// so the consumer resumes at it after an operator's fix.
	SkipRefused bool

	// Keys, when set, verifies every event's §12.2 signature
	// (events.VerifySignature; events.RegistryKeys reads the coordinator's
	// KeyRegistry). A missing or failing signature refuses the record as
	// a *DecodeError on value.signature (EXTERNAL_SIGNATURE_INVALID, or
	// the key's own code such as KEY_REVOKED).
	Keys events.PublicKeys

	Logger *slog.Logger
}

// ErrNoMessage: no record arrived within FetchTimeout.
var ErrNoMessage = errors.New("consume: no message within the fetch timeout")

// Consumer reads event records of a group and processes each exactly once
// through a Processor.
type Consumer struct {
	cfg  Config
	r    *kafka.Reader
	proc *Processor
	h    Handler
	log  *slog.Logger
}

// NewConsumer returns a Consumer; it joins the group on the first fetch.
func NewConsumer(cfg Config, proc *Processor, h Handler) (*Consumer, error) {
	if len(cfg.Brokers) == 0 || cfg.GroupID == "" || len(cfg.Topics) == 0 {
		return nil, fmt.Errorf("consume: brokers, group id and topics are required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.MaxWait, 250*time.Millisecond)
	def(&cfg.HeartbeatInterval, 250*time.Millisecond)
	def(&cfg.SessionTimeout, 6*time.Second)
	def(&cfg.FetchTimeout, 2*time.Second)
	if cfg.StartOffset == 0 {
		cfg.StartOffset = kafka.FirstOffset
	}
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           cfg.Brokers,
		GroupID:           cfg.GroupID,
		GroupTopics:       cfg.Topics,
		MaxWait:           cfg.MaxWait,
		HeartbeatInterval: cfg.HeartbeatInterval,
		SessionTimeout:    cfg.SessionTimeout,
		RebalanceTimeout:  cfg.SessionTimeout,
		JoinGroupBackoff:  100 * time.Millisecond,
		ReadBackoffMin:    10 * time.Millisecond,
		ReadBackoffMax:    250 * time.Millisecond,
		StartOffset:       cfg.StartOffset,
		CommitInterval:    0, // synchronous commits, after the transaction
	})
	return &Consumer{cfg: cfg, r: r, proc: proc, h: h, log: zclog.OrDiscard(cfg.Logger)}, nil
}

// Next fetches one record (waiting at most FetchTimeout), decodes it,
// processes it and commits its offset after the transaction committed. It
// returns ErrNoMessage when nothing arrived, a *DecodeError or
// *RewindError for a refused record (committed past and recorded when
// SkipRefused), or the handler's error (not committed: redelivered later).
// After an error for a record that was not committed, Close the Consumer
// (Run does stop): a later Next would commit a later offset and with it,
// implicitly, the skipped record.
func (c *Consumer) Next(ctx context.Context) (Event, Result, error) {
	fctx, cancel := context.WithTimeout(ctx, c.cfg.FetchTimeout)
	m, err := c.r.FetchMessage(fctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return Event{}, Result{}, ErrNoMessage
		}
		return Event{}, Result{}, fmt.Errorf("consume: fetch: %w", err)
	}
	ev, err := Decode(m)
	if err == nil && c.cfg.Keys != nil {
		err = verify(m, ev, c.cfg.Keys)
	}
	if err == nil {
		var res Result
		res, err = c.proc.Process(ctx, ev, c.h)
		if err == nil {
			if cerr := c.r.CommitMessages(ctx, m); cerr != nil {
				return ev, res, fmt.Errorf("consume: commit %s/%d@%d (processed; a redelivery is a duplicate): %w", m.Topic, m.Partition, m.Offset, cerr)
			}
			return ev, res, nil
		}
	}
	var de *DecodeError
	var rw *RewindError
	if !errors.As(err, &de) && !errors.As(err, &rw) {
		return ev, Result{}, err
	}
	if !c.cfg.SkipRefused {
		return ev, Result{}, err
	}
	if rerr := c.proc.Reject(ctx, m.Topic, m.Partition, m.Offset, ev.ChainID, ev.EventSeq, ev.MessageID, err); rerr != nil {
		return ev, Result{}, errors.Join(err, rerr)
	}
	if cerr := c.r.CommitMessages(ctx, m); cerr != nil {
		return ev, Result{}, errors.Join(err, fmt.Errorf("consume: commit past rejected record: %w", cerr))
	}
	return ev, Result{}, err
}

// Run processes records until ctx ends (returning ctx.Err()) or a record
// fails: a handler error or, without SkipRefused, a refused record.
func (c *Consumer) Run(ctx context.Context) error {
	for {
		_, _, err := c.Next(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var de *DecodeError
		var rw *RewindError
		switch {
		case err == nil, errors.Is(err, ErrNoMessage):
		case c.cfg.SkipRefused && (errors.As(err, &de) || errors.As(err, &rw)):
		default:
			return err
		}
	}
}

// Close leaves the group and closes the reader.
func (c *Consumer) Close() error { return c.r.Close() }
