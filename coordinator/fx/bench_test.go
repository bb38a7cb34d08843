package fx

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkQuote prices the best JPY->USD route over a market of 2 FXPs
// x 4 currencies (every direct and bridged pair quoted): one read
// transaction and the route search per op.
func BenchmarkQuote(b *testing.B) {
	e := newEnv(b)
	ccys := []string{"JPY", "USD", "EUR"}
	for _, fxp := range []string{"901", "902"} {
		for _, from := range ccys {
			for _, to := range ccys {
				if from != to {
					e.put(b, fxp, from, to, 66_000_000+int64(len(fxp+from+to)), time.Hour)
				}
			}
		}
	}
	req := QuoteRequest{FromCurrency: "JPY", ToCurrency: "USD", Amount: 150_000}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.fx.Quote(e.ctx, req); err != nil {
			b.Fatal(fmt.Sprint(err))
		}
	}
}
