package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
	"github.com/zcgw/zcgw/outbox/events"
)

// OpenModes opens the mode controller of a data folder no node serves, for
// an operator command run in this process: it takes the folder's node lock
// (so a `zcgw serve` started meanwhile is refused until close; a served
// folder is refused with procid.ErrServed naming the node), opens the
// coordinator's database (where node.json's store block says)
// and appends through a FinalityLog carrying the event-outbox hook, as the
// node's own log does, so a mode change made here reaches EventOutbox like
// one made through the node. close releases everything.
func OpenModes(ctx context.Context, dataDir string, clk clock.Clock) (ctl *sysmode.Controller, close func() error, err error) {
	if clk == nil {
		clk = clock.System{}
	}
	db, log, close, err := openOperator(ctx, dataDir, clk)
	if err != nil {
		return nil, nil, err
	}
	return sysmode.NewController(db, log, clk, nil), close, nil
}

// openOperator takes the node lock of a data folder no node serves, opens
// its coordinator database and a FinalityLog carrying the event-outbox hook (OpenModes,
// OpenParams). close releases everything.
func openOperator(ctx context.Context, dataDir string, clk clock.Clock) (db *store.DB, log *finality.Log, close func() error, err error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, nil, nil, err
	}
	id := procid.Ephemeral("cli", clk)
	lock, err := procid.Acquire(dataDir, procid.Info{PID: os.Getpid(), Node: id.Node, Epoch: id.Epoch, Started: clock.Stamp(clk.Now())})
	if err != nil {
		return nil, nil, nil, err
	}
	stores, err := Stores(dataDir)
	if err != nil {
		lock.Close()
		return nil, nil, nil, err
	}
	db, err = store.OpenCoordinator(ctx, stores.Location(store.CoordinatorDB))
	if err != nil {
		lock.Close()
		return nil, nil, nil, err
	}
	close = func() error { return errors.Join(db.Close(), lock.Close()) }
	signer, err := loadSigningKey(ctx, filepath.Join(dataDir, SigningKeyFile), signing.NewRegistry(db, clk), clk)
	if err != nil {
		close()
		return nil, nil, nil, err
	}
	log = finality.New(clk)
	events.Install(log, events.Producer{}, &events.Signer{KeyID: signer.KeyID, PrivateKey: signer.PrivateKey})
	return db, log, close, nil
}
