package kafkapub_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox/events"
	"github.com/zcgw/zcgw/outbox/events/consume"
	"github.com/zcgw/zcgw/outbox/events/kafkapub"
)

// BenchmarkPublish: events/s drained from a filled outbox to kfake on
// loopback (6 partitions, 100 chains, the publisher's defaults) with the
// at-least-once bookkeeping (the cursor moves past each acknowledged step).
// In the same run, on the same rows, it measures the two halves alone:
//
//   - kfake-raw-events/s: the same records in the same steps written by
//     the same kafka-go Writer, nothing read or recorded;
//   - bookkeeping-raw-events/s: the same steps read from the outbox and
//     the cursor moved past each (one commit per step), nothing written to
//     Kafka.
//
// The publisher overlaps the two (the next step is read and the previous
// one recorded while a step is on the wire), so events/s close to the
// lower of the two says the other is hidden.
func BenchmarkPublish(b *testing.B) {
	ctx := context.Background()
	topic := name(b, fmt.Sprint(b.N))
	if err := kafkapub.EnsureTopics(ctx, brokers, []string{topic}, 6, 1); err != nil {
		b.Fatal(err)
	}
	c := newCoordinator(b, clock.NewManual(t0))
	for done := 0; done < b.N; {
		if err := c.db.Write(ctx, func(tx *store.Tx) error {
			for k := 0; k < 1000 && done < b.N; k, done = k+1, done+1 {
				if _, err := c.log.Append(ctx, tx, finality.Event{TxID: fmt.Sprintf("TX-%03d", done%100), Type: finality.HReserved, StateTo: "RESERVED",
					Payload: map[string]any{"amount": done, "payer": "0001", "payee": "0002"}}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	cfg := kafkapub.Config{Brokers: brokers, Topics: kafkapub.Topics{Default: topic}}
	p, err := kafkapub.New(c.ob, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	b.ResetTimer()
	cpu0 := cpuTime()
	for {
		st, err := p.Step(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if st.Read == 0 && st.Wait == 0 {
			break
		}
	}
	if err := p.Close(); err != nil { // the last step's cursor move
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/event")
	if got := p.Stats().Published; got != int64(b.N) {
		b.Fatalf("published %d of %d", got, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")

	// The same steps, prepared beforehand (the publisher has learned the
	// partition count, so each step has the same per-partition cap).
	var steps [][]kafka.Message
	var bytes int
	for after := int64(0); ; {
		rows, err := c.ob.PendingAfter(ctx, after, 5000)
		if err != nil {
			b.Fatal(err)
		}
		if len(rows) == 0 {
			break
		}
		msgs, used := p.Messages(rows)
		for _, m := range msgs {
			bytes += len(m.Value) + len(m.Key)
			for _, h := range m.Headers {
				bytes += len(h.Key) + len(h.Value)
			}
		}
		steps = append(steps, msgs)
		after = used[len(used)-1].OutboxSeq
	}
	b.ReportMetric(float64(bytes)/float64(b.N), "record-bytes/event")
	b.ReportMetric(float64(b.N)/float64(len(steps)), "events/step")
	raw := &kafka.Writer{Addr: kafka.TCP(brokers...), Balancer: &kafka.Murmur2Balancer{}, RequiredAcks: kafka.RequireAll,
		BatchSize: 5000, BatchBytes: 1 << 20, BatchTimeout: 2 * time.Millisecond, Compression: kafka.Lz4} // as the publisher (Config.Compression default)
	defer raw.Close()
	start, cpu0 := time.Now(), cpuTime()
	for _, msgs := range steps {
		if err := raw.WriteMessages(ctx, msgs...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "kfake-raw-events/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "kfake-raw-cpu-µs/event")

	// Bookkeeping alone: read each step's rows after the cursor and move
	// the cursor past them, from the start of the outbox again.
	if err := c.db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE EventPublisher SET acked_seq = 0, owner = '', lease_until = ''`)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	lease, err := c.ob.AcquireLease(ctx, "bench/raw/events", time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	start, cpu0 = time.Now(), cpuTime()
	for i, n := 0, 0; n < b.N; i++ {
		rows, err := c.ob.PendingAfter(ctx, lease.Acked, len(steps[min(i, len(steps)-1)]))
		if err != nil {
			b.Fatal(err)
		}
		if lease, err = c.ob.Advance(ctx, lease, rows[len(rows)-1].OutboxSeq); err != nil {
			b.Fatal(err)
		}
		n += len(rows)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "bookkeeping-raw-events/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "bookkeeping-raw-cpu-µs/event")
	b.ReportMetric(0, "ns/op")
}

// cpuTime is the process's CPU time so far (user + system, every
// goroutine, the in-process broker included): per event it says what the
// machine pays whatever else runs on it.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEndToEndLag: from a FinalityLog append (the entry's
// occurred_at, read from the clock inside the store.Write that appends it
// with the outbox hook) to a consumer's handler running for it, with the
// publisher's Run (woken by the outbox's Wake) and the consumer running
// concurrently. Appends are paced as the coordinator's group commit would
// gather them: one transaction at a time appends every entry due by then
// at the rate, over 50 chains (about rate/500 per transaction when on
// time, more when the previous commit took longer, at most rate/100).
//
//   - library: the exactly-once consumer (consume.Consumer, one fsynced
//     transaction per event) at 200 events/s, the rate one such consumer
//     sustains;
//   - reader: a kafka-go group reader whose handler only records the lag,
//     at 2,000 and 5,000 events/s.
func BenchmarkEndToEndLag(b *testing.B) {
	b.Run("library-200/s", func(b *testing.B) { benchLag(b, 200, true) })
	b.Run("reader-2000/s", func(b *testing.B) { benchLag(b, 2000, false) })
	b.Run("reader-5000/s", func(b *testing.B) { benchLag(b, 5000, false) })
}

func benchLag(b *testing.B, rate int, library bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	topic := name(b, fmt.Sprint(b.N))
	if err := kafkapub.EnsureTopics(ctx, brokers, []string{topic}, 6, 1); err != nil {
		b.Fatal(err)
	}
	c := newCoordinator(b, clock.System{})
	p, err := kafkapub.New(c.ob, kafkapub.Config{Brokers: brokers, Topics: kafkapub.Topics{Default: topic}, Wake: events.WakeOf(c.log)})
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	lags := make([]time.Duration, 0, b.N)
	record := func(occurredAt string) error {
		t, err := clock.ParseStamp(occurredAt)
		if err != nil {
			return err
		}
		mu.Lock()
		lags = append(lags, time.Since(t))
		mu.Unlock()
		return nil
	}
	var wg sync.WaitGroup
	var seen func() int64
	if library {
		d := newDownstream(b)
		cons, err := consume.NewConsumer(consume.Config{Brokers: brokers, GroupID: topic, Topics: []string{topic}, FetchTimeout: 500 * time.Millisecond}, d.proc,
			func(ctx context.Context, tx *store.Tx, ev consume.Event) error {
				if err := record(ev.OccurredAt); err != nil {
					return err
				}
				return d.handle(ctx, tx, ev)
			})
		if err != nil {
			b.Fatal(err)
		}
		defer cons.Close()
		if _, _, err := cons.Next(ctx); err != nil && err != consume.ErrNoMessage { // join the group before measuring
			b.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = cons.Run(ctx) }()
		seen = func() int64 { return d.proc.Stats().Applied }
	} else {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, GroupID: topic, GroupTopics: []string{topic}, MaxWait: 250 * time.Millisecond,
			HeartbeatInterval: 250 * time.Millisecond, SessionTimeout: 6 * time.Second, RebalanceTimeout: 6 * time.Second, StartOffset: kafka.FirstOffset})
		defer r.Close()
		var n atomic.Int64
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := r.FetchMessage(ctx)
				if err != nil {
					return
				}
				ev, err := consume.Decode(m)
				if err == nil {
					err = record(ev.OccurredAt)
				}
				if err != nil {
					b.Error(err)
					return
				}
				n.Add(1)
			}
		}()
		seen = n.Load
		time.Sleep(time.Second) // join the group before measuring
	}
	wg.Add(1)
	go func() { defer wg.Done(); _ = p.Run(ctx) }()

	b.ResetTimer()
	start := time.Now()
	// One appender, as the coordinator's group commit: each transaction
	// appends every entry due by then at rate (over 50 chains), at most
	// 10ms worth of them (a machine that cannot keep up falls behind
	// instead of building ever larger transactions), and the next starts
	// when it has committed, or 2ms later when it was on time. The rate
	// reached is reported as appends/s.
	most := max(rate/100, 1)
	tick := time.NewTicker(2 * time.Millisecond)
	var appends sync.WaitGroup
	appends.Add(1)
	go func() {
		defer appends.Done()
		for i := 0; i < b.N; {
			due := min(b.N, int(float64(rate)*time.Since(start).Seconds()), i+most)
			if due <= i {
				<-tick.C
				continue
			}
			if err := c.db.Write(ctx, func(tx *store.Tx) error {
				for k := i; k < due; k++ {
					if _, err := c.log.Append(ctx, tx, finality.Event{TxID: fmt.Sprintf("TX-%02d", k%50), Type: finality.HReserved, StateTo: "RESERVED",
						Payload: map[string]int{"n": k}}); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				b.Error(err)
				return
			}
			i = due
		}
	}()
	appends.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "appends/s")
	tick.Stop()
	deadline := time.Now().Add(60 * time.Second)
	for seen() < int64(b.N) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	b.StopTimer()
	cancel()
	wg.Wait()
	p.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(lags) != b.N {
		b.Fatalf("consumer saw %d of %d events", len(lags), b.N)
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	pct := func(q float64) float64 { return float64(lags[int(q*float64(len(lags)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}
