package params

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func setup(t *testing.T) (*store.DB, *Ledger, *finality.Log) {
	t.Helper()
	db, err := store.OpenCoordinator(context.Background(), filepath.Join(t.TempDir(), "zc.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clk := clock.NewManual(t0)
	log := finality.New(clk)
	return db, NewLedger(db, log, clk, nil, 30*time.Second), log
}

// globalEntries returns the GLOBAL chain's ParameterChanged payloads.
func globalEntries(t *testing.T, db *store.DB) []map[string]any {
	t.Helper()
	ctx := context.Background()
	var out []map[string]any
	err := db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT event_type, payload_json FROM FinalityLog WHERE txid IS NULL AND gtid IS NULL ORDER BY event_seq`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var typ, p string
			if err := rows.Scan(&typ, &p); err != nil {
				return err
			}
			if typ != string(finality.ParameterChanged) {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(p), &m); err != nil {
				return err
			}
			out = append(out, m)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDefaultsUntilChangedThenTheLedgerValueWithItsChainEntry(t *testing.T) {
	ctx := context.Background()
	db, l, _ := setup(t)
	if v, err := Get(ctx, db, HVThreshold); err != nil || v != 100_000_000 {
		t.Fatalf("default HV threshold %d %v", v, err)
	}
	res, err := l.Set(ctx, Change{Name: HVThreshold, Old: 100_000_000, New: 50_000_000, EvidenceRef: "CAB-2026-117", Reason: "board decision", By: "alice"})
	if err != nil || !res.Changed {
		t.Fatalf("Set: %+v %v", res, err)
	}
	v, err := Show(ctx, db, HVThreshold)
	if err != nil || v.Value != 50_000_000 || v.IsDefault || v.Version != 1 || v.ChangedBy != "alice" || v.EvidenceRef != "CAB-2026-117" ||
		v.Reason != "board decision" || v.ChangedAt != clock.Stamp(t0) || v.LogID == "" {
		t.Fatalf("after Set: %+v %v", v, err)
	}
	ents := globalEntries(t, db)
	if len(ents) != 1 {
		t.Fatalf("GLOBAL entries %v", ents)
	}
	e := ents[0]
	if e["parameter"] != "PR-HV-THRESHOLD" || e["old"] != float64(100_000_000) || e["new"] != float64(50_000_000) ||
		e["evidence_ref"] != "CAB-2026-117" || e["actor"] != "alice" || e["reason"] != "board decision" || e["unit"] != "JPY" {
		t.Fatalf("chain entry payload %v", e)
	}
	// A second change, from the new value; the chain verifies.
	if _, err := l.Set(ctx, Change{Name: HVThreshold, Old: 50_000_000, New: 70_000_000, EvidenceRef: "CAB-2026-118", Reason: "r", By: "bob"}); err != nil {
		t.Fatal(err)
	}
	if r, err := finality.VerifyChain(ctx, db, finality.GlobalChain); err != nil || !r.OK() || r.Entries != 2 {
		t.Fatalf("GLOBAL chain verify %+v %v", r, err)
	}
	// A change to the current value writes nothing.
	if res, err := l.Set(ctx, Change{Name: HVThreshold, Old: 70_000_000, New: 70_000_000, EvidenceRef: "x", Reason: "r", By: "bob"}); err != nil || res.Changed {
		t.Fatalf("no-op Set: %+v %v", res, err)
	}
	if n := len(globalEntries(t, db)); n != 2 {
		t.Fatalf("no-op wrote an entry: %d", n)
	}
}

// N operators change the same parameter from the same old value at once:
// exactly one wins, the others get CONCURRENCY_CONFLICT, and the chain
// holds exactly one entry.
func TestSetRaceFromTheSameOldValueOneWins(t *testing.T) {
	ctx := context.Background()
	db, l, _ := setup(t)
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = l.Set(ctx, Change{Name: ExecTimeout, Old: 60, New: int64(90 + i), EvidenceRef: fmt.Sprintf("EV-%d", i), Reason: "race", By: fmt.Sprintf("op-%d", i)})
		}()
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("two winners: %d and %d", won, i)
		case err == nil:
			won = i
		case domainerr.Code(err) != "CONCURRENCY_CONFLICT":
			t.Fatalf("loser %d: %v", i, err)
		}
	}
	if won < 0 {
		t.Fatal("nobody won")
	}
	v, err := Show(ctx, db, ExecTimeout)
	if err != nil || v.Value != int64(90+won) || v.Version != 1 || v.ChangedBy != fmt.Sprintf("op-%d", won) {
		t.Fatalf("after the race: %+v %v (winner %d)", v, err, won)
	}
	if ents := globalEntries(t, db); len(ents) != 1 || ents[0]["new"] != float64(90+won) {
		t.Fatalf("chain after the race: %v", ents)
	}
}

// Refusals write nothing: an unknown name, a value outside the bounds, a
// missing evidence_ref, operator or reason, a stale old value, a timeout
// not longer than the lease, and any change in a read-only mode.
func TestSetRefusals(t *testing.T) {
	ctx := context.Background()
	db, l, log := setup(t)
	ok := Change{EvidenceRef: "EV-1", Reason: "r", By: "alice"}
	with := func(name Name, old, new int64, mod func(*Change)) Change {
		c := ok
		c.Name, c.Old, c.New = name, old, new
		if mod != nil {
			mod(&c)
		}
		return c
	}
	for _, c := range []struct {
		what string
		c    Change
		code string
	}{
		{"unknown", with("PR-NOPE", 1, 2, nil), "NOT_FOUND"},
		{"below bounds", with(HVThreshold, 100_000_000, 0, nil), "INVALID_REQUEST"},
		{"above bounds", with(CaseSLA, 14400, 91*24*3600, nil), "INVALID_REQUEST"},
		{"no evidence", with(HVThreshold, 100_000_000, 5, func(c *Change) { c.EvidenceRef = "  " }), "EVIDENCE_REQUIRED"},
		{"no operator", with(HVThreshold, 100_000_000, 5, func(c *Change) { c.By = "" }), "MISSING_FIELD"},
		{"no reason", with(HVThreshold, 100_000_000, 5, func(c *Change) { c.Reason = "" }), "MISSING_FIELD"},
		{"stale old", with(HVThreshold, 99, 5, nil), "CONCURRENCY_CONFLICT"},
		{"exec = lease", with(ExecTimeout, 60, 30, nil), "INVALID_REQUEST"},
		{"payee proof < lease", with(PayeeProofTimeout, 60, 10, nil), "INVALID_REQUEST"},
	} {
		if _, err := l.Set(ctx, c.c); domainerr.Code(err) != c.code {
			t.Errorf("%s: %v, want %s", c.what, err, c.code)
		}
	}
	// The lease rule follows the ledger's lease: 31s passes with a 30s lease.
	if _, err := l.Set(ctx, with(ExecTimeout, 60, 31, nil)); err != nil {
		t.Fatalf("exec 31s over a 30s lease: %v", err)
	}
	if _, err := NewLedger(db, log, nil, nil, 45*time.Second).Set(ctx, with(ExecTimeout, 31, 40, nil)); domainerr.Code(err) != "INVALID_REQUEST" {
		t.Fatalf("exec 40s under a 45s lease: %v", err)
	}
	// BCP: refused.
	if _, _, err := sysmode.NewController(db, log, nil, nil).ActivateBCP(ctx, "ops", "drill"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Set(ctx, with(HVThreshold, 100_000_000, 5, nil)); domainerr.Code(err) != "SYSTEM_BCP_READ_ONLY" {
		t.Fatalf("Set in BCP: %v", err)
	}
	vs, err := List(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Name != ExecTimeout && !v.IsDefault {
			t.Errorf("%s changed by a refused Set: %+v", v.Name, v)
		}
	}
	if ents := globalEntries(t, db); len(ents) != 1 {
		t.Fatalf("chain holds %d ParameterChanged entries, want 1 (the accepted exec change)", len(ents))
	}
}

func TestParseAndFormat(t *testing.T) {
	d, _ := Lookup(CaseSLA)
	for in, want := range map[string]int64{"90s": 90, "4h": 14400, "1h30m": 5400, "7200": 7200} {
		if got, err := d.Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %d %v, want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"1.5s", "soon", "", "100ms"} {
		if _, err := d.Parse(bad); domainerr.Code(err) != "INVALID_REQUEST" {
			t.Errorf("Parse(%q): %v", bad, err)
		}
	}
	h, _ := Lookup(HVThreshold)
	if _, err := h.Parse("1h"); domainerr.Code(err) != "INVALID_REQUEST" {
		t.Errorf("an amount took a duration: %v", err)
	}
	if d.Format(14400) != "4h0m0s" || h.Format(5) != "5" {
		t.Errorf("Format: %s %s", d.Format(14400), h.Format(5))
	}
}

// A bank's limit changes through the ledger too: a guarded update of its
// Participants column from the value read ("none" is 0 for a nullable
// one), with a ParameterChanged entry naming the bank; a per-bank-only
// parameter without a bank and a system-only one with a bank are refused.
func TestSetBankLimit(t *testing.T) {
	ctx := context.Background()
	db, l, _ := setup(t)
	if err := db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO Participants (bank_id, bank_name, ingress_base_url, h_limit, registered_at) VALUES ('001', 'Bank 001', '/bank/001', 1000, ?)`, clock.Stamp(t0))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	set := func(name Name, bank string, old, new int64) error {
		_, err := l.Set(ctx, Change{Name: name, BankID: bank, Old: old, New: new, EvidenceRef: "CAB-L", Reason: "limit review", By: "alice"})
		return err
	}
	if err := set(TxAmountLimit, "001", 0, 5000); err != nil {
		t.Fatal(err)
	}
	v, err := ShowBank(ctx, db, TxAmountLimit, "001")
	if err != nil || v.Value != 5000 || v.IsDefault || v.Display != "5000" {
		t.Fatalf("after set: %+v %v", v, err)
	}
	if err := set(TxAmountLimit, "001", 0, 7000); domainerr.Code(err) != "CONCURRENCY_CONFLICT" {
		t.Fatalf("stale old: %v", err)
	}
	if err := set(TxAmountLimit, "001", 5000, 0); err != nil { // back to none
		t.Fatal(err)
	}
	if v, _ := ShowBank(ctx, db, TxAmountLimit, "001"); !v.IsDefault || v.Display != "none" {
		t.Fatalf("after clearing: %+v", v)
	}
	if err := set(HLimit, "001", 1000, 2000); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		err  error
		code string
	}{
		{"per-bank only, no bank", set(HLimit, "", 2000, 3000), "MISSING_FIELD"},
		{"system only, with a bank", set(CaseSLA, "001", 14400, 3600), "INVALID_REQUEST"},
		{"unknown bank", set(HLimit, "009", 0, 1), "PARTICIPANT_NOT_FOUND"},
		{"H limit not nullable", set(HLimit, "001", 2000, -1), "INVALID_REQUEST"},
	} {
		if domainerr.Code(c.err) != c.code {
			t.Errorf("%s: %v, want %s", c.what, c.err, c.code)
		}
	}
	ents := globalEntries(t, db)
	if len(ents) != 3 || ents[0]["bank_id"] != "001" || ents[0]["old"] != nil || ents[0]["new"] != float64(5000) ||
		ents[1]["new"] != nil || ents[2]["parameter"] != "PR-H-LIMIT" || ents[2]["old"] != float64(1000) {
		t.Fatalf("chain entries %v", ents)
	}
	if r, err := finality.VerifyChain(ctx, db, finality.GlobalChain); err != nil || !r.OK() {
		t.Fatalf("verify %+v %v", r, err)
	}
}
