package signing

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// TestNonceClaimRaceUsedOnce: 32 goroutines settle claims of the same
// (key, nonce) on one database; exactly one consumes it, every other is
// refused SIGNATURE_REPLAYED.
func TestNonceClaimRaceUsedOnce(t *testing.T) {
	f := newFixture(t)
	const n = 32
	var used, replayed atomic.Int32
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := NewNonceClaim("KEY-ZC-1", "race-nonce", f.clk)
			if err != nil {
				t.Error(err)
				return
			}
			switch err := c.Settle(f.ctx, f.db); {
			case err == nil && c.IsUsed():
				used.Add(1)
			case domainerr.Code(err) == "SIGNATURE_REPLAYED" && domainerr.Code(c.Refused()) == "SIGNATURE_REPLAYED":
				replayed.Add(1)
			default:
				t.Errorf("settle: %v", err)
			}
		}()
	}
	wg.Wait()
	if used.Load() != 1 || replayed.Load() != n-1 {
		t.Fatalf("%d used, %d replayed; want 1 and %d", used.Load(), replayed.Load(), n-1)
	}
}

// TestVerifyDeferredChecksTheSignatureOnly: a forged body is refused
// before any claim exists; a good one yields a claim and leaves the
// verifier's own nonce store untouched.
func TestVerifyDeferredChecksTheSignatureOnly(t *testing.T) {
	f := newFixture(t)
	h, err := Ed25519Signer{KeyID: "KEY-ZC-1", PrivateKey: f.priv, Clock: f.clk}.Sign("POST", path, body)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.v.CheckHeaders(f.ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.VerifyDeferred("POST", path, append([]byte(nil), []byte(`{"request_id":"r2"}`)...)); domainerr.Code(err) != "EXTERNAL_SIGNATURE_INVALID" {
		t.Fatalf("forged body: %v", err)
	}
	c, err := p.VerifyDeferred("POST", path, body)
	if err != nil || c.Key() != "sig:KEY-ZC-1:"+h.Get(HeaderNonce) || c.IsUsed() {
		t.Fatalf("claim %+v, err %v", c, err)
	}
	// Not consumed by the verifier: the full check still accepts it once.
	if err := p.Verify(f.ctx, "POST", path, body); err != nil {
		t.Fatalf("the deferred check consumed the nonce: %v", err)
	}
}

// TestMoveNoncesKeepsThemConsumed: nonces consumed in a DBNonces database
// are moved (2,500 of them, three batches) into every destination, where
// a claim of any of them is a replay, and leave the source.
func TestMoveNoncesKeepsThemConsumed(t *testing.T) {
	f := newFixture(t)
	src, err := store.Open(f.ctx, filepath.Join(t.TempDir(), "nonces.db"), NonceSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	old := NewDBNonces(src, f.clk)
	const n = 2500
	for i := range n {
		if err := old.Use(f.ctx, "KEY-ZC-1", fmt.Sprintf("old-%04d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var dst []*store.DB
	for i := range 2 {
		db, err := store.Open(f.ctx, filepath.Join(t.TempDir(), fmt.Sprintf("adapter-%d.db", i)), NonceSchema)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dst = append(dst, db)
	}
	moved, err := MoveNonces(f.ctx, src, dst)
	if err != nil || moved != n {
		t.Fatalf("moved %d, err %v; want %d", moved, err, n)
	}
	for _, db := range dst {
		for _, nonce := range []string{"old-0000", "old-1234", "old-2499"} {
			c, _ := NewNonceClaim("KEY-ZC-1", nonce, f.clk)
			if err := c.Settle(f.ctx, db); domainerr.Code(err) != "SIGNATURE_REPLAYED" {
				t.Fatalf("%s after the move: %v, want SIGNATURE_REPLAYED", nonce, err)
			}
		}
	}
	var left int
	if err := src.Read(f.ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(f.ctx, `SELECT COUNT(*) FROM IdempotencyKeys`).Scan(&left)
	}); err != nil || left != 0 {
		t.Fatalf("%d nonces left in the source, err %v", left, err)
	}
	if again, err := MoveNonces(f.ctx, src, dst); err != nil || again != 0 {
		t.Fatalf("second move: %d, %v", again, err)
	}
}
