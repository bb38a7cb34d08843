package eod_test

import (
	"fmt"

	"github.com/zcgw/zcgw/jobs/eod"
)

// EOD of a business date resets the daily limits for the next JST date.
func ExampleNextBusinessDate() {
	next, _ := eod.NextBusinessDate("2026-12-31")
	fmt.Println(next)
	// Output:
	// 2027-01-01
}
