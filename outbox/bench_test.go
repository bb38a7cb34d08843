package outbox

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// BenchmarkDrainInMemoryCore measures the outbox alone (claim, record,
// EntityStateLog rows; two write commits per posting) against an
// in-memory core, with 4 concurrent drainers.
func BenchmarkDrainInMemoryCore(b *testing.B) {
	r := newRig(b, nil)
	var ps []Posting
	for i := 0; i < b.N; i++ {
		ps = append(ps, post(fmt.Sprintf("B%08d", i), fmt.Sprintf("ACC%d", i%16), Credit, 1))
	}
	for i := 0; i < len(ps); i += 500 {
		r.enqueue(b, ps[i:min(i+500, len(ps))]...)
	}
	b.ResetTimer()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				res, err := r.ob.Drain(context.Background(), 50)
				if err != nil {
					b.Error(err)
					return
				}
				if res.Claimed == 0 {
					c, _ := r.ob.Counts(context.Background())
					if c[Pending]+c[Claimed] == 0 {
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "postings/s")
	if r.core.applies != b.N {
		b.Fatalf("applied %d of %d", r.core.applies, b.N)
	}
}
