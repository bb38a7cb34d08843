package lane_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "zcgw-example")
	defer os.RemoveAll(dir)
	db, err := store.OpenCoordinator(ctx, filepath.Join(dir, "zc.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	clk := clock.NewManual(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC))
	log := finality.New(clk)
	lanes := lane.New(db, log, sysmode.Gate{}, clk, nil)

	ins, _ := lanes.InsertTxWithLog(ctx, lane.NewTx{TxID: "TX-1", Lane: "EXPRESS", AmountValue: 10000,
		PayerBankID: "001", PayerAccountHash: "a", PayeeBankID: "002", IdempotencyKey: "TX:TX-1:PaymentInitiated:001"})
	fmt.Println("inserted:", ins.Inserted, ins.Entry.EventType, ins.Entry.StateTo)

	res, _ := lanes.TransitionWithLog(ctx, lane.Transition{TxID: "TX-1", From: lane.Received, To: lane.Prechecked, EventType: finality.PreCheckPassed})
	fmt.Println("applied:", res.Applied, res.PreviousState, "->", res.State, "version", res.Version)

	// The same transition again is a guard miss, not an error.
	res, _ = lanes.TransitionWithLog(ctx, lane.Transition{TxID: "TX-1", From: lane.Received, To: lane.Prechecked, EventType: finality.PreCheckPassed})
	fmt.Println("applied again:", res.Applied, "row is", res.State)

	// An issuer that does not own the row is a bug.
	_, err = lanes.TransitionWithLog(ctx, lane.Transition{TxID: "TX-1", From: lane.Prechecked, To: lane.HReserved, EventType: finality.HReserved, Issuer: lane.OwnerVenueBOJ})
	fmt.Println(domainerr.Code(err))

	rep, _ := finality.VerifyChain(ctx, db, "TX-1")
	fmt.Println("chain entries:", rep.Entries, "ok:", rep.OK())
	// Output:
	// inserted: true PaymentInitiated RECEIVED
	// applied: true RECEIVED -> PRECHECKED version 1
	// applied again: false row is PRECHECKED
	// OWNERSHIP_VIOLATION
	// chain entries: 2 ok: true
}
