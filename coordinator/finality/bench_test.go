package finality

import (
	"context"
	"fmt"
	"testing"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
)

// fillLog writes entries spread over chains (10 entries per TX chain),
// 1000 appends per commit.
func fillLog(b *testing.B, entries int) *store.DB {
	ctx := context.Background()
	db := openDB(b)
	l := New(clock.NewManual(t0))
	for done := 0; done < entries; {
		if err := db.Write(ctx, func(tx *store.Tx) error {
			for k := 0; k < 1000 && done < entries; k, done = k+1, done+1 {
				if _, err := l.Append(ctx, tx, Event{TxID: fmt.Sprintf("TX-%06d", done/10), Type: PreCheckPassed, StateFrom: "RECEIVED", StateTo: "PRECHECKED",
					Payload: map[string]any{"amount": done, "payer": "001", "payee": "002"}}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	return db
}

// VerifyAll over a 20,000-entry log (2,000 chains).
func BenchmarkVerifyAll(b *testing.B) {
	const entries = 20000
	db := fillLog(b, entries)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := VerifyAll(ctx, db)
		if err != nil || !rep.OK() || rep.Entries != entries {
			b.Fatalf("%+v %v", rep, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(entries*b.N)/b.Elapsed().Seconds(), "entries/s")
}

// VerifyChain of one 10-entry chain out of 20,000 entries.
func BenchmarkVerifyChain(b *testing.B) {
	db := fillLog(b, 20000)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := VerifyChain(ctx, db, fmt.Sprintf("TX-%06d", i%2000))
		if err != nil || !rep.OK() || rep.Entries != 10 {
			b.Fatalf("%+v %v", rep, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(10*b.N)/b.Elapsed().Seconds(), "entries/s")
}

// Append cost inside a transaction, 1000 appends per commit.
func BenchmarkAppendBatched1000(b *testing.B) {
	ctx := context.Background()
	db := openDB(b)
	l := New(clock.NewManual(t0))
	b.ResetTimer()
	for done := 0; done < b.N; {
		if err := db.Write(ctx, func(tx *store.Tx) error {
			for k := 0; k < 1000 && done < b.N; k, done = k+1, done+1 {
				if _, err := l.Append(ctx, tx, Event{TxID: fmt.Sprintf("TX-%06d", done%500), Type: Settled, StateTo: "SETTLED"}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}

// The nightly audit of 100,000 entries (10,000 chains) appended since the
// anchor, on both cores.
func BenchmarkVerifySince(b *testing.B) {
	const entries = 100000
	db := fillLog(b, entries)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a, err := VerifySince(ctx, db, Workers())
		if err != nil || !a.OK() || a.Entries != entries {
			b.Fatalf("%+v %v", a.Report, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(entries*b.N)/b.Elapsed().Seconds(), "entries/s")
}
