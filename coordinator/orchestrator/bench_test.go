package orchestrator

import (
	"fmt"
	"testing"
)

// BenchmarkExpressStatements submits b.N EXPRESS transfers and drives them
// to SETTLED with fake banks (no HTTP), 64 at a time, and reports the
// coordinator database's cost: statements and commits per transfer and
// statements per transition (per FinalityLog entry), Submit included.
//
//	go test -run '^$' -bench ExpressStatements -benchtime 2000x ./coordinator/orchestrator/
func BenchmarkExpressStatements(b *testing.B) {
	f := newFixture(b, func(c *Config) { c.Concurrency, c.BatchSize = 64, 64 })
	before := f.db.Stats()
	b.ResetTimer()
	for i := range b.N {
		f.submit(pi("EXPRESS", 100), fmt.Sprintf("bench-%d", i))
	}
	f.run()
	b.StopTimer()
	after := f.db.Stats()
	if n := f.count(`SELECT COUNT(*) FROM Transactions WHERE state = 'SETTLED'`); n != b.N {
		b.Fatalf("%d of %d settled", n, b.N)
	}
	entries := f.count(`SELECT COUNT(*) FROM FinalityLog`)
	stmts := float64(after.Statements - before.Statements)
	b.ReportMetric(stmts/float64(b.N), "stmts/transfer")
	b.ReportMetric(float64(after.Commits-before.Commits)/float64(b.N), "commits/transfer")
	b.ReportMetric(stmts/float64(entries), "stmts/transition")
	b.ReportMetric(float64(entries)/float64(b.N), "transitions/transfer")
}
