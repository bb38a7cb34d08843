package events

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

// raceAcquire has every outbox but the holder's try to take the lease at
// once (outbox i as owner node-i/e/events); it returns the leases won and
// the holders the losers were told about.
func raceAcquire(t *testing.T, obs []*Outbox, ttl time.Duration, holder string) (won []Lease, told []string) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, o := range obs {
		if fmt.Sprintf("node-%d/e/events", i) == holder {
			continue
		}
		wg.Add(1)
		go func(i int, o *Outbox) {
			defer wg.Done()
			l, err := o.AcquireLease(context.Background(), fmt.Sprintf("node-%d/e/events", i), ttl)
			mu.Lock()
			defer mu.Unlock()
			var held *LeaseHeldError
			switch {
			case err == nil:
				won = append(won, l)
			case errors.As(err, &held) && errors.Is(err, ErrLeaseHeld):
				told = append(told, held.Owner)
			default:
				t.Errorf("node %d: %v", i, err)
			}
		}(i, o)
	}
	wg.Wait()
	return won, told
}

// Eight publishers of eight nodes (one database handle each) race for the
// stream's lease: exactly one holds it at a time; it is taken over only
// after it expired on the injectable clock or was released; a holder that
// was taken over is fenced (its cursor moves change nothing); the cursor
// survives every hand-over. SQLite and PostgreSQL.
func TestPublisherLeaseRace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		loc := b.Location(t, "zc")
		clk := clock.NewManual(t0)
		const nodes = 8
		var obs []*Outbox
		for i := 0; i < nodes; i++ {
			db, err := store.Open(ctx, loc, store.Schema)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			obs = append(obs, New(db, clk))
		}
		const ttl = 10 * time.Second

		won, told := raceAcquire(t, obs, ttl, "")
		if len(won) != 1 || len(told) != nodes-1 {
			t.Fatalf("first race: %d won, %d refused", len(won), len(told))
		}
		first := won[0]
		if first.Token != 1 || first.Acked != 0 || !first.Until.Equal(t0.Add(ttl)) {
			t.Fatalf("first lease %+v", first)
		}
		for _, h := range told {
			if h != first.Owner && h != "(a concurrent acquirer)" {
				t.Errorf("a loser was told the holder is %q, not %q", h, first.Owner)
			}
		}
		first, err := obs[0].Advance(ctx, first, 40)
		if err != nil {
			t.Fatal(err)
		}
		// Not expired yet: nobody takes it.
		clk.Advance(ttl - time.Millisecond)
		if won, _ := raceAcquire(t, obs, ttl, first.Owner); len(won) != 0 {
			t.Fatalf("an unexpired lease was taken: %+v", won)
		}

		// Expired (the holder stopped renewing): exactly one takes over,
		// with the cursor where the old holder left it.
		clk.Advance(time.Millisecond)
		won, _ = raceAcquire(t, obs, ttl, first.Owner)
		if len(won) != 1 || won[0].Token != 2 || won[0].Acked != 40 {
			t.Fatalf("takeover: %+v", won)
		}
		second := won[0]
		// The old holder is fenced: its move changes nothing.
		_, err = obs[1].Advance(ctx, first, 99)
		var lost *LeaseLostError
		if !errors.As(err, &lost) || !errors.Is(err, ErrLeaseLost) || lost.Holder != second.Owner || lost.Current != 2 {
			t.Fatalf("fenced advance: %v", err)
		}
		if _, err := obs[2].Renew(ctx, first); !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("fenced renew: %v", err)
		}
		if err := obs[3].ReleaseLease(ctx, first); err != nil {
			t.Fatal(err)
		}
		st, err := obs[4].State(ctx)
		if err != nil || st.Acked != 40 || st.Owner != second.Owner || st.Token != 2 {
			t.Fatalf("after the fenced holder's moves: %+v %v", st, err)
		}

		// Renewed by its holder, the lease outlives its first TTL.
		clk.Advance(ttl / 2)
		if second, err = obs[5].Renew(ctx, second); err != nil {
			t.Fatal(err)
		}
		clk.Advance(ttl/2 + time.Millisecond)
		if won, _ := raceAcquire(t, obs, ttl, second.Owner); len(won) != 0 {
			t.Fatalf("a renewed lease was taken: %+v", won)
		}

		// A clean stop releases it: taken at once, on the same clock.
		if second, err = obs[6].Advance(ctx, second, 41); err != nil {
			t.Fatal(err)
		}
		if err := obs[6].ReleaseLease(ctx, second); err != nil {
			t.Fatal(err)
		}
		won, _ = raceAcquire(t, obs, ttl, second.Owner)
		if len(won) != 1 || won[0].Token != 3 || won[0].Acked != 41 {
			t.Fatalf("after release: %+v", won)
		}

		// A restarted node (same node id, new epoch) takes its earlier
		// start's unexpired lease at once; another node still cannot.
		third := won[0]
		node, _, _, _ := procid.ParseOwner(third.Owner)
		if _, err := obs[0].AcquireLease(ctx, "other-node/e2/events", ttl); !errors.Is(err, ErrLeaseHeld) {
			t.Fatalf("another node took a live lease: %v", err)
		}
		restarted, err := obs[0].AcquireLease(ctx, node+"/e2/events", ttl)
		if err != nil || restarted.Token != 4 || restarted.Acked != 41 {
			t.Fatalf("restarted node %s: %+v %v", node, restarted, err)
		}
		if _, err := obs[1].Advance(ctx, third, 50); !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("the earlier start was not fenced: %v", err)
		}
	})
}
