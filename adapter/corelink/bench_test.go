package corelink_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/adapter/mq/amqp1"
	"github.com/zcgw/zcgw/adapter/mq/embedded"
	"github.com/zcgw/zcgw/adapter/mq/rabbit"
	"github.com/zcgw/zcgw/outbox"
)

const rabbitURL = "amqp://guest:guest@127.0.0.1:5672/"

// timedCore records the request/reply latency of every Apply.
type timedCore struct {
	outbox.Core
	mu  sync.Mutex
	lat []time.Duration
}

func (c *timedCore) Apply(ctx context.Context, p outbox.Posting) (outbox.ApplyResult, error) {
	start := time.Now()
	r, err := c.Core.Apply(ctx, p)
	d := time.Since(start)
	c.mu.Lock()
	c.lat = append(c.lat, d)
	c.mu.Unlock()
	return r, err
}

func (c *timedCore) percentile(p float64) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.lat) == 0 {
		return 0
	}
	s := slices.Clone(c.lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func rabbitOrSkip(b *testing.B) mq.Transport {
	tr := rabbit.New(rabbitURL, rabbit.Options{PollInterval: 2 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := tr.Connect(ctx)
	if err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatalf("RabbitMQ at %s: %v", rabbitURL, err)
		}
		b.Skipf("RabbitMQ not reachable at %s: %v", rabbitURL, err)
	}
	conn.Close()
	return tr
}

func rabbitOrSkipT(t *testing.T) mq.Transport {
	tr := rabbit.New(rabbitURL, rabbit.Options{PollInterval: 2 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := tr.Connect(ctx)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("RabbitMQ at %s: %v", rabbitURL, err)
		}
		t.Skipf("RabbitMQ not reachable at %s: %v", rabbitURL, err)
	}
	conn.Close()
	return tr
}

// benchDrain enqueues b.N postings over 16 accounts and drains them with
// 4 concurrent drainers through the transport to a simulated core.
func benchDrain(b *testing.B, w *world) {
	ctx := context.Background()
	const accounts, drainers = 16, 4
	for a := 0; a < accounts; a++ {
		w.open(b, fmt.Sprintf("001-1-%07d", a+1), "ﾃｽﾄ", 0)
	}
	tc := &timedCore{Core: w.link}
	ob, _ := outbox.New(outbox.Config{DB: w.db, Core: tc, Cases: w.cases})
	var ps []outbox.Posting
	for i := 0; i < b.N; i++ {
		ps = append(ps, posting(fmt.Sprintf("BN%08d", i), fmt.Sprintf("001-1-%07d", i%accounts+1), outbox.Credit, 1))
	}
	for i := 0; i < len(ps); i += 500 {
		w.enqueue(b, ps[i:min(i+500, len(ps))]...)
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for g := 0; g < drainers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				res, err := ob.Drain(ctx, 50)
				if err != nil {
					b.Error(err)
					return
				}
				if res.Claimed == 0 {
					c, _ := ob.Counts(ctx)
					if c[outbox.Pending]+c[outbox.Claimed] == 0 {
						return
					}
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	c, _ := ob.Counts(ctx)
	if c[outbox.Applied] != b.N {
		b.Fatalf("applied %d of %d: %v", c[outbox.Applied], b.N, c)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "postings/s")
	b.ReportMetric(float64(tc.percentile(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(tc.percentile(0.99).Microseconds())/1000, "p99-ms")
}

// BenchmarkDrainEmbedded: postings drained end to end (outbox claim,
// request/reply over the embedded transport, core posting, outbox record).
func BenchmarkDrainEmbedded(b *testing.B) {
	benchDrain(b, newWorld(b, 10*time.Second))
}

// BenchmarkDrainRabbit is BenchmarkDrainEmbedded over RabbitMQ.
func BenchmarkDrainRabbit(b *testing.B) {
	tr := rabbitOrSkip(b)
	benchDrain(b, newWorldOn(b, b.TempDir(), tr, 10*time.Second, fmt.Sprintf(".B%d", time.Now().UnixNano())))
}

// BenchmarkDrainAMQP1 is BenchmarkDrainEmbedded over AMQP 1.0 (RabbitMQ's
// rabbitmq_amqp1_0 plugin; queues declared over AMQP 0-9-1).
func BenchmarkDrainAMQP1(b *testing.B) {
	rabbitOrSkip(b)
	tr := amqp1.New(rabbitURL, amqp1.Options{PollInterval: 2 * time.Millisecond, Admin: rabbit.New(rabbitURL, rabbit.Options{})})
	benchDrain(b, newWorldOn(b, b.TempDir(), tr, 10*time.Second, fmt.Sprintf(".A%d", time.Now().UnixNano())))
}

// benchRaw measures the transport alone: put+commit then get+commit of a
// 240-byte message (a coremsg posting request's size), one after the other.
func benchRaw(b *testing.B, tr mq.Transport, queue string) {
	ctx := context.Background()
	conn, err := tr.Connect(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	if err := conn.DeclareQueue(ctx, mq.QueueSpec{Name: queue}); err != nil {
		b.Fatal(err)
	}
	defer conn.DeleteQueue(ctx, queue)
	s, err := conn.Session(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	body := make([]byte, 240)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := s.Put(ctx, queue, &mq.Message{Body: body}); err != nil {
			b.Fatal(err)
		}
		if err := s.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Get(ctx, queue, mq.Any); err != nil {
			b.Fatal(err)
		}
		if err := s.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "putget/s")
}

func BenchmarkRawPutGetEmbedded(b *testing.B) {
	benchRaw(b, embedded.New(filepath.Join(b.TempDir(), "mq.db"), embedded.Options{}), "RAW.BENCH")
}

func BenchmarkRawPutGetRabbit(b *testing.B) {
	benchRaw(b, rabbitOrSkip(b), fmt.Sprintf("RAW.BENCH.%d", time.Now().UnixNano()))
}
