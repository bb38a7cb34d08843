package e2e

import (
	"fmt"
	"testing"

	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
)

// cost settles n EXPRESS transfers and returns the coordinator database's
// statements and commits per settled transfer (Submit, the queue, every
// state transition and the notifications), plus the same for the two
// adapter databases together.
func cost(t testing.TB, s *stack, lane string, n int) (zc, banks store.Snapshot) {
	t.Helper()
	z0 := s.zc.Stats()
	a0, b0 := s.bank["001"].a.DB().Stats(), s.bank["002"].a.DB().Stats()
	ids := make([]string, n)
	for i := 0; i < n; i++ {
		ids[i] = s.mustSubmit(lane, fmt.Sprintf("cost-%s-%d", lane, i), "001", "h:a", "002", "h:b", int64(100+i)).TxID
	}
	if _, err := s.o.RunUntilIdle(s.ctx); err != nil {
		t.Fatal(err)
	}
	z1 := s.zc.Stats()
	a1, b1 := s.bank["001"].a.DB().Stats(), s.bank["002"].a.DB().Stats()
	for _, id := range ids {
		if v := s.view(id); v.State != "SETTLED" {
			t.Fatalf("%s: %s", id, v.State)
		}
	}
	per := func(d int64) int64 { return d / int64(n) }
	zc = store.Snapshot{Statements: per(z1.Statements - z0.Statements), Commits: per(z1.Commits - z0.Commits)}
	banks = store.Snapshot{Statements: per(a1.Statements - a0.Statements + b1.Statements - b0.Statements),
		Commits: per(a1.Commits - a0.Commits + b1.Commits - b0.Commits)}
	return zc, banks
}

// TestCostPerSettledTransfer measures, and bounds, the coordinator's SQL
// statements and commits per settled transfer (figures in
// docs/orchestrator.md). The bound catches a regression that adds commits
// to the money path.
func TestCostPerSettledTransfer(t *testing.T) {
	for _, c := range []struct {
		lane       string
		maxCommits int64
	}{{orchestrator.LaneExpress, 5}, {orchestrator.LaneStandard, 6}} {
		t.Run(c.lane, func(t *testing.T) {
			s := newStack(t, stackOptions{}, "001", "002")
			s.bank["001"].account("h:a", "SATO HANAKO", 1_000_000_000)
			s.bank["002"].account("h:b", "YAMADA TARO", 0)
			zc, banks := cost(t, s, c.lane, 64)
			t.Logf("%s coordinator: %d statements, %d commits per settled transfer; bank adapters: %d statements, %d commits",
				c.lane, zc.Statements, zc.Commits, banks.Statements, banks.Commits)
			if zc.Commits > c.maxCommits {
				t.Errorf("%d coordinator commits per settled transfer, bound %d", zc.Commits, c.maxCommits)
			}
		})
	}
}

// BenchmarkSettledTransfers measures in-process settled transfers per
// second: Submit and the worker driving each EXPRESS transfer to SETTLED
// through two adapters (whose cores are not involved until the outbox
// drains, which is outside the timed loop).
func BenchmarkSettledTransfers(b *testing.B) {
	for _, c := range []struct {
		lane string
		conc int
	}{{orchestrator.LaneExpress, 1}, {orchestrator.LaneStandard, 1}, {orchestrator.LaneExpress, 4}, {orchestrator.LaneStandard, 4}} {
		lane := c.lane
		b.Run(fmt.Sprintf("%s/concurrency=%d", lane, c.conc), func(b *testing.B) {
			s := newStack(b, stackOptions{cfg: func(cfg *orchestrator.Config) { cfg.Concurrency = c.conc }}, "001", "002")
			s.bank["001"].account("h:a", "SATO HANAKO", 1_000_000_000_000)
			s.bank["002"].account("h:b", "YAMADA TARO", 0)
			z0 := s.zc.Stats()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.mustSubmit(lane, fmt.Sprintf("b-%s-%d", lane, i), "001", "h:a", "002", "h:b", 100)
				if i%32 == 31 || i == b.N-1 {
					if _, err := s.o.RunUntilIdle(s.ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			z1 := s.zc.Stats()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "settled/s")
			b.ReportMetric(float64(z1.Statements-z0.Statements)/float64(b.N), "zc-stmts/op")
			b.ReportMetric(float64(z1.Commits-z0.Commits)/float64(b.N), "zc-commits/op")
		})
	}
}
