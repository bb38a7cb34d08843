package events

import (
	"context"
	"fmt"
	"testing"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// BenchmarkAppend: the cost the outbox hook adds to every FinalityLog
// append (100 appends per transaction over 50 chains).
func BenchmarkAppend(b *testing.B) {
	for _, withOutbox := range []bool{false, true} {
		b.Run(fmt.Sprintf("outbox=%v", withOutbox), func(b *testing.B) {
			ctx := context.Background()
			db := openDB(b)
			l := finality.New(clock.NewManual(t0))
			if withOutbox {
				Install(l, Producer{}, nil)
			}
			b.ResetTimer()
			for done := 0; done < b.N; {
				if err := db.Write(ctx, func(tx *store.Tx) error {
					for k := 0; k < 100 && done < b.N; k, done = k+1, done+1 {
						if _, err := l.Append(ctx, tx, finality.Event{TxID: fmt.Sprintf("TX-%02d", done%50), Type: finality.HReserved, StateTo: "RESERVED",
							Payload: map[string]any{"amount": done, "payer": "0001", "payee": "0002"}}); err != nil {
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
		})
	}
}
