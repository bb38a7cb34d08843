package adapterconf

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

// BenchmarkPostingEndToEnd: one execute-credit (claim, shadow, outbox row,
// completion in one transaction) and one drain of it through corelink, the
// embedded MQ transport and the simulated core (its own database), per
// iteration. Databases on disk (synchronous=FULL). Reports postings/s and
// the p50/p99 latency of a whole posting.
func BenchmarkPostingEndToEnd(b *testing.B) {
	e := newEnv(b, options{realTime: true, timeout: 5 * time.Second, onDisk: true})
	e.account("h:b", "YAMADA TARO", 0)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		tx := fmt.Sprintf("TX-%d", i)
		if _, err := e.a.ExecuteCredit(e.ctx, credit("c"+tx, tx, "h:b", 1)); err != nil {
			b.Fatal(err)
		}
		if r, err := e.a.Outbox().Drain(e.ctx, 1); err != nil || r.Applied != 1 {
			b.Fatalf("drain: %+v %v", r, err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportLatency(b, lat)
	if got := e.coreBalance("h:b"); got != int64(b.N) {
		b.Fatalf("core balance %d after %d postings", got, b.N)
	}
}

// BenchmarkDrainBacklog: postings queued first (core offline), then one
// Drain applies the backlog; reports drained postings/s.
func BenchmarkDrainBacklog(b *testing.B) {
	e := newEnv(b, options{realTime: true, timeout: 5 * time.Second, onDisk: true})
	e.account("h:b", "YAMADA TARO", 0)
	for i := 0; i < b.N; i++ {
		tx := fmt.Sprintf("TX-%d", i)
		if _, err := e.a.ExecuteCredit(e.ctx, credit("c"+tx, tx, "h:b", 1)); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	r, err := e.a.Outbox().Drain(e.ctx, b.N)
	b.StopTimer()
	if err != nil || r.Applied != b.N {
		b.Fatalf("drain: %+v %v", r, err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "postings/s")
}

func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "postings/s")
}
