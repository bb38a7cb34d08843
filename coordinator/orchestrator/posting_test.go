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
