package filedrop

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
	"github.com/zcgw/zcgw/formats/zengin"
)

// Three nodes, each with its own handle of one shared coordinator
// database (PostgreSQL: three processes) and its own orchestrator, poll
// one shared files root (node.json files_root). Every dropped file is
// taken by exactly one node (the atomic rename into processing/), every
// record becomes exactly one transfer, and nothing is left in inbound/ or
// processing/.
func TestNodesOnOneDatabaseTakeEachDroppedFileOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		const nodes, files, n = 3, 5, 12
		loc := b.Location(t, "zc")
		f := newFixtureAt(t, t.TempDir(), loc, nil)
		for i := range files {
			f.drop(fmt.Sprintf("DROP%d.txt", i), zenginFile(t, zengin.KindTransfer, "0001", recs(n+i)))
		}
		ps := []*Processor{f.p}
		for range nodes - 1 {
			db, err := store.OpenCoordinator(f.ctx, loc)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			orch, err := orchestrator.New(orchestrator.Config{DB: db, Clock: f.clk})
			if err != nil {
				t.Fatal(err)
			}
			cfg := f.cfg
			cfg.DB, cfg.Coordinator, cfg.Participants = db, orch, orch.Participants()
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var total Pass
		for _, p := range ps {
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 3 {
						pass, err := p.PollOnce(f.ctx)
						mu.Lock()
						if err != nil {
							t.Error(err)
						}
						total.add(pass)
						mu.Unlock()
					}
				}()
			}
		}
		wg.Wait()
		if total.Taken != files {
			t.Fatalf("files taken %d times, want %d (once each)", total.Taken, files)
		}
		want := 0
		for i := range files {
			want += n + i
		}
		if got := f.count(`SELECT COUNT(*) FROM Transactions`); got != want {
			t.Fatalf("transfers = %d, want %d", got, want)
		}
		if got := f.count(`SELECT COUNT(*) FROM FileDrops WHERE status = 'ACCEPTED'`); got != files {
			t.Fatalf("accepted drops = %d, want %d", got, files)
		}
		for _, dir := range []string{f.folders().Inbound, f.folders().Processing} {
			left, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != 0 {
				t.Fatalf("%s holds %d entries after the pollers", filepath.Base(dir), len(left))
			}
		}
	})
}
