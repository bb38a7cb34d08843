package corelink_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/corelink"
	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/adapter/mq/embedded"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
	"github.com/zcgw/zcgw/formats/coremsg"
	"github.com/zcgw/zcgw/outbox"
)

// Two nodes run the same simulated core in process on one shared queue
// store and one shared core database (PostgreSQL: what several nodes on
// one database do). Exactly one consumes the request queue; the other
// waits as a standby (MQRC 2042) and takes over when the holder stops.
// Every posting is applied exactly once at the core, before and after the
// hand-over.
func TestStandbyCoreTakesOverTheRequestQueue(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		mqLoc, coreLoc := b.Location(t, "mq"), b.Location(t, "core")
		q := coremsg.QueuesFor(bank)
		serve := coresim.ServeConfig{Poll: 20 * time.Millisecond, RequestQueue: q.Request, BackoutQueue: q.Backout}
		type node struct {
			core   *coresim.Core
			cancel context.CancelFunc
			done   chan error
		}
		start := func(name string, standby bool) *node {
			core, err := coresim.Open(ctx, coresim.Config{Bank: bank, DBPath: coreLoc})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { core.Close() })
			conn, err := embedded.New(mqLoc, embedded.Options{PollInterval: 5 * time.Millisecond, App: name}).Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			cctx, cancel := context.WithCancel(ctx)
			n := &node{core: core, cancel: cancel, done: make(chan error, 1)}
			if !standby {
				claim, err := core.Claim(ctx, conn, serve)
				if err != nil {
					t.Fatal(err)
				}
				s := serve
				s.Claim = claim
				go func() { n.done <- core.Serve(cctx, conn, s) }()
				return n
			}
			go func() { n.done <- core.ServeAsStandby(cctx, conn, serve, 10*time.Millisecond) }()
			return n
		}
		first := start("node-1", false)
		second := start("node-2", true)
		t.Cleanup(func() { second.cancel(); first.cancel() })
		if err := first.core.OpenAccount(ctx, acctA, "A", 0); err != nil {
			t.Fatal(err)
		}

		link, err := corelink.Open(ctx, corelink.Config{Bank: bank, Transport: embedded.New(mqLoc, embedded.Options{PollInterval: 5 * time.Millisecond}),
			Timeout: 5 * time.Second, RequestQueue: q.Request, ReplyQueue: q.Reply, BackoutQueue: q.Backout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { link.Close() })
		db := storetest.Open(t, b, "adapter", outbox.Schema)
		ob, err := outbox.New(outbox.Config{DB: db, Core: link, Actor: "BANK_" + bank})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var refs []string
		drain := func(prefix string, k int) {
			t.Helper()
			err := db.Write(ctx, func(tx *store.Tx) error {
				for i := range k {
					ref := fmt.Sprintf("%s-%02d", prefix, i)
					if _, err := ob.Enqueue(ctx, tx, posting(ref, acctA, outbox.Credit, int64(i+1))); err != nil {
						return err
					}
					mu.Lock()
					refs = append(refs, ref)
					mu.Unlock()
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				if _, err := ob.Drain(ctx, 64); err != nil {
					t.Fatal(err)
				}
				c, err := ob.Counts(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if c[outbox.Pending]+c[outbox.Claimed]+c[outbox.InDoubt] == 0 {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("postings not drained: %v", c)
				}
				if _, err := ob.ResolveInDoubt(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		drain("P1", 10)
		// The standby has served nothing: the holder's claim refuses it.
		select {
		case err := <-second.done:
			t.Fatalf("standby returned while the holder serves: %v", err)
		default:
		}
		first.cancel() // a clean stop releases the claim
		if err := <-first.done; err != nil {
			t.Fatalf("holder's Serve: %v", err)
		}
		drain("P2", 10)
		for _, ref := range refs {
			lk, err := second.core.Lookup(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			if lk.Count != 1 {
				t.Fatalf("%s applied %d times at the core, want once", ref, lk.Count)
			}
		}
		if bal, err := second.core.Balance(ctx, acctA); err != nil || bal.Balance != 2*55 {
			t.Fatalf("balance %+v %v, want 110", bal, err)
		}
	})
}
