package filedrop

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/zcgw/zcgw/formats/zengin"
)

// Several processes polling the same folders (the serve watcher and a
// CLI, two nodes): the claim is an atomic rename, the ledger rows are
// guarded, every submit is idempotent. Whatever the interleaving, the file
// is taken once and every record applied once. Run with -race.
func TestConcurrentPollersApplyEachRecordOnce(t *testing.T) {
	const pollers, n = 6, 30
	f := newFixture(t, nil)
	data := zenginFile(t, zengin.KindTransfer, "0001", recs(n))
	f.drop("RACE.txt", data)
	// A second file left half-applied by a crash, resumed by all at once.
	crash := &crashingCoordinator{Coordinator: f.orch, after: 7}
	f.cfg.Coordinator = crash
	crashed := f.newProcessor()
	src := t.TempDir() + "/RESUME.txt"
	must(t, os.WriteFile(src, zenginFile(t, zengin.KindSalary, "0001", recs(n)), 0o644))
	if _, err := crashed.SubmitFile(f.ctx, "001", src); err == nil {
		t.Fatal("SubmitFile did not crash")
	}
	f.cfg.Coordinator = f.orch

	ps := make([]*Processor, pollers)
	for i := range ps {
		ps[i] = f.newProcessor()
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var total Pass
	var errs []error
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				pass, err := p.PollOnce(f.ctx)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				total.add(pass)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if _, err := f.p.PollOnce(f.ctx); err != nil {
		t.Fatal(err)
	}
	if len(errs) != 0 {
		t.Fatalf("pollers failed: %v", errs)
	}
	if total.Taken != 1 {
		t.Fatalf("taken %d times", total.Taken)
	}
	if got := f.count(`SELECT COUNT(*) FROM Transactions`); got != 2*n {
		t.Fatalf("transfers = %d, want %d", got, 2*n)
	}
	if got := f.count(`SELECT COUNT(*) FROM FileDrops WHERE status = 'ACCEPTED'`); got != 2 {
		t.Fatalf("accepted drops = %d, want 2", got)
	}
	if got := f.count(`SELECT COUNT(*) FROM FileDrops`); got != 2 {
		t.Fatalf("drops = %d, want 2", got)
	}
	if got := f.files(f.folders().Processing); len(got) != 0 {
		t.Fatalf("processing = %v", got)
	}
}

// Two copies of the same content submitted at once (two names, two
// processes): one is applied, the other recorded as its duplicate, and
// the records are applied once.
func TestConcurrentCopiesOfOneFile(t *testing.T) {
	const n = 12
	f := newFixture(t, nil)
	data := zenginFile(t, zengin.KindTransfer, "0001", recs(n))
	dir := t.TempDir()
	var wg sync.WaitGroup
	res := make([]Drop, 4)
	errs := make([]error, 4)
	for i := range res {
		src := filepath.Join(dir, fmt.Sprintf("COPY%d.txt", i))
		must(t, os.WriteFile(src, data, 0o644))
		p := f.newProcessor()
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = p.SubmitFile(f.ctx, "001", src)
		}()
	}
	wg.Wait()
	applied, dups := 0, 0
	for i, d := range res {
		if errs[i] != nil {
			t.Fatalf("copy %d: %v", i, errs[i])
		}
		switch d.Status {
		case StatusAccepted:
			applied++
		case StatusDuplicate:
			dups++
		}
	}
	if applied != 1 || dups != 3 {
		t.Fatalf("applied %d, duplicates %d: %+v", applied, dups, res)
	}
	if got := f.count(`SELECT COUNT(*) FROM Transactions`); got != n {
		t.Fatalf("transfers = %d, want %d", got, n)
	}
}
