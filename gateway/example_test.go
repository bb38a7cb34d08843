package gateway_test

import (
	"fmt"
	"time"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/gateway"
)

func ExampleFreshness() {
	for _, lag := range []time.Duration{0, 10 * time.Second, 60 * time.Second} {
		fmt.Println(lag, gateway.Freshness(lag, gateway.DefaultFreshnessRed))
	}
	// Output:
	// 0s GREEN
	// 10s YELLOW
	// 1m0s RED
}

func ExampleCheckSchemaVersion() {
	for _, v := range []string{"1.1", "1.0", "0.9"} {
		fmt.Printf("%s %q\n", v, domainerr.Code(gateway.CheckSchemaVersion(v)))
	}
	// Output:
	// 1.1 ""
	// 1.0 ""
	// 0.9 "INVALID_REQUEST"
}
