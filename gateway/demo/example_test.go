package demo_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/zcgw/zcgw/gateway/demo"
)

// Run plays the day in DATA/demo and reports the first invariant that
// failed, if any (this is what `zcgw demo` does).
func ExampleRun() {
	sum, err := demo.Run(context.Background(), demo.Options{DataDir: "./var", Out: os.Stdout})
	var inv *demo.InvariantError
	switch {
	case errors.As(err, &inv):
		fmt.Println("invariant failed:", inv.Invariant)
	case err != nil:
		fmt.Println("demo stopped:", err)
	default:
		fmt.Printf("%d settled, %d cancelled, chain audit OK: %v\n", sum.Settled, sum.Cancelled, sum.Chains.OK)
	}
}
