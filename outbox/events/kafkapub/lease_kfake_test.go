package kafkapub_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
	"github.com/zcgw/zcgw/outbox/events"
	"github.com/zcgw/zcgw/outbox/events/kafkapub"
)

// Several nodes on one database (issue 16 item 3): four nodes, each with
// its own database handle and publisher, race to publish one outbox while
// a fifth appends. Publishers crash (dropped without Close: their lease
// stays until it expires on the shared manual clock, which a goroutine
// keeps advancing) and stop cleanly (Close releases the lease), and new
// publishers (new owners) replace them. Afterwards every event has
// arrived, each chain's first deliveries in event_seq order, every repeat
// an exact copy; at most one publisher held the lease at a time, and the
// lease changed hands. SQLite (handles on one file) and PostgreSQL.
func TestPublishersOfSeveralNodesKeepPerChainOrder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		const parts, chains, rounds, nodes = 4, 12, 40, 4
		topic := name(t, "events")
		if err := kafkapub.EnsureTopics(ctx, brokers, []string{topic}, parts, 1); err != nil {
			t.Fatal(err)
		}
		loc := b.Location(t, "zc")
		open := func() *store.DB {
			db, err := store.Open(ctx, loc, store.Schema)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		}
		clk := clock.NewManual(t0)
		const ttl = 10 * time.Second
		app := &coordinator{db: open(), log: finality.New(clk)}
		events.Install(app.log, events.Producer{}, nil)
		app.ob = events.New(app.db, clk)

		var published, fenced, crashes, stops atomic.Int64
		var wg sync.WaitGroup
		for n := 0; n < nodes; n++ {
			ob := events.New(open(), clk) // every node is up before the race starts
			wg.Add(1)
			go func(n int) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(n), 7))
				for gen := 0; ctx.Err() == nil; gen++ {
					p, err := kafkapub.New(ob, kafkapub.Config{Brokers: brokers, Topics: kafkapub.Topics{Default: topic}, Clock: clk,
						Owner: fmt.Sprintf("node-%d/gen-%d/events", n, gen), LeaseTTL: ttl, BatchRows: 1 + rng.IntN(15)})
					if err != nil {
						t.Error(err)
						return
					}
					life := 5 + rng.IntN(40)
					for step := 0; step < life && ctx.Err() == nil; step++ {
						st, err := p.Step(ctx)
						published.Add(int64(st.Sent))
						var lost *events.LeaseLostError
						if errors.As(err, &lost) {
							fenced.Add(1)
						} else if err != nil && ctx.Err() == nil {
							t.Errorf("node %d: %v", n, err)
						}
						if st.Wait > 0 || st.Read == 0 {
							time.Sleep(time.Millisecond)
						}
					}
					if rng.IntN(2) == 0 {
						crashes.Add(1) // dropped: the lease stays until it expires
						continue
					}
					stops.Add(1)
					if err := p.Close(); err != nil && ctx.Err() == nil {
						t.Errorf("node %d close: %v", n, err)
					}
				}
			}(n)
		}
		// Time passes: crashed publishers' leases expire.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				clk.Advance(ttl / 8)
				time.Sleep(2 * time.Millisecond)
			}
		}()
		for r := 1; r <= rounds; r++ {
			app.appendRound(t, r, chains) // rounds 10, 20, ... add a GLOBAL event
		}
		deadline := time.Now().Add(60 * time.Second)
		for app.unsent(t) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d events still unsent", app.unsent(t))
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		wg.Wait()

		dups, total := checkRounds(t, brokers, topic, parts, chains, rounds)
		st, err := app.ob.State(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.Token < 3 {
			t.Errorf("the lease was taken %d times; the race did not hand it over", st.Token)
		}
		t.Logf("%s: %d records (%d repeats), %d acknowledged, lease taken %d times, %d fenced steps, %d crashes, %d clean stops",
			b.Name, total, dups, published.Load(), st.Token, fenced.Load(), crashes.Load(), stops.Load())
	})
}
