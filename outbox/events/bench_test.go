package events

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"testing"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// BenchmarkAppend: the cost the outbox hook adds to every FinalityLog
// append (100 appends per transaction over 50 chains), unsigned and with
// the §12.2 Ed25519 signature.
func BenchmarkAppend(b *testing.B) {
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"none", "outbox", "outbox+signed"} {
		b.Run("hook="+mode, func(b *testing.B) {
			ctx := context.Background()
			db := openDB(b)
			l := finality.New(clock.NewManual(t0))
			switch mode {
			case "outbox":
				Install(l, Producer{}, nil)
			case "outbox+signed":
				Install(l, Producer{}, &Signer{KeyID: "KEY-ZC-B", PrivateKey: priv})
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
