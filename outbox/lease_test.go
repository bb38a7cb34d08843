package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

// sharedOutboxes opens n outboxes on separate handles of one fresh
// database of b (as n nodes on one shared database), over one core and
// one manual clock.
func sharedOutboxes(t *testing.T, b storetest.Backend, n int, clk clock.Clock, core Core) []*Outbox {
	t.Helper()
	loc := b.Location(t, "adapter")
	out := make([]*Outbox, n)
	for i := range out {
		db, err := store.Open(context.Background(), loc, Schema)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if out[i], err = New(Config{DB: db, Core: core, Clock: clk, Actor: "BANK_001"}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// Of N acquirers racing on separate handles exactly one holds the drain
// lease; the others are told who holds it. It is taken over only after
// it expires on the injected clock (with a higher token), at once after a
// release, and at once by a later start of the holder's own node.
func TestDrainLeaseOneHolderAmongRacers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		clk := clock.NewManual(t0)
		const n = 8
		obs := sharedOutboxes(t, b, 4, clk, newCountingCore(nil))
		ids := make([]procid.Identity, n)
		for i := range ids {
			ids[i] = procid.New(fmt.Sprintf("node-%d", i), clk)
		}
		race := func(skip int) (winner int, lease DrainLease) {
			t.Helper()
			var mu sync.Mutex
			winner = -1
			var wg sync.WaitGroup
			for i := range n {
				if i == skip {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					l, err := obs[i%len(obs)].AcquireDrainLease(ctx, ids[i], ids[i].Owner("outbox"), 10*time.Second)
					if _, held := errors.AsType[*LeaseHeldError](err); held {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					defer mu.Unlock()
					if winner >= 0 {
						t.Errorf("drain lease held by %d and %d at once", winner, i)
					}
					winner, lease = i, l
				}()
			}
			wg.Wait()
			if winner < 0 {
				t.Fatal("nobody holds the drain lease")
			}
			return winner, lease
		}
		first, l1 := race(-1)
		if got, _ := obs[0].DrainLeaseHolder(ctx); got != ids[first].Owner("outbox") {
			t.Fatalf("holder %q, want %q", got, ids[first].Owner("outbox"))
		}
		// Not expired: every other acquirer is refused, naming the holder.
		other := (first + 1) % n
		_, err := obs[1].AcquireDrainLease(ctx, ids[other], ids[other].Owner("outbox"), 10*time.Second)
		if held, ok := errors.AsType[*LeaseHeldError](err); !ok || held.Holder != l1.Holder {
			t.Fatalf("acquire while held: %v", err)
		}
		// The holder dies (no renewal); after its lease the others race again.
		clk.Advance(10*time.Second + time.Millisecond)
		second, l2 := race(first) // the dead holder is not among them
		if l2.Token <= l1.Token {
			t.Fatalf("token %d after %d: a takeover must raise it", l2.Token, l1.Token)
		}
		if _, err := obs[2].RenewDrainLease(ctx, l1, 10*time.Second); !errors.Is(err, ErrDrainLeaseLost) {
			t.Fatalf("renewal by the dead holder: %v, want ErrDrainLeaseLost", err)
		}
		// A clean stop releases: the next acquirer takes it at once.
		if err := obs[3].ReleaseDrainLease(ctx, l2); err != nil {
			t.Fatal(err)
		}
		third := (second + 1) % n
		l3, err := obs[0].AcquireDrainLease(ctx, ids[third], ids[third].Owner("outbox"), 10*time.Second)
		if err != nil {
			t.Fatalf("acquire after release: %v", err)
		}
		// A restart of the holder's node takes it at once (the earlier
		// start is dead: the node lock says so), not after expiry.
		restarted := procid.New(ids[third].Node, clk)
		l4, err := obs[1].AcquireDrainLease(ctx, restarted, restarted.Owner("outbox"), 10*time.Second)
		if err != nil || l4.Token != l3.Token+1 {
			t.Fatalf("restart of the holder's node: %+v, %v", l4, err)
		}
	})
}

// Two nodes run the outbox loop on one shared database: only the drain
// lease holder claims postings; when it stops cleanly the other takes the
// bank at once and drains what follows; a holder that dies without
// releasing keeps the bank until its lease expires on the clock. Every
// posting reaches the core exactly once.
func TestRunDrainsOnlyUnderTheDrainLease(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		clk := clock.NewManual(t0)
		core := newCountingCore(nil)
		obs := sharedOutboxes(t, b, 2, clk, core)
		a, bb := procid.New("node-a", clk), procid.New("node-b", clk)
		cfg := func(id procid.Identity) RunConfig {
			return RunConfig{Identity: id, Idle: 5 * time.Millisecond, Backoff: 5 * time.Millisecond}
		}
		holder := func() string {
			h, err := obs[0].DrainLeaseHolder(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		enqueue := func(prefix string, k int) []Posting {
			var ps []Posting
			for i := range k {
				ps = append(ps, post(fmt.Sprintf("%s-%02d", prefix, i), fmt.Sprintf("ACC%d", i%4), Credit, int64(i+1)))
			}
			r := &rig{db: obs[1].db, ob: obs[1]}
			r.enqueue(t, ps...)
			obs[0].Wake()
			obs[1].Wake()
			return ps
		}
		applied := func(ps []Posting) bool {
			for _, p := range ps {
				if core.timesApplied(p.Ref) != 1 {
					return false
				}
			}
			return true
		}
		claimers := func(prefix string) map[string]bool {
			out := map[string]bool{}
			err := obs[0].db.Read(ctx, func(tx *store.Tx) error {
				rows, err := tx.QueryContext(ctx, `SELECT e.payload_json FROM EntityStateLog e JOIN AdapterOutbox o ON o.id = CAST(e.entity_id AS INTEGER)
					WHERE e.entity_type = 'OUTBOX' AND e.event_type = 'OutboxClaimed' AND o.ref LIKE ?`, prefix+"-%")
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
					var raw string
					if err := rows.Scan(&raw); err != nil {
						return err
					}
					var p struct{ Owner string }
					if err := json.Unmarshal([]byte(raw), &p); err != nil {
						return err
					}
					node, _, _, _ := procid.ParseOwner(p.Owner)
					out[node] = true
				}
				return rows.Err()
			})
			if err != nil {
				t.Fatal(err)
			}
			return out
		}

		stopA := runOutbox(t, obs[0], cfg(a))
		waitFor(t, "node-a to hold the drain lease", func() bool { return strings.HasPrefix(holder(), a.Prefix()) })
		runOutbox(t, obs[1], cfg(bb))
		first := enqueue("P1", 24)
		waitFor(t, "the first postings applied", func() bool { return applied(first) })
		if got := claimers("P1"); len(got) != 1 || !got["node-a"] {
			t.Fatalf("first postings claimed by %v, want node-a only (the lease holder)", got)
		}

		stopA() // clean stop: the lease is released, node-b takes it at once
		waitFor(t, "node-b to take the released lease", func() bool { return strings.HasPrefix(holder(), bb.Prefix()) })
		second := enqueue("P2", 24)
		waitFor(t, "the second postings applied", func() bool { return applied(second) })
		if got := claimers("P2"); len(got) != 1 || !got["node-b"] {
			t.Fatalf("second postings claimed by %v, want node-b only", got)
		}
		for _, p := range append(first, second...) {
			if n := core.timesApplied(p.Ref); n != 1 {
				t.Fatalf("%s applied %d times", p.Ref, n)
			}
		}
	})
}

