package signing

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/store"
)

// TestRunSweepRemovesExpiredNonces: the node's nonce sweep loop deletes a
// nonce older than idem.DoneTTL, keeps a fresh one, and returns ctx's
// error when stopped.
func TestRunSweepRemovesExpiredNonces(t *testing.T) {
	f := newFixture(t)
	n := NewDBNonces(f.db, f.clk)
	if err := n.Use(f.ctx, "KEY-ZC-1", "old-nonce"); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(idem.DoneTTL + time.Hour)
	if err := n.Use(f.ctx, "KEY-ZC-1", "new-nonce"); err != nil {
		t.Fatal(err)
	}
	count := func(nonce string) int {
		var c int
		if err := f.db.Read(f.ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(f.ctx, `SELECT count(*) FROM IdempotencyKeys WHERE key = ?`, "sig:KEY-ZC-1:"+nonce).Scan(&c)
		}); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if count("old-nonce") != 1 || count("new-nonce") != 1 {
		t.Fatalf("before the sweep: old %d, new %d rows", count("old-nonce"), count("new-nonce"))
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- n.RunSweep(ctx, 5*time.Millisecond, nil) }()
	for deadline := time.Now().Add(10 * time.Second); count("old-nonce") != 0; {
		if time.Now().After(deadline) {
			t.Fatal("the expired nonce is still there after 10s of sweeping")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("RunSweep returned %v, want context.Canceled", err)
	}
	if count("new-nonce") != 1 {
		t.Fatal("the sweep removed a fresh nonce")
	}
}
