package corelink_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/outbox"
)

// TestRandomFaultSchedules drains mixed postings through the embedded
// transport while injecting random core faults and outages, and checks
// that no posting was applied twice, none was lost, and every core
// balance equals opening + the applied postings. Each schedule is seeded;
// a failure prints the seed, and ZCGW_SEED=<seed> replays it.
// ZCGW_SCHEDULES sets how many schedules run (default 8).
func TestRandomFaultSchedules(t *testing.T) {
	n := 8
	if v, err := strconv.Atoi(os.Getenv("ZCGW_SCHEDULES")); err == nil && v > 0 {
		n = v
	}
	base := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("ZCGW_SEED"), 10, 64); err == nil {
		base, n = v, 1
	}
	for i := 0; i < n; i++ {
		seed := base + uint64(i)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			if !runSchedule(t, seed, newWorld(t, 300*time.Millisecond)) {
				t.Fatalf("schedule failed; replay with ZCGW_SEED=%d", seed)
			}
		})
	}
}

// TestRandomFaultSchedulesRabbit runs a few schedules over RabbitMQ.
func TestRandomFaultSchedulesRabbit(t *testing.T) {
	tr := rabbitOrSkipT(t)
	base := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("ZCGW_SEED"), 10, 64); err == nil {
		base = v
	}
	for i := 0; i < 3; i++ {
		seed := base + uint64(i)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			w := newWorldOn(t, t.TempDir(), tr, 300*time.Millisecond, fmt.Sprintf(".R%d", seed))
			if !runSchedule(t, seed, w) {
				t.Fatalf("schedule failed; replay with ZCGW_SEED=%d go test -run TestRandomFaultSchedulesRabbit", seed)
			}
		})
	}
}

func runSchedule(t *testing.T, seed uint64, w *world) bool {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ctx := context.Background()
	accts := []string{acctA, acctB}
	opening := map[string]int64{acctA: int64(rng.IntN(500)), acctB: int64(rng.IntN(500))}
	for _, a := range accts {
		w.open(t, a, "ﾃｽﾄ", opening[a])
	}
	var ps []outbox.Posting
	for i := 0; i < 10; i++ {
		a := accts[rng.IntN(2)]
		kind := outbox.Credit
		if rng.IntN(2) == 0 {
			kind = outbox.Debit
		}
		ps = append(ps, posting(fmt.Sprintf("R%d-%02d", seed%100000, i), a, kind, int64(1+rng.IntN(300))))
	}
	w.enqueue(t, ps...)
	deadline := time.Now().Add(60 * time.Second)
	for round := 0; ; round++ {
		switch rng.IntN(7) {
		case 0:
			w.core.InjectFaultsForTest(coresim.Faults{DropNextReply: 1})
		case 1:
			w.core.InjectFaultsForTest(coresim.Faults{DelayNextReply: 1, ReplyDelay: 400 * time.Millisecond})
		case 2:
			w.core.InjectFaultsForTest(coresim.Faults{CrashAfterApplyBeforeReply: 1})
		case 3:
			w.core.InjectFaultsForTest(coresim.Faults{DeliverTwice: 1})
		case 4:
			w.core.SetOffline(rng.IntN(2) == 0)
		default:
			w.core.InjectFaultsForTest(coresim.Faults{})
			w.core.SetOffline(false)
		}
		if _, err := w.ob.Drain(ctx, 1+rng.IntN(4)); err != nil {
			t.Error(err)
			return false
		}
		if _, err := w.ob.ResolveInDoubt(ctx); err != nil {
			t.Error(err)
			return false
		}
		c, _ := w.ob.Counts(ctx)
		if c[outbox.Pending]+c[outbox.Claimed]+c[outbox.InDoubt] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("not settled after %d rounds: %v", round, c)
			return false
		}
		if round > 30 { // let it finish: no more faults
			w.core.InjectFaultsForTest(coresim.Faults{})
			w.core.SetOffline(false)
		}
	}
	want := map[string]int64{acctA: opening[acctA], acctB: opening[acctB]}
	rows, _ := w.ob.List(ctx, outbox.Filter{})
	ok := true
	for _, r := range rows {
		n := w.timesApplied(t, r.Posting.Ref)
		switch r.Status {
		case outbox.Applied:
			if n != 1 {
				t.Errorf("%s APPLIED but journalled %d times", r.Posting.Ref, n)
				ok = false
			}
			d := r.Posting.Amount
			if r.Posting.Kind == outbox.Debit {
				d = -d
			}
			want[r.Posting.Account] += d
		case outbox.Blocked:
			if n != 0 || r.CaseID == "" {
				t.Errorf("%s BLOCKED but journalled %d times, case %q", r.Posting.Ref, n, r.CaseID)
				ok = false
			}
		default:
			t.Errorf("%s left %s", r.Posting.Ref, r.Status)
			ok = false
		}
	}
	for _, a := range accts {
		if got := w.balance(t, a); got != want[a] {
			t.Errorf("%s: core balance %d, outbox says %d (drift)", a, got, want[a])
			ok = false
		}
	}
	return ok
}
