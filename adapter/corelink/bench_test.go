package corelink_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/adapter/mq/amqp1"
	"github.com/zcgw/zcgw/adapter/mq/embedded"
	"github.com/zcgw/zcgw/adapter/mq/rabbit"
	"github.com/zcgw/zcgw/coordinator/store"
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

// ApplyBatch times one batch (the latency of each of its postings).
func (c *timedCore) ApplyBatch(ctx context.Context, ps []outbox.Posting) []outbox.BatchResult {
	start := time.Now()
	r := c.Core.(outbox.BatchCore).ApplyBatch(ctx, ps)
	d := time.Since(start)
	c.mu.Lock()
	for range ps {
		c.lat = append(c.lat, d)
	}
	c.mu.Unlock()
	return r
}

// benchAccounts is how many accounts the drained postings spread over: the
// outbox keeps one posting per account in flight, so a batch holds at
// most one posting of each account (RunConfig.Accounts, 64, per batch).
const benchAccounts = 256

// benchBatch is the outbox's batch bound in the benchmark (RunConfig.Accounts).
const benchBatch = 64

// benchDrain enqueues b.N credit postings over benchAccounts accounts and
// drains them with one outbox.Run loop (as the node runs it) through the
// transport to a simulated core serving its queue: claim batch (commit),
// request batch (one MQ unit), core batch (one core commit, replies in one
// unit), replies got together, outcomes (commit).
func benchDrain(b *testing.B, w *world, pipeline int) {
	ctx := context.Background()
	for a := 0; a < benchAccounts; a++ {
		w.open(b, fmt.Sprintf("001-1-%07d", a+1), "ﾃｽﾄ", 0)
	}
	tc := &timedCore{Core: w.link}
	ob, _ := outbox.New(outbox.Config{DB: w.db, Core: tc, Cases: w.cases})
	var ps []outbox.Posting
	for i := 0; i < b.N; i++ {
		ps = append(ps, posting(fmt.Sprintf("BN%08d", i), fmt.Sprintf("001-1-%07d", i%benchAccounts+1), outbox.Credit, 1))
	}
	for i := 0; i < len(ps); i += 500 {
		w.enqueue(b, ps[i:min(i+500, len(ps))]...)
	}
	mqStats := func() int64 { // mq.db commits (embedded only; 0 otherwise)
		if e, ok := w.tr.(*embedded.Transport); ok {
			return e.Stats().Commits
		}
		return 0
	}
	mq0, ad0, core0, cpu0 := mqStats(), w.db.Stats().Commits, w.core.DB().Stats().Commits, cpuTime()
	b.ResetTimer()
	start := time.Now()
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ob.Run(rctx, outbox.RunConfig{Pipeline: pipeline, Accounts: benchBatch}) }()
	ob.Wake()
	for {
		c, err := ob.Counts(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if c[outbox.Applied] == b.N {
			break
		}
		if c[outbox.Blocked]+c[outbox.InDoubt] > 0 {
			b.Fatalf("not applied: %v", c)
		}
		time.Sleep(20 * time.Millisecond)
	}
	el := time.Since(start)
	b.StopTimer()
	mq1, ad1, core1, cpu1 := mqStats(), w.db.Stats().Commits, w.core.DB().Stats().Commits, cpuTime()
	stop()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	var journal int
	if err := w.core.DB().Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM CoreJournal WHERE ref LIKE 'BN%'`).Scan(&journal)
	}); err != nil {
		b.Fatal(err)
	}
	if journal != b.N {
		b.Fatalf("core journalled %d postings of %d", journal, b.N)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "postings/s")
	// Per posting, the figures a loaded machine does not blur: CPU of the
	// whole process (outbox, link, transport, simulated core) and commits
	// (fsyncs) of each file.
	b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "cpu-us/posting")
	if mq1 > 0 {
		b.ReportMetric(float64(mq1-mq0)/float64(b.N), "mq-commits/posting")
	}
	b.ReportMetric(float64(ad1-ad0)/float64(b.N), "adapter-commits/posting")
	b.ReportMetric(float64(core1-core0)/float64(b.N), "core-commits/posting")
	b.ReportMetric(float64(tc.percentile(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(tc.percentile(0.99).Microseconds())/1000, "p99-ms")
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDrainEmbedded: postings drained end to end (outbox claim,
// request/reply over the embedded transport, core posting, outbox record),
// a batch at every hop.
func BenchmarkDrainEmbedded(b *testing.B) {
	for _, p := range []int{1, 2} {
		b.Run(fmt.Sprintf("pipeline=%d", p), func(b *testing.B) { benchDrain(b, newWorld(b, 10*time.Second), p) })
	}
}

// BenchmarkDrainRabbit is BenchmarkDrainEmbedded over RabbitMQ.
func BenchmarkDrainRabbit(b *testing.B) {
	tr := rabbitOrSkip(b)
	for _, p := range []int{1, 2} {
		b.Run(fmt.Sprintf("pipeline=%d", p), func(b *testing.B) {
			benchDrain(b, newWorldOn(b, b.TempDir(), tr, 10*time.Second, fmt.Sprintf(".B%d", time.Now().UnixNano())), p)
		})
	}
}

// BenchmarkDrainAMQP1 is BenchmarkDrainEmbedded over AMQP 1.0 (RabbitMQ's
// rabbitmq_amqp1_0 plugin; queues declared over AMQP 0-9-1).
func BenchmarkDrainAMQP1(b *testing.B) {
	rabbitOrSkip(b)
	tr := amqp1.New(rabbitURL, amqp1.Options{PollInterval: 2 * time.Millisecond, Admin: rabbit.New(rabbitURL, rabbit.Options{})})
	benchDrain(b, newWorldOn(b, b.TempDir(), tr, 10*time.Second, fmt.Sprintf(".A%d", time.Now().UnixNano())), 1)
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

// benchRawBatch measures the transport alone, batched as the posting path
// uses it: 64 240-byte messages put in one unit of work and committed,
// then got with one GetBatch and committed. It reports messages/s.
func benchRawBatch(b *testing.B, tr mq.Transport, queue string) {
	const batch = 64
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
	for done := 0; done < b.N; {
		n := min(batch, b.N-done)
		for i := 0; i < n; i++ {
			if err := s.Put(ctx, queue, &mq.Message{Body: body}); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < n; {
			gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			ms, err := mq.GetBatch(gctx, s, queue, n-got)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			got += len(ms)
		}
		if err := s.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		done += n
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "putget/s")
}

func BenchmarkRawPutGetBatchEmbedded(b *testing.B) {
	benchRawBatch(b, embedded.New(filepath.Join(b.TempDir(), "mq.db"), embedded.Options{}), "RAW.BENCH")
}

func BenchmarkRawPutGetBatchRabbit(b *testing.B) {
	benchRawBatch(b, rabbitOrSkip(b), fmt.Sprintf("RAW.BENCH.%d", time.Now().UnixNano()))
}
