package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/zclog"
	"github.com/zcgw/zcgw/outbox/events"
	"github.com/zcgw/zcgw/outbox/events/kafkapub"
)

// zcgw events: the event outbox (outbox/events) and its Kafka publisher.
func init() {
	register("events", command{
		Summary: "event outbox: tail [--follow] [--from SEQ], status, publish --brokers H:P",
		Run:     runEvents,
	})
}

func eventsUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: zcgw events tail [--follow] [--from SEQ] [--poll DUR]")
	fmt.Fprintln(w, "       zcgw events status")
	fmt.Fprintln(w, "       zcgw events publish --brokers H:P[,H:P] [--topic T] [--family PREFIX=TOPIC]... [--create-topics N]")
	fmt.Fprintln(w, "tail prints one JSON object per outbox row: outbox_seq, sent (the broker acknowledged it), the event message and")
	fmt.Fprintln(w, "its signature check against the KeyRegistry (\"valid\", \"unsigned\" or \"invalid: why\").")
}

func runEvents(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		eventsUsage(e.Stderr)
		return 2
	}
	sub := args[0]
	fs := e.flagSet("events " + sub)
	fs.Usage = func() { eventsUsage(e.Stderr) }
	var (
		follow   *bool
		from     *int64
		poll     *time.Duration
		brokers  *string
		topic    *string
		create   *int
		families = map[string]string{}
	)
	switch sub {
	case "tail":
		follow = fs.Bool("follow", false, "keep waiting for new events (until Ctrl-C)")
		from = fs.Int64("from", 0, "first outbox_seq (FinalityLog event_seq) to print")
		poll = fs.Duration("poll", 200*time.Millisecond, "how often --follow looks for new events")
	case "status":
	case "publish":
		brokers = fs.String("brokers", "", "Kafka bootstrap brokers, comma-separated (required)")
		topic = fs.String("topic", kafkapub.DefaultTopic, "default topic")
		create = fs.Int("create-topics", 0, "create the topics with this many partitions first (0: don't)")
		fs.Func("family", "PREFIX=TOPIC: events whose type starts with PREFIX go to TOPIC (repeatable)", func(s string) error {
			k, v, ok := strings.Cut(s, "=")
			if !ok || k == "" || v == "" {
				return errors.New("want PREFIX=TOPIC")
			}
			families[k] = v
			return nil
		})
	default:
		eventsUsage(e.Stderr)
		return 2
	}
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		eventsUsage(e.Stderr)
		return 2
	}
	db, err := e.openCoordinator(ctx)
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw events:", err)
		return 1
	}
	defer db.Close()
	ob := events.New(db, nil)
	switch sub {
	case "tail":
		keys := events.RegistryKeys(ctx, signing.NewRegistry(db, clock.System{}))
		return eventsTail(ctx, e, ob, keys, *from, *follow, *poll)
	case "status":
		c, err := ob.Counts(ctx)
		if err != nil {
			fmt.Fprintln(e.Stderr, "zcgw events:", err)
			return 1
		}
		st, err := ob.State(ctx)
		if err != nil {
			fmt.Fprintln(e.Stderr, "zcgw events:", err)
			return 1
		}
		fmt.Fprintf(e.Stdout, "events %d, sent %d, unsent %d\n", c.Total, c.Total-c.Unsent, c.Unsent)
		switch {
		case st.Owner != "":
			fmt.Fprintf(e.Stdout, "publisher %s (lease token %d until %s), acknowledged through outbox_seq %d\n", st.Owner, st.Token, clock.Stamp(st.Until), st.Acked)
		default:
			fmt.Fprintf(e.Stdout, "no publisher holds the lease, acknowledged through outbox_seq %d\n", st.Acked)
		}
		return 0
	default:
		return eventsPublish(ctx, e, fs, ob, *brokers, kafkapub.Topics{Default: *topic, Families: families}, *create)
	}
}

// tailLine is one line of `zcgw events tail`.
type tailLine struct {
	OutboxSeq int64           `json:"outbox_seq"`
	Sent      bool            `json:"sent"`
	Signature string          `json:"signature"` // valid | unsigned | invalid: why
	Message   json.RawMessage `json:"message"`
}

func eventsTail(ctx context.Context, e *env, ob *events.Outbox, keys events.PublicKeys, from int64, follow bool, poll time.Duration) int {
	enc := json.NewEncoder(e.Stdout)
	err := ob.Tail(ctx, from, follow, poll, func(r events.Row) error {
		return enc.Encode(tailLine{OutboxSeq: r.OutboxSeq, Sent: r.Sent,
			Signature: signatureVerdict(r, keys), Message: json.RawMessage(r.MessageJSON)})
	})
	if err != nil && !(follow && errors.Is(err, context.Canceled)) {
		fmt.Fprintln(e.Stderr, "zcgw events tail:", err)
		return 1
	}
	return 0
}

// signatureVerdict checks one stored event's signature block.
func signatureVerdict(r events.Row, keys events.PublicKeys) string {
	m, err := r.Message()
	if err != nil {
		return "invalid: " + err.Error()
	}
	if m.Signature == nil {
		return "unsigned"
	}
	if err := events.VerifySignature(m, keys); err != nil {
		var se *events.SignatureError
		if errors.As(err, &se) {
			return "invalid: " + se.Reason
		}
		return "invalid: " + err.Error()
	}
	return "valid"
}

func eventsPublish(ctx context.Context, e *env, fs *flag.FlagSet, ob *events.Outbox, brokers string, topics kafkapub.Topics, partitions int) int {
	var list []string
	for _, b := range strings.Split(brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			list = append(list, b)
		}
	}
	if len(list) == 0 {
		fmt.Fprintln(e.Stderr, "zcgw events publish: --brokers is required (without brokers events stay in the outbox)")
		fs.Usage()
		return 2
	}
	if partitions > 0 {
		if err := kafkapub.EnsureTopics(ctx, list, topics.All(), partitions, 1); err != nil {
			fmt.Fprintln(e.Stderr, "zcgw events publish:", err)
			return 1
		}
	}
	logger := zclog.New(e.Stderr, zclog.Options{})
	// Another process appends (the node): no in-process Wake reaches this
	// one, so it looks every Idle.
	p, err := kafkapub.New(ob, kafkapub.Config{Brokers: list, Topics: topics, Logger: logger, Idle: 100 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw events publish:", err)
		return 1
	}
	fmt.Fprintf(e.Stdout, "publishing the event outbox to %s (topics %s); Ctrl-C stops\n", strings.Join(list, ","), strings.Join(topics.All(), ","))
	if err := p.Run(ctx); ctx.Err() == nil { // Run returns early only for a missing topic
		fmt.Fprintf(e.Stderr, "zcgw events publish: %v (--create-topics N creates missing topics)\n", err)
		_ = p.Close()
		return 1
	}
	if err := p.Close(); err != nil {
		fmt.Fprintln(e.Stderr, "zcgw events publish:", err)
		return 1
	}
	fmt.Fprintf(e.Stdout, "published %d events\n", p.Stats().Published)
	return 0
}
