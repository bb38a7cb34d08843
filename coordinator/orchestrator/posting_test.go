package orchestrator

import (
	"sync"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
)

// A bank's report of a posting's final status becomes one event on the
// transfer's chain however many times, and however concurrently, it is
// sent; the read model keeps up with it (no lag), and malformed or unknown
// reports are refused with their reason.
func TestRecordCorePostingOncePerRefAndStatus(t *testing.T) {
	f := newFixture(t, nil)
	res := f.submit(pi("EXPRESS", 700), "cp-1")
	f.run()
	if v := f.view(res.TxID); v.State != "SETTLED" {
		t.Fatalf("state %s", v.State)
	}
	rep := CorePosting{TxID: res.TxID, BankID: "001", Kind: "DEBIT", Ref: "REF-1", Amount: 700, Status: CorePostingApplied, CoreRef: "J-1"}
	const racers = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	recorded := 0
	for i := 0; i < racers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := f.o.RecordCorePosting(f.ctx, rep)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				recorded++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if recorded != 1 {
		t.Errorf("%d racers recorded, want 1", recorded)
	}
	if n := f.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = ?`, res.TxID, string(finality.CorePostingApplied)); n != 1 {
		t.Errorf("%d CorePostingApplied entries, want 1", n)
	}
	if n := f.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = ? AND state_from = 'SETTLED' AND state_to = 'SETTLED'
		AND json_extract(payload_json, '$.core_ref') = 'J-1'`, res.TxID, string(finality.CorePostingApplied)); n != 1 {
		t.Errorf("entry does not carry the state and the core reference")
	}
	if v := f.view(res.TxID); v.ReadModelLag != 0 {
		t.Errorf("lag %s after the report, want 0", v.ReadModelLag)
	}
	// The same posting refused later is a different fact.
	rep.Status = CorePostingBlocked
	if ok, err := f.o.RecordCorePosting(f.ctx, rep); err != nil || !ok {
		t.Errorf("BLOCKED after APPLIED: %v %v", ok, err)
	}
	for _, c := range []struct {
		mod  func(*CorePosting)
		code string
	}{
		{func(p *CorePosting) { p.Status = "PENDING" }, "INVALID_REQUEST"},
		{func(p *CorePosting) { p.Kind = "FEE" }, "INVALID_REQUEST"},
		{func(p *CorePosting) { p.Ref = "" }, "INVALID_REQUEST"},
		{func(p *CorePosting) { p.TxID = "TX-NOPE" }, "TX_NOT_FOUND"},
	} {
		p := rep
		c.mod(&p)
		if _, err := f.o.RecordCorePosting(f.ctx, p); !domainerr.Has(err, c.code) {
			t.Errorf("%+v: %v, want %s", p, err, c.code)
		}
	}
}

// A batch of reports is one commit; a refused report (unknown transfer,
// bad status) leaves the others of its batch recorded, and a repeat of
// the batch records nothing more.
func TestRecordCorePostingsBatchRefusalsDoNotTouchNeighbours(t *testing.T) {
	f := newFixture(t, nil)
	a := f.submit(pi("EXPRESS", 700), "cpb-1")
	b := f.submit(pi("EXPRESS", 800), "cpb-2")
	f.run()
	batch := []CorePosting{
		{TxID: a.TxID, BankID: "001", Kind: "DEBIT", Ref: "REF-A", Amount: 700, Status: CorePostingApplied},
		{TxID: "TX-NOPE", BankID: "001", Kind: "DEBIT", Ref: "REF-X", Amount: 1, Status: CorePostingApplied},
		{TxID: b.TxID, BankID: "002", Kind: "CREDIT", Ref: "REF-B", Amount: 800, Status: CorePostingApplied},
		{TxID: b.TxID, BankID: "002", Kind: "CREDIT", Ref: "REF-B2", Amount: 800, Status: "PENDING"},
	}
	commits := f.db.Stats().Commits
	res, err := f.o.RecordCorePostings(f.ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.db.Stats().Commits - commits; n != 1 {
		t.Errorf("%d commits for one batch, want 1", n)
	}
	want := []struct {
		rec  bool
		code string
	}{{true, ""}, {false, "TX_NOT_FOUND"}, {true, ""}, {false, "INVALID_REQUEST"}}
	for i, w := range want {
		if res[i].Recorded != w.rec || (w.code == "" && res[i].Err != nil) || (w.code != "" && !domainerr.Has(res[i].Err, w.code)) {
			t.Errorf("report %d: %+v, want recorded=%v %s", i, res[i], w.rec, w.code)
		}
	}
	for _, c := range []struct{ txid, ref string }{{a.TxID, "REF-A"}, {b.TxID, "REF-B"}} {
		if n := f.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = ? AND json_extract(payload_json, '$.ref') = ?`,
			c.txid, string(finality.CorePostingApplied), c.ref); n != 1 {
			t.Errorf("%s %s: %d entries, want 1", c.txid, c.ref, n)
		}
	}
	res, err = f.o.RecordCorePostings(f.ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Recorded || res[2].Recorded {
		t.Errorf("repeat recorded again: %+v", res)
	}
	if v := f.view(b.TxID); v.ReadModelLag != 0 {
		t.Errorf("lag %s after the batch, want 0", v.ReadModelLag)
	}
}
