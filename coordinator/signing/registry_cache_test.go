package signing

import (
	"crypto/ed25519"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// TestRegistryGetIsCachedUntilAWrite: a key read once costs no statement
// the next time; a revocation, a status change or another Registry on the
// same database is seen by the very next Get; a caller changing its Key
// changes nothing cached.
func TestRegistryGetIsCachedUntilAWrite(t *testing.T) {
	f := newFixture(t)
	if _, err := f.reg.Get(f.ctx, "KEY-ZC-1"); err != nil {
		t.Fatal(err)
	}
	before := f.db.Stats().Statements
	k, err := f.reg.Get(f.ctx, "KEY-ZC-1")
	if err != nil {
		t.Fatal(err)
	}
	if n := f.db.Stats().Statements - before; n != 0 {
		t.Fatalf("a cached key cost %d statements", n)
	}
	k.PublicKey[0] ^= 0xff
	if again, _ := f.reg.Get(f.ctx, "KEY-ZC-1"); again.PublicKey[0] == k.PublicKey[0] {
		t.Fatal("changing a returned key changed the cached one")
	}
	other := NewRegistry(f.db, f.clk) // e.g. the gateway's own
	if err := other.Revoke(f.ctx, "KEY-ZC-1", t0.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	k, err = f.reg.Get(f.ctx, "KEY-ZC-1")
	if err != nil || k.RevokedAt == nil || !k.RevokedAt.Equal(t0.Add(-time.Second)) {
		t.Fatalf("after the revocation: %+v, %v", k, err)
	}
	if err := f.reg.SetStatus(f.ctx, "KEY-ZC-1", KeyInactive); err != nil {
		t.Fatal(err)
	}
	if k, _ := other.Get(f.ctx, "KEY-ZC-1"); k.Status != KeyInactive {
		t.Fatalf("after SetStatus: %s", k.Status)
	}
	if _, err := f.reg.Get(f.ctx, "KEY-NONE"); domainerr.Code(err) != "KEY_NOT_FOUND" {
		t.Fatalf("missing key: %v", err)
	}
	pub, _, _ := ed25519.GenerateKey(nil)
	if err := other.Register(f.ctx, Key{KeyID: "KEY-NONE", OwnerType: OwnerZC, OwnerRef: "ZC", PublicKey: pub}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.reg.Get(f.ctx, "KEY-NONE"); err != nil {
		t.Fatalf("a key registered after a miss: %v", err)
	}
}

// TestRegistryCacheRaceRevoke: 16 goroutines verify requests signed with a
// key while it is revoked; every Get that starts after Revoke returned
// sees the revocation (none is served a key read before it).
func TestRegistryCacheRaceRevoke(t *testing.T) {
	f := newFixture(t)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					k, err := f.reg.Get(f.ctx, "KEY-ZC-1")
					if err != nil || k.RevokedAt == nil {
						t.Errorf("a Get after the revocation returned %+v, %v", k, err)
					}
					return
				default:
					if _, err := f.reg.Get(f.ctx, "KEY-ZC-1"); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	if err := f.reg.Revoke(f.ctx, "KEY-ZC-1", t0); err != nil {
		t.Fatal(err)
	}
	close(done)
	wg.Wait()
}
