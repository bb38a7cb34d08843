package lsm_test

import (
	"fmt"

	"github.com/zcgw/zcgw/jobs/lsm"
)

// A window with 9,000 yen of H for payer 001: the transfer due before the
// next window goes first, then the one that has waited longest, then as
// many of the rest as fit. The one that does not fit is deferred to the
// next window, never rejected.
func ExamplePlan() {
	in := lsm.Input{
		Constraints: lsm.Constraints{
			WindowID: "BULK-20261202-0900", ClosedAt: "2026-12-02T00:00:00Z", DueHorizon: "2026-12-02T02:00:00Z",
			FairnessAgeSeconds: 7200, Available: map[string]int64{lsm.HKey("001", "JPY"): 9000},
		},
		Candidates: []lsm.Candidate{
			{TxID: "TX-A", PayerBankID: "001", Amount: 5000, Currency: "JPY", ArrivedAt: "2026-12-01T23:50:00Z", DueAt: "2026-12-02T01:00:00Z"},
			{TxID: "TX-B", PayerBankID: "001", Amount: 3000, Currency: "JPY", ArrivedAt: "2026-12-01T20:00:00Z"},
			{TxID: "TX-C", PayerBankID: "001", Amount: 1000, Currency: "JPY", ArrivedAt: "2026-12-01T23:59:00Z"},
			{TxID: "TX-D", PayerBankID: "001", Amount: 2000, Currency: "JPY", ArrivedAt: "2026-12-01T23:58:00Z"},
		},
	}
	r, err := lsm.Plan(in, lsm.Options{})
	if err != nil {
		panic(err)
	}
	for _, d := range r.Trace {
		fmt.Println(d.TxID, d.Selected, d.Reason)
	}
	fmt.Println("mode", r.Mode, "deferred", r.Deferred, "due overrun", r.Metrics.DueOverrun)
	// Output:
	// TX-A true URGENT
	// TX-B true AGED
	// TX-C true THROUGHPUT
	// TX-D false H_INSUFFICIENT
	// mode OPTIMIZED deferred [TX-D] due overrun 0
}
