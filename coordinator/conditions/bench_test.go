package conditions

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

// cpuNow is the process's user+system CPU time.
func cpuNow(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchExpr is an OR of an AND of two attestation leaves and a THRESHOLD
// 2-of-3 over a TX_REACHED_STATE, a TIME_AFTER and a TIME_BEFORE leaf.
const benchExpr = `{"op":"OR","operands":[{"op":"AND","operands":[{"template_id":"TPL-A"},{"template_id":"TPL-B"}]},
	{"op":"THRESHOLD","k":2,"operands":[{"template_id":"TPL-TX"},{"template_id":"TPL-AFTER"},{"template_id":"TPL-BEFORE"}]}]}`

// BenchmarkEvaluate reports CPU per 1000 evaluations of benchExpr (five
// templates): "assumed" is the pure dry run (parse + compose, no reads),
// "live" resolves every leaf on the database (two quorum reads over three
// attestations, one FinalityLog read, two clock predicates) and reports
// statements per evaluation.
//
//	go test -run '^$' -bench Evaluate -benchtime 2000x ./coordinator/conditions/
func BenchmarkEvaluate(b *testing.B) {
	b.Run("assumed", func(b *testing.B) {
		e := newEnvOn(b, storetest.SQLite)
		in := Inputs{Assume: []string{"TPL-A", "TPL-TX", "TPL-AFTER"}}
		cpu := cpuNow(b)
		b.ResetTimer()
		for range b.N {
			if d, err := e.ev.Evaluate(e.ctx, benchExpr, in); err != nil || !d.Allowed {
				b.Fatal(d, err)
			}
		}
		b.StopTimer()
		b.ReportMetric((cpuNow(b)-cpu).Seconds()*1000/float64(b.N), "cpu-s/1000")
	})
	b.Run("live", func(b *testing.B) {
		e := newEnvOn(b, storetest.SQLite)
		for _, tpl := range []Template{{TemplateID: "TPL-A", AllowedAttesterScope: []string{"OPA", "OPB"}, MinAttesterQuorum: 2},
			{TemplateID: "TPL-B", AllowedAttesterScope: []string{"OPC"}},
			{TemplateID: "TPL-TX", LedgerPredicate: &Predicate{Type: TxReachedState, TxID: "TX-2", States: []string{"SETTLED"}}},
			{TemplateID: "TPL-AFTER", LedgerPredicate: &Predicate{Type: TimeAfter, At: "2026-12-03T09:00"}},
			{TemplateID: "TPL-BEFORE", LedgerPredicate: &Predicate{Type: TimeBefore, At: "2026-12-03T18:00"}}} {
			if _, err := e.tpls.Register(e.ctx, tpl); err != nil {
				b.Fatal(err)
			}
		}
		for _, k := range []string{"KEY-A1", "KEY-B", "KEY-C"} {
			tpl := "TPL-A"
			if k == "KEY-C" {
				tpl = "TPL-B"
			}
			if err := e.atts.Record(e.ctx, e.att(tpl, "HTLC-1", k, ResultPass, t0)); err != nil {
				b.Fatal(err)
			}
		}
		before := e.db.Stats()
		cpu := cpuNow(b)
		b.ResetTimer()
		for range b.N {
			if d, err := e.ev.Evaluate(e.ctx, benchExpr, Inputs{Subject: "HTLC-1"}); err != nil || !d.Allowed {
				b.Fatal(fmt.Sprint(d), err)
			}
		}
		b.StopTimer()
		b.ReportMetric((cpuNow(b)-cpu).Seconds()*1000/float64(b.N), "cpu-s/1000")
		b.ReportMetric(float64(e.db.Stats().Statements-before.Statements)/float64(b.N), "stmts/eval")
	})
}
