package corebalance_test

import (
	"bytes"
	"fmt"

	"github.com/zcgw/zcgw/formats/coreacct"
	"github.com/zcgw/zcgw/formats/corebalance"
)

// Write a core balance file: accounts in key order; the Writer numbers the
// details and computes the trailer.
func ExampleWriter() {
	var buf bytes.Buffer
	w := corebalance.NewWriter(&buf)
	_ = w.WriteHeader(&corebalance.Header{Version: 1, BankCode: "0128",
		BusinessDate: corebalance.Date{Year: 2026, Month: 12, Day: 2}, CutoffAt: "20261202233000"})
	_ = w.WriteDetail(&corebalance.Detail{Account: coreacct.Key{Branch: "100", Type: 1, Number: "0000001"},
		Status: corebalance.Open, Balance: 1500})
	_ = w.WriteDetail(&corebalance.Detail{Account: coreacct.Key{Branch: "100", Type: 1, Number: "0000002"},
		Status: corebalance.Open, Balance: 2500})
	if err := w.Close(); err != nil {
		panic(err)
	}
	sum, err := corebalance.Validate(&buf)
	fmt.Println(sum.Count, sum.BalanceTotal, err)
	// Output:
	// 2 4000 <nil>
}
