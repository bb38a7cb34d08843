package overnight_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/overnight"
	"github.com/zcgw/zcgw/outbox"
)

// Queue two FILE-route postings in the outbox and send tonight's file: it appears in the
// core's inbound folder under its final name only once complete.
func ExampleExchange_Send() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "overnight-example-")
	defer os.RemoveAll(dir)
	db, _ := store.Open(ctx, filepath.Join(dir, "adapter-001.db"), outbox.Schema+overnight.Schema)
	defer db.Close()
	clk := clock.NewManual(night)
	ob, _ := outbox.New(outbox.Config{DB: db, Clock: clk})
	x, err := overnight.Open(ctx, overnight.Config{Bank: "001", DB: db, Outbox: ob, Inbound: filepath.Join(dir, "in"),
		Results: filepath.Join(dir, "out"), Clock: clk})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = db.Write(ctx, func(tx *store.Tx) error {
		if _, err := ob.Enqueue(ctx, tx, outbox.Posting{Ref: "REF1", TxID: "TX1", Bank: "001", Account: "100-1-0000001",
			Kind: outbox.Credit, Amount: 1000, Route: outbox.RouteFILE}); err != nil {
			return err
		}
		_, err := ob.Enqueue(ctx, tx, outbox.Posting{Ref: "REF2", TxID: "TX2", Bank: "001", Account: "100-1-0000002",
			Kind: outbox.Debit, Amount: 500, Route: outbox.RouteFILE})
		return err
	})
	f, _, err := x.Send(ctx, "2026-12-01")
	if err != nil {
		fmt.Println(err)
		return
	}
	names, _ := filepath.Glob(filepath.Join(dir, "in", "*"))
	fmt.Println(f.State, f.Records, filepath.Base(names[0]), f.ResultName())
	// Output:
	// DELIVERED 2 ZCGW-POST-001-20261201-0001.dat ZCGW-RSLT-001-20261201-0001.dat
}
