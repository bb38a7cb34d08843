package mqtest

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/mq"
)

func benchConn(b *testing.B, tr mq.Transport, queues ...string) (mq.Connection, []string) {
	b.Helper()
	ctx := context.Background()
	c, err := tr.Connect(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	prefix := "mqbench." + mq.NewID().String()[:10] + "."
	names := make([]string, len(queues))
	for i, q := range queues {
		names[i] = prefix + q
		if err := c.DeclareQueue(ctx, mq.QueueSpec{Name: names[i]}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.DeleteQueue(context.Background(), names[i]) })
	}
	return c, names
}

// BenchmarkPutGet measures the raw transport rate: per op, put one
// 256-byte persistent message and commit, then get it and commit. It
// reports msgs/s.
func BenchmarkPutGet(b *testing.B, tr mq.Transport) {
	c, qs := benchConn(b, tr, "putget")
	ctx := context.Background()
	s, err := c.Session(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	body := make([]byte, 256)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := s.Put(ctx, qs[0], &mq.Message{Body: body}); err != nil {
			b.Fatal(err)
		}
		if err := s.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := s.Get(gctx, qs[0], mq.Any)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkRequestReply measures request/reply round trips through
// mq.Request against a responder that gets, replies and commits, and
// reports p50 and p99 latency in microseconds.
func BenchmarkRequestReply(b *testing.B, tr mq.Transport) {
	c, qs := benchConn(b, tr, "req", "reply")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	rs, err := c.Session(ctx)
	if err != nil {
		b.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			req, err := rs.Get(ctx, qs[0], mq.Any)
			if err != nil {
				continue
			}
			if err := mq.Reply(ctx, rs, req, &mq.Message{Body: req.Body}); err != nil {
				b.Error(err)
				return
			}
			if err := rs.Commit(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	defer func() { cancel(); wg.Wait(); _ = rs.Close() }()
	s, err := c.Session(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	body := make([]byte, 256)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := mq.Request(rctx, s, qs[0], qs[1], &mq.Message{Body: body})
		rcancel()
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds())
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}
