package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
)

// BenchmarkRunDailyJob measures the ledger's overhead per run of a 4-step
// job (two TxSteps writing one row each, two plain steps): lease, begin,
// 4 x (renew, start, complete), finish, release, and the result reads.
func BenchmarkRunDailyJob(b *testing.B) {
	ctx := context.Background()
	p := newProbe()
	e := newEnvB(b, p.job("eod"))
	day := time.Date(2000, 1, 1, 0, 0, 0, 0, clock.JST)
	before := e.led.DB().Stats()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.r.Run(ctx, Request{Job: "eod", BusinessDate: clock.BusinessDate(day.AddDate(0, 0, i))}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	after := e.led.DB().Stats()
	b.ReportMetric(float64(after.Commits-before.Commits)/float64(b.N), "commits/run")
	b.ReportMetric(float64(after.Statements-before.Statements)/float64(b.N), "stmts/run")
}
