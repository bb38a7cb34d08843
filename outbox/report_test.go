package outbox

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
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

// An outbox file from before reports gains reported_status when New opens
// it, with its finished postings taken as reported (history is not
// announced again); a posting that finishes afterwards is reported.
func TestOldOutboxFileGainsReportedStatus(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	old := strings.Replace(Schema, "  applied_at    TEXT,\n  reported_status TEXT            -- the final status (APPLIED/BLOCKED) the PostingReporter last took\n",
		"  applied_at    TEXT\n", 1)
	if old == Schema {
		t.Fatal("test cannot build the old schema")
	}
	db, err := store.Open(ctx, path, old)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO AdapterOutbox (ref, txid, bank, account, kind, amount, status, created_at, updated_at)
			VALUES ('OLD-1', 'TX-OLD-1', '001', 'A', 'CREDIT', 5, 'APPLIED', ?, ?), ('OLD-2', 'TX-OLD-2', '001', 'A', 'CREDIT', 7, 'PENDING', ?, ?)`,
			sortableStamp(t0), sortableStamp(t0), sortableStamp(t0), sortableStamp(t0))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	rep := &fakeReporter{}
	ob, err := New(Config{DB: db, Core: newCountingCore(nil), Clock: clock.NewManual(t0), Postings: rep})
	if err != nil {
		t.Fatalf("New on an old file: %v", err)
	}
	if n, err := ob.ReportMissing(ctx); err != nil || n != 0 {
		t.Fatalf("history reported: %d %v", n, err)
	}
	if _, err := ob.Drain(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if n, err := ob.ReportMissing(ctx); err != nil || n != 1 || len(rep.got) != 1 || rep.got[0] != "OLD-2 APPLIED" {
		t.Fatalf("new landing: %d %v %v", n, err, rep.got)
	}
}
