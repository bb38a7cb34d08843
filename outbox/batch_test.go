package outbox

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/store"
)

// batchCore is countingCore with ApplyBatch: it records each batch's size
// and answers each posting as Apply does.
type batchCore struct {
	*countingCore
	mu      sync.Mutex
	batches []int
}

func (b *batchCore) ApplyBatch(ctx context.Context, ps []Posting) []BatchResult {
	b.mu.Lock()
	b.batches = append(b.batches, len(ps))
	b.mu.Unlock()
	out := make([]BatchResult, len(ps))
	for i, p := range ps {
		out[i].ApplyResult, out[i].Err = b.Apply(ctx, p)
	}
	return out
}

func batchRig(t testing.TB, balances map[string]int64) (*rig, *batchCore) {
	t.Helper()
	r := newRig(t, balances)
	bc := &batchCore{countingCore: r.core}
	var err error
	if r.ob, err = New(Config{DB: r.db, Core: bc, Cases: r.cases, Clock: r.clk, Actor: "BANK_001"}); err != nil {
		t.Fatal(err)
	}
	return r, bc
}

// A pass over a BatchCore sends the head posting of every account in one
// ApplyBatch and costs two commits on the adapter's database whatever the
// batch's size: one for all claims, one for all outcomes. Each outcome is
// recorded as a single send records it (APPLIED, BLOCKED with its Case),
// with its state-log lines.
func TestPassSendsOneBatchInTwoCommits(t *testing.T) {
	r, bc := batchRig(t, map[string]int64{"ACC1": 0})
	const accounts = 12
	var ps []Posting
	for a := range accounts {
		ps = append(ps, post(fmt.Sprintf("P-%02d", a), fmt.Sprintf("ACC%d", a), Credit, 10))
	}
	ps[1] = post("P-01", "ACC1", Debit, 10) // refused: overdraft
	ids := r.enqueue(t, ps...)
	before := r.db.Stats()
	res, err := r.ob.Pass(context.Background(), RunConfig{Accounts: 64})
	if err != nil {
		t.Fatal(err)
	}
	after := r.db.Stats()
	if len(bc.batches) != 1 || bc.batches[0] != accounts {
		t.Fatalf("batches %v, want one of %d", bc.batches, accounts)
	}
	if res.Claimed != accounts || res.Applied != accounts-1 || res.Blocked != 1 || res.Stopped {
		t.Fatalf("pass %+v", res)
	}
	// Claims, outcomes, and the Case id of the refusal (openCase).
	if c := after.Commits - before.Commits; c > 3 {
		t.Fatalf("%d commits for a batch of %d, want at most 3", c, accounts)
	}
	for i, id := range ids {
		e := r.status(t, id)
		want := Applied
		if i == 1 {
			want = Blocked
		}
		if e.Status != want || e.Sends != 1 {
			t.Fatalf("%s: %s sends %d, want %s sends 1", e.Posting.Ref, e.Status, e.Sends, want)
		}
		log := r.stateLog(t, id)
		wantLines := 3 // enqueued, claimed, applied
		if i == 1 {
			wantLines = 4 // enqueued, claimed, blocked, case opened
		}
		if len(log) != wantLines || log[1].event != "OutboxClaimed" {
			t.Fatalf("%s: state log %+v", e.Posting.Ref, log)
		}
	}
	if r.cases.opened["OUTBOX-BLOCKED:P-01"] != 1 {
		t.Fatalf("cases %v", r.cases.opened)
	}
}

// A batch in which the core stops answering part-way stops the pass: the
// postings without an answer are IN_DOUBT (never PENDING), the answered
// ones APPLIED; the next pass asks about each in-doubt one by reference
// before anything is resent, and every posting is applied exactly once.
func TestBatchPartlyInDoubtIsResolvedByInquiry(t *testing.T) {
	r, _ := batchRig(t, nil)
	var ps []Posting
	for a := range 6 {
		ps = append(ps, post(fmt.Sprintf("Q-%d", a), fmt.Sprintf("ACC%d", a), Credit, 5))
	}
	ids := r.enqueue(t, ps...)
	r.core.mu.Lock()
	r.core.lostNext = 2 // the first two are posted, their answers lost
	r.core.mu.Unlock()
	res, err := r.ob.Pass(context.Background(), RunConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stopped || res.InDoubt != 2 || res.Applied != 4 {
		t.Fatalf("pass %+v", res)
	}
	if s := r.status(t, ids[0]).Status; s != InDoubt {
		t.Fatalf("lost answer left %s, want IN_DOUBT", s)
	}
	if _, err := r.ob.Pass(context.Background(), RunConfig{}); err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		if n := r.core.timesApplied(p.Ref); n != 1 {
			t.Fatalf("%s applied %d times", p.Ref, n)
		}
		if s := r.status(t, ids[i]).Status; s != Applied {
			t.Fatalf("%s: %s", p.Ref, s)
		}
	}
	if r.core.lookups != 2 {
		t.Fatalf("%d inquiries, want 2", r.core.lookups)
	}
}

