package adapter

import (
	"testing"

	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/store"
)

// A drift opens a real Case row in the coordinator's database, and the
// AdapterReconDrift row carries its case_id.
func TestReconDriftOpensARealCoordinatorCase(t *testing.T) {
	var zc *store.DB
	h := newHarness(t, func(cfg *Config) {
		var err error
		zc, err = store.Open(t.Context(), t.TempDir()+"/zc.db", store.Schema)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Cases = CoordinatorCases{DB: zc, Cases: cases.New(cfg.Clock, nil, 0)}
	})
	defer zc.Close()
	h.account("h:a", "0000001", "A", 1000)
	h.core.set(func(c *fakeCore) { c.balance["0000001"] += 5 })
	r, err := h.a.ReconcileAccount(h.ctx, "h:a")
	if err != nil || r.Status != ReconDrift || r.CaseID == "" {
		t.Fatalf("recon: %+v %v", r, err)
	}
	var k cases.Case
	if err := zc.Read(h.ctx, func(tx *store.Tx) error {
		var err error
		k, err = cases.Get(h.ctx, tx, r.CaseID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if k.State != cases.StateOpen || k.ReasonCode != "RECON_DRIFT" || k.OpenedBy != "BANK" || k.CausePartyID != "001" {
		t.Fatalf("case: %+v", k)
	}
	ds, _ := h.a.Drifts(h.ctx, "OPEN")
	if len(ds) != 1 || ds[0].CaseID != k.CaseID || ds[0].Drift != 5 {
		t.Fatalf("drift rows: %+v", ds)
	}
	// A second reconciliation neither records a new drift nor a new case.
	r2, err := h.a.ReconcileAccount(h.ctx, "h:a")
	if err != nil || r2.DriftID != r.DriftID || r2.CaseID != r.CaseID {
		t.Fatalf("second recon: %+v %v", r2, err)
	}
	var n int
	zc.Read(h.ctx, func(tx *store.Tx) error { return tx.QueryRowContext(h.ctx, `SELECT COUNT(*) FROM Cases`).Scan(&n) })
	if n != 1 {
		t.Fatalf("%d cases, want 1", n)
	}
}
