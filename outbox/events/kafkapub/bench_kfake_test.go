package kafkapub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox/events/consume"
	"github.com/zcgw/zcgw/outbox/events/kafkapub"
)

// BenchmarkPublish: events/s drained from a filled outbox to kfake on
// loopback (6 partitions, 100 chains, sync Writer, 500 rows per step).
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
	p, err := kafkapub.New(c.ob, kafkapub.Config{Brokers: brokers, Topics: kafkapub.Topics{Default: topic}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	b.ResetTimer()
	for c.unsent(b) > 0 {
		if _, err := p.Step(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if got := p.Stats().Published; got != int64(b.N) {
		b.Fatalf("published %d of %d", got, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkEndToEndLag: from the start of the store.Write that appends a
// FinalityLog entry (finality.Log.Append with the outbox hook) to the
// consumer handler running for it, with the publisher's Run and one
// consumer running concurrently. Appends are paced at 200/s over 50 chains,
// one entry per transaction (each commit is fsynced, on both sides).
func BenchmarkEndToEndLag(b *testing.B) {
	for _, idle := range []time.Duration{2 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond} {
		b.Run("idle="+idle.String(), func(b *testing.B) { benchLag(b, idle) })
	}
}

func benchLag(b *testing.B, idle time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	topic := name(b, fmt.Sprint(b.N))
	if err := kafkapub.EnsureTopics(ctx, brokers, []string{topic}, 6, 1); err != nil {
		b.Fatal(err)
	}
	c := newCoordinator(b, clock.System{})
	p, err := kafkapub.New(c.ob, kafkapub.Config{Brokers: brokers, Topics: kafkapub.Topics{Default: topic}, Idle: idle})
	if err != nil {
		b.Fatal(err)
	}
	d := newDownstream(b)
	var mu sync.Mutex
	lags := make([]time.Duration, 0, b.N)
	handler := func(ctx context.Context, tx *store.Tx, ev consume.Event) error {
		var pl struct{ T int64 }
		if err := json.Unmarshal(ev.Body.Payload, &pl); err != nil {
			return err
		}
		mu.Lock()
		lags = append(lags, time.Since(time.Unix(0, pl.T)))
		mu.Unlock()
		return d.handle(ctx, tx, ev)
	}
	cons, err := consume.NewConsumer(consume.Config{Brokers: brokers, GroupID: topic, Topics: []string{topic}, FetchTimeout: 500 * time.Millisecond}, d.proc, handler)
	if err != nil {
		b.Fatal(err)
	}
	// Join the group before measuring.
	if _, _, err := cons.Next(ctx); err != nil && err != consume.ErrNoMessage {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = p.Run(ctx) }()
	go func() { defer wg.Done(); _ = cons.Run(ctx) }()

	b.ResetTimer()
	tick := time.NewTicker(5 * time.Millisecond)
	for i := 0; i < b.N; i++ {
		<-tick.C
		if err := c.db.Write(ctx, func(tx *store.Tx) error {
			_, err := c.log.Append(ctx, tx, finality.Event{TxID: fmt.Sprintf("TX-%02d", i%50), Type: finality.HReserved, StateTo: "RESERVED",
				Payload: map[string]int64{"t": time.Now().UnixNano()}})
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	tick.Stop()
	deadline := time.Now().Add(30 * time.Second)
	for d.proc.Stats().Applied < int64(b.N) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	b.StopTimer()
	cancel()
	wg.Wait()
	p.Close()
	cons.Close()
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