// A holder that died without releasing keeps the bank until its lease
// expires on the injected clock; then a waiting node takes over and
// drains.
func TestRunTakesOverADeadHoldersDrainLeaseAfterExpiry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		clk := clock.NewManual(t0)
		core := newCountingCore(nil)
		obs := sharedOutboxes(t, b, 2, clk, core)
		dead, live := procid.New("node-dead", clk), procid.New("node-live", clk)
		if _, err := obs[0].AcquireDrainLease(ctx, dead, dead.Owner("outbox"), 10*time.Second); err != nil {
			t.Fatal(err)
		}
		r := &rig{db: obs[1].db, ob: obs[1]}
		r.enqueue(t, post("D1", "A", Credit, 5))
		runOutbox(t, obs[1], RunConfig{Identity: live, Idle: 5 * time.Millisecond, Backoff: 5 * time.Millisecond})
		// The live node waits: a few of its lease reads pass, nothing is sent.
		for range 5 {
			time.Sleep(10 * time.Millisecond)
			if core.timesApplied("D1") != 0 {
				t.Fatal("a posting was sent while another node held the drain lease")
			}
		}
		clk.Advance(10*time.Second + time.Millisecond)
		waitFor(t, "the posting applied after the takeover", func() bool { return core.timesApplied("D1") == 1 })
		if h, _ := obs[0].DrainLeaseHolder(ctx); !strings.HasPrefix(h, live.Prefix()) {
			t.Fatalf("holder %q after the takeover", h)
		}
	})
}
