package main

import (
	"context"
	"fmt"

	"github.com/zcgw/zcgw/gateway/demo"
)

// zcgw demo: one simulated business day on the embedded defaults (logic in
// gateway/demo).
func init() {
	register("demo", command{
		Summary: "play one simulated business day on the embedded defaults and check its invariants",
		Run: func(ctx context.Context, e *env, args []string) int {
			fs := e.flagSet("demo")
			if err := fs.Parse(args); err != nil {
				return 2
			}
			if _, err := demo.Run(ctx, demo.Options{DataDir: e.DataDir, Out: e.Stdout}); err != nil {
				fmt.Fprintln(e.Stderr, "zcgw "+err.Error()) // "zcgw demo: invariant NAME failed: …"
				return 1
			}
			return 0
		},
	})
}
