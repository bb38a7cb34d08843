package corelink_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zcgw/zcgw/adapter/corelink"
	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/adapter/mq/embedded"
	"github.com/zcgw/zcgw/outbox"
)

// A link to a simulated core serving its queue on an embedded MQ file.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	dir, _ := os.MkdirTemp("", "corelink-example")
	defer os.RemoveAll(dir)
	tr := embedded.New(filepath.Join(dir, "mq.db"), embedded.Options{})
	core, _ := coresim.Open(ctx, coresim.Config{Bank: "001", DBPath: filepath.Join(dir, "core.db")})
	defer core.Close()
	_ = core.OpenAccount(ctx, "001-1-0000001", "ﾔﾏﾀﾞ ﾀﾛｳ", 1000)
	conn, _ := tr.Connect(ctx)
	defer conn.Close()
	served := make(chan struct{})
	go func() { _ = core.Serve(ctx, conn, coresim.ServeConfig{}); close(served) }()

	link, err := corelink.Open(ctx, corelink.Config{Bank: "001", Transport: tr, Timeout: 5 * time.Second})
	if err != nil {
		panic(err)
	}
	defer link.Close()
	res, err := link.Apply(ctx, outbox.Posting{Ref: "P1", TxID: "TX-1", Bank: "001", Account: "001-1-0000001",
		Kind: outbox.Debit, Amount: 400})
	fmt.Println(res.BalanceAfter, err)
	_, err = link.Apply(ctx, outbox.Posting{Ref: "P2", TxID: "TX-2", Bank: "001", Account: "001-1-0000001",
		Kind: outbox.Debit, Amount: 4000})
	fmt.Println(err)
	lk, _ := link.Lookup(ctx, "P1")
	fmt.Println(lk.State)
	cancel()
	<-served
	// Output:
	// 600 <nil>
	// core refused posting: INSUFFICIENT_FUNDS: core 001 refused posting P2: NSF
	// APPLIED
}
