package outbox

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// fakeReporter records reports; fail makes the next calls fail.
type fakeReporter struct {
	mu   sync.Mutex
	fail int
	got  []string // "ref status"
}

func (f *fakeReporter) ReportPosting(_ context.Context, r PostingReport) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail > 0 {
		f.fail--
		return errors.New("coordinator read-only")
	}
	f.got = append(f.got, r.Posting.Ref+" "+string(r.Status))
	return nil
}

// Every final status reaches the reporter exactly once: a failed report
// stays due and goes out on the next sweep, a reported one is not sent
// again, and a BLOCKED posting requeued and then APPLIED is reported once
// per status.
func TestReportMissingReportsEachFinalStatusOnce(t *testing.T) {
	r := newRig(t, map[string]int64{"A": 100})
	rep := &fakeReporter{fail: 1}
	var err error
	if r.ob, err = New(Config{DB: r.db, Core: r.core, Cases: r.cases, Clock: r.clk, Actor: "BANK_001", Postings: rep}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ids := r.enqueue(t, post("C1", "A", Credit, 50), post("D1", "A", Debit, 500))
	if _, err := r.ob.Drain(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if s := r.status(t, ids[1]).Status; s != Blocked {
		t.Fatalf("D1 %s, want BLOCKED", s)
	}
	if n, err := r.ob.ReportMissing(ctx); err == nil || n != 0 {
		t.Fatalf("failing reporter: %d, %v", n, err)
	}
	if n, err := r.ob.ReportMissing(ctx); err != nil || n != 2 {
		t.Fatalf("second sweep: %d, %v", n, err)
	}
	if n, err := r.ob.ReportMissing(ctx); err != nil || n != 0 {
		t.Fatalf("third sweep: %d, %v", n, err)
	}
	r.core.mu.Lock()
	r.core.balance["A"] = 1000
	r.core.mu.Unlock()
	if err := r.ob.Requeue(ctx, ids[1], "ops-1", "funded"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ob.Drain(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if n, err := r.ob.ReportMissing(ctx); err != nil || n != 1 {
		t.Fatalf("after requeue: %d, %v", n, err)
	}
	want := []string{"C1 APPLIED", "D1 BLOCKED", "D1 APPLIED"}
	if len(rep.got) != len(want) {
		t.Fatalf("reports %v, want %v", rep.got, want)
	}
	for i := range want {
		if rep.got[i] != want[i] {
			t.Fatalf("reports %v, want %v", rep.got, want)
		}
	}
}