// Batched passes racing over two database handles (as two processes)
// apply every posting exactly once and in each account's order. Run with
// -race.
func TestConcurrentBatchPassesApplyEachPostingOnce(t *testing.T) {
	r, bc := batchRig(t, nil)
	db2, err := store.Open(context.Background(), r.path, Schema)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	ob2, err := New(Config{DB: db2, Core: bc, Cases: r.cases, Clock: r.clk})
	if err != nil {
		t.Fatal(err)
	}
	const accounts, per = 8, 15
	var ps []Posting
	for i := range per {
		for a := range accounts {
			ps = append(ps, post(fmt.Sprintf("R-%d-%03d", a, i), fmt.Sprintf("ACC%d", a), Credit, 1))
		}
	}
	r.enqueue(t, ps...)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ob := r.ob
			if g%2 == 1 {
				ob = ob2
			}
			cfg := RunConfig{Identity: procid.New(fmt.Sprintf("node-%d", g), r.clk)}
			for {
				res, err := ob.Pass(context.Background(), cfg)
				if err != nil {
					t.Error(err)
					return
				}
				if res.Claimed == 0 {
					c, _ := ob.Counts(context.Background())
					if c[Pending] == 0 && c[Claimed] == 0 && c[InDoubt] == 0 {
						return
					}
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	for _, p := range ps {
		if n := r.core.timesApplied(p.Ref); n != 1 {
			t.Fatalf("%s applied %d times", p.Ref, n)
		}
	}
	for a := range accounts {
		acct := fmt.Sprintf("ACC%d", a)
		for i, ref := range r.core.order[acct] {
			if want := fmt.Sprintf("R-%d-%03d", a, i); ref != want {
				t.Fatalf("%s: posting %d is %s, want %s", acct, i, ref, want)
			}
		}
	}
}

// Run sleeps while there is nothing to do and a Wake (the adapter's commit
// of a posting) starts a pass at once, long before its Idle fallback.
func TestRunWakesOnEnqueue(t *testing.T) {
	r, _ := batchRig(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.ob.Run(ctx, RunConfig{Idle: time.Hour, CaseSweepEvery: time.Hour})
	}()
	defer func() { cancel(); <-done }()
	time.Sleep(50 * time.Millisecond) // Run is asleep
	ids := r.enqueue(t, post("W-1", "ACC1", Credit, 1))
	r.ob.Wake()
	deadline := time.Now().Add(5 * time.Second)
	for r.status(t, ids[0]).Status != Applied {
		if time.Now().After(deadline) {
			t.Fatalf("posting still %s 5s after Wake (Idle 1h)", r.status(t, ids[0]).Status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// While the core is offline a batch is tried once; then each retry probes
// with a single posting, so an offline core does not cost a claim and a
// release of every waiting posting every Backoff. Once a probe gets
// through, the next pass is a batch again.
func TestOfflineCoreIsProbedWithSinglePostings(t *testing.T) {
	r, bc := batchRig(t, nil)
	var ps []Posting
	for a := range 8 {
		ps = append(ps, post(fmt.Sprintf("O-%d", a), fmt.Sprintf("ACC%d", a), Credit, 1))
	}
	ids := r.enqueue(t, ps...)
	r.core.mu.Lock()
	r.core.offline = true
	r.core.mu.Unlock()
	ctx := context.Background()
	if res, err := r.ob.Pass(ctx, RunConfig{}); err != nil || !res.Stopped || res.NotSent != 8 {
		t.Fatalf("offline batch: %+v %v", res, err)
	}
	for range 3 {
		if res, err := r.ob.Pass(ctx, RunConfig{}); err != nil || !res.Stopped || res.Claimed != 1 {
			t.Fatalf("offline probe: %+v %v, want one posting claimed", res, err)
		}
	}
	if n := len(r.stateLog(t, ids[0])); n > 1+2*4 {
		t.Fatalf("%d state-log lines for a posting after 4 offline passes", n)
	}
	r.core.mu.Lock()
	r.core.offline = false
	r.core.mu.Unlock()
	if res, err := r.ob.Pass(ctx, RunConfig{}); err != nil || res.Stopped || res.Applied != 8 {
		t.Fatalf("probe back online: %+v %v", res, err)
	}
	if last := bc.batches[len(bc.batches)-1]; last != 8 || len(bc.batches) != 1 {
		t.Fatalf("batches %v: want the offline batch of 8 and no other (the probe pass sends one by one)", bc.batches)
	}
	for _, p := range ps {
		if n := r.core.timesApplied(p.Ref); n != 1 {
			t.Fatalf("%s applied %d times", p.Ref, n)
		}
	}
}
