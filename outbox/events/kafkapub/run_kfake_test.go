package kafkapub_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/outbox/events"
	"github.com/zcgw/zcgw/outbox/events/kafkapub"
)

// record is one delivered record as a consumer sees it.
type record struct {
	seq     int64
	value   []byte
	headers string
}

// readAll reads every record of topic's partitions 0..parts-1 from the
// start, keyed by chain, in partition order.
func readAll(t *testing.T, addr []string, topic string, parts int) map[string][]record {
	t.Helper()
	out := map[string][]record{}
	for p := 0; p < parts; p++ {
		conn, err := kafka.DialLeader(context.Background(), "tcp", addr[0], topic, p)
		if err != nil {
			t.Fatal(err)
		}
		last, err := conn.ReadLastOffset()
		conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: addr, Topic: topic, Partition: p, MaxWait: 100 * time.Millisecond})
		for off := int64(0); off < last; off++ {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			m, err := r.ReadMessage(ctx)
			cancel()
			if err != nil {
				t.Fatalf("partition %d offset %d of %d: %v", p, off, last, err)
			}
			var hs bytes.Buffer
			var seq int64
			for _, h := range m.Headers {
				fmt.Fprintf(&hs, "%s=%s;", h.Key, h.Value)
				if h.Key == events.HeaderEventSeq {
					seq, _ = strconv.ParseInt(string(h.Value), 10, 64)
				}
			}
			out[string(m.Key)] = append(out[string(m.Key)], record{seq: seq, value: m.Value, headers: hs.String()})
		}
		r.Close()
	}
	return out
}

// The broker stops while events keep being appended, and comes back; Run
// (woken by the outbox, backing off on failures) publishes throughout.
// After recovery every event has arrived, each chain's records arrive in
// event_seq order (a resent record never jumps ahead of a missing one),
// and every duplicate is an exact repeat of the first delivery: value and
// headers, byte for byte.
func TestRunThroughBrokerOutage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port, dir := freePort(t), t.TempDir()
	broker := startBroker(t, port, dir)
	addr := []string{fmt.Sprintf("127.0.0.1:%d", port)}
	topic := name(t, "events")
	const parts, chains, rounds = 4, 10, 60
	if err := kafkapub.EnsureTopics(ctx, addr, []string{topic}, parts, 1); err != nil {
		t.Fatal(err)
	}
	c := newCoordinator(t, clock.System{})
	p, err := kafkapub.New(c.ob, kafkapub.Config{Brokers: addr, Topics: kafkapub.Topics{Default: topic}, Wake: events.WakeOf(c.log),
		BatchRows: 25, MaxAttempts: 1, WriteTimeout: time.Second, BackoffMin: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond, Idle: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = p.Run(ctx) }()
	for r := 1; r <= rounds; r++ {
		switch r {
		case 20:
			broker.Close()
		case 45:
			broker = startBroker(t, port, dir)
			defer broker.Close()
		}
		c.appendRound(t, r, chains) // rounds 10, 20, ... add a GLOBAL event
		time.Sleep(3 * time.Millisecond)
	}
	deadline := time.Now().Add(60 * time.Second)
	for c.unsent(t) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d events still unsent after recovery", c.unsent(t))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if p.Stats().Failures == 0 {
		t.Error("no failed step during the outage")
	}
	cancel()
	wg.Wait()

	dups, total := checkRounds(t, addr, topic, parts, chains, rounds)
	t.Logf("%d records, %d duplicates, %d failed steps", total, dups, p.Stats().Failures)
}

// checkRounds reads topic and checks it with checkChains against what
// appendRound wrote for rounds 1..rounds over chains chains.
func checkRounds(t *testing.T, addr []string, topic string, parts, chains, rounds int) (dups, total int) {
	t.Helper()
	want := map[string]int64{"GLOBAL": int64(rounds / 10)}
	for k := 0; k < chains; k++ {
		want[fmt.Sprintf("TX-%03d", k)] = int64(rounds)
	}
	return checkChains(t, readAll(t, addr, topic, parts), want)
}

