package coresim_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zcgw/zcgw/adapter/coresim"
)

// The simulated core is not idempotent: the same posting twice is
// journalled twice.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "coresim-example")
	defer os.RemoveAll(dir)
	core, err := coresim.Open(ctx, coresim.Config{Bank: "001", DBPath: filepath.Join(dir, "core.db")})
	if err != nil {
		panic(err)
	}
	defer core.Close()
	_ = core.OpenAccount(ctx, "001-1-0000001", "ﾔﾏﾀﾞ ﾀﾛｳ", 1000)
	in := coresim.PostIn{Ref: "P1", TxID: "TX-1", Account: "001-1-0000001", Kind: coresim.KindDebit, Amount: 400}
	for i := 0; i < 3; i++ {
		out, _ := core.Post(ctx, in)
		fmt.Printf("applied=%v balance_after=%d reason=%q\n", out.Applied, out.BalanceAfter, out.ReasonCode)
	}
	lk, _ := core.Lookup(ctx, "P1")
	fmt.Println(lk.State, lk.Count)
	// Output:
	// applied=true balance_after=600 reason=""
	// applied=true balance_after=200 reason=""
	// applied=false balance_after=0 reason="NSF"
	// APPLIED 2
}
