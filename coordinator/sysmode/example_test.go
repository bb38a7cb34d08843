package sysmode_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

func ExampleController_ReconcileQuorum() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "zcgw-example")
	defer os.RemoveAll(dir)
	db, err := store.OpenCoordinator(ctx, filepath.Join(dir, "zc.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	modes := sysmode.NewController(db, finality.New(clock.System{}), clock.System{}, nil)

	s, changed, _ := modes.ReconcileQuorum(ctx, 1, 3) // 1 of 3 replicas: no majority
	fmt.Println(s.Modes(), changed)
	err = db.Write(ctx, func(tx *store.Tx) error { return sysmode.Gate{}.CheckWritable(ctx, tx) })
	fmt.Println(domainerr.Code(err), domainerr.ShouldRetry(err))
	s, changed, _ = modes.ReconcileQuorum(ctx, 2, 3) // majority back
	fmt.Println(s.Modes(), changed)
	// Output:
	// [QUORUM_LOSS_READONLY] true
	// SYSTEM_QUORUM_LOSS_READ_ONLY true
	// [NORMAL] true
}