// checkChains checks the records of each chain (want: chain -> events
// appended): events 1..n all arrived, each first delivery in event_seq
// order (a resent record never jumps ahead of a missing one), and every
// repeat is byte for byte the first delivery (value and headers). It
// returns the repeats and the records.
func checkChains(t *testing.T, got map[string][]record, want map[string]int64) (dups, total int) {
	t.Helper()
	for chain := range got {
		if _, ok := want[chain]; !ok {
			t.Errorf("records of chain %s, which nobody appended to", chain)
		}
	}
	for chain, n := range want {
		total += len(got[chain])
		first := map[int64]record{}
		var top int64
		for i, r := range got[chain] {
			switch {
			case r.seq == top+1:
				top = r.seq
				first[r.seq] = r
			case r.seq >= 1 && r.seq <= top:
				dups++
				if f := first[r.seq]; !bytes.Equal(f.value, r.value) || f.headers != r.headers {
					t.Errorf("%s record %d: event_seq %d repeated with other bytes", chain, i, r.seq)
				}
			default:
				t.Errorf("%s record %d: event_seq %d after %d (out of order)", chain, i, r.seq, top)
			}
		}
		if top != n {
			t.Errorf("%s: events 1..%d arrived, want 1..%d", chain, top, n)
		}
	}
	return dups, total
}

// Run waits on the outbox's Wake: while nothing is appended it reads
// nothing (no statement runs on the database), and an append is published
// at once although Idle is an hour.
func TestRunSleepsUntilWoken(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	topic := name(t, "events")
	if err := kafkapub.EnsureTopics(ctx, brokers, []string{topic}, 1, 1); err != nil {
		t.Fatal(err)
	}
	c := newCoordinator(t, clock.System{})
	p, err := kafkapub.New(c.ob, kafkapub.Config{Brokers: brokers, Topics: kafkapub.Topics{Default: topic}, Wake: events.WakeOf(c.log), Idle: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	time.Sleep(200 * time.Millisecond) // Run has prepared and found the outbox empty
	before := c.db.Stats().Statements
	time.Sleep(300 * time.Millisecond)
	if after := c.db.Stats().Statements; after != before {
		t.Errorf("an idle publisher ran %d statements in 300ms", after-before)
	}
	for r := 1; r <= 3; r++ {
		c.appendRound(t, r, 2)
		deadline := time.Now().Add(5 * time.Second)
		for c.unsent(t) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d not published within 5s (Idle is an hour)", r)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
}

// Without CreateTopics a missing topic stops Run at once with a
// *MissingTopicError naming it, which Health then reports; with it, the
// topics are created and Run publishes.
func TestRunMissingTopic(t *testing.T) {
	ctx := context.Background()
	c := newCoordinator(t, clock.NewManual(t0))
	c.appendRound(t, 1, 2)
	topics := kafkapub.Topics{Default: name(t, "absent"), Families: map[string]string{"Dns": name(t, "dns")}}
	p, err := kafkapub.New(c.ob, kafkapub.Config{Brokers: brokers, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	err = p.Run(ctx)
	var mt *kafkapub.MissingTopicError
	if !errors.As(err, &mt) || fmt.Sprint(mt.Topics) != fmt.Sprint(topics.All()) {
		t.Fatalf("Run with missing topics: %v", err)
	}
	if h := p.Health(); !errors.As(h, &mt) {
		t.Fatalf("Health after the stop: %v", h)
	}
	if n := c.unsent(t); n != 2 {
		t.Fatalf("%d unsent, want 2", n)
	}

	p2, err := kafkapub.New(c.ob, kafkapub.Config{Brokers: brokers, Topics: topics, CreateTopics: &kafkapub.TopicLayout{Partitions: 2, Replication: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if err := p2.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	drain(t, p2, c)
	if _, err := kafkapub.New(c.ob, kafkapub.Config{Brokers: brokers, CreateTopics: &kafkapub.TopicLayout{Partitions: 0, Replication: 1}}); err == nil {
		t.Error("New accepted 0 partitions")
	}
}
