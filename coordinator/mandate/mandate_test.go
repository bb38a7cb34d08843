package mandate

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/entitystate"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

var t0 = time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC)

func setup(t *testing.T) (*Mandates, *clock.Manual, *store.DB) { return setupOn(t, storetest.SQLite) }

func setupOn(t *testing.T, b storetest.Backend) (*Mandates, *clock.Manual, *store.DB) {
	t.Helper()
	db := storetest.Open(t, b, "zc", store.Schema)
	clk := clock.NewManual(t0)
	return New(db, clk), clk, db
}

func amt(v int64) *int64 { return &v }

func TestCheckWalksTheChain(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ms, clk, _ := setupOn(t, b)
		ctx := context.Background()
		root, err := ms.Create(ctx, Mandate{MandateID: "MANDATE-ROOT", PayerBankID: "001", GranteeRef: "agent-1", MaxAmount: amt(100_000),
			AllowedPurposes: []string{"BILL", "MERCHANT"}, ValidTo: clock.Stamp(t0.Add(48 * time.Hour))}, "BANK_001")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ms.Create(ctx, Mandate{MandateID: "MANDATE-SUB", ParentMandateID: root.MandateID, PayerBankID: "001", GranteeRef: "agent-1:shop",
			MaxAmount: amt(50_000), AllowedPurposes: []string{"MERCHANT"}, AllowedLanes: []string{"EXPRESS"},
			ValidTo: clock.Stamp(t0.Add(24 * time.Hour))}, "BANK_001"); err != nil {
			t.Fatal(err)
		}
		ok := Request{MandateID: "MANDATE-SUB", PayerBankID: "001", Amount: 50_000, Purpose: "MERCHANT", Lane: "EXPRESS"}
		cases := []struct {
			name  string
			mod   func(*Request)
			code  string
			links int
		}{
			{"within scope", func(*Request) {}, "", 2},
			{"amount over the sub's limit", func(r *Request) { r.Amount = 50_001 }, "MANDATE_BREACH", 1},
			{"purpose the sub does not allow", func(r *Request) { r.Purpose = "BILL" }, "MANDATE_BREACH", 1},
			{"lane the sub does not allow", func(r *Request) { r.Lane = "STANDARD" }, "MANDATE_BREACH", 1},
			{"another payer", func(r *Request) { r.PayerBankID = "002" }, "MANDATE_BREACH", 1},
			{"unknown mandate", func(r *Request) { r.MandateID = "MANDATE-NONE" }, "MANDATE_NOT_FOUND", 1},
			{"root within scope", func(r *Request) { r.MandateID = "MANDATE-ROOT"; r.Purpose = "BILL"; r.Amount = 100_000 }, "", 1},
		}
		for _, c := range cases {
			r := ok
			c.mod(&r)
			v, err := ms.Check(ctx, r)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if v.ReasonCode != c.code || v.Allowed != (c.code == "") || len(v.Links) != c.links {
				t.Errorf("%s: %+v, want code %q with %d links", c.name, v, c.code, c.links)
			}
		}
		// Validity: the sub ends after 24h, the root after 48h.
		clk.Set(t0.Add(24 * time.Hour))
		if v, _ := ms.Check(ctx, ok); v.ReasonCode != "MANDATE_EXPIRED" {
			t.Fatalf("after valid_to: %+v", v)
		}
		clk.Set(t0)
		// Revoking the root stops the sub too (the chain is walked).
		if applied, err := ms.Revoke(ctx, "MANDATE-ROOT", "BANK_001"); err != nil || !applied {
			t.Fatalf("revoke: %v %v", applied, err)
		}
		clk.Advance(time.Second)
		v, _ := ms.Check(ctx, ok)
		if v.ReasonCode != "MANDATE_REVOKED" || len(v.Links) != 2 || !v.Links[0].OK || v.Links[1].MandateID != "MANDATE-ROOT" {
			t.Fatalf("after revoking the root: %+v", v)
		}
		if de, ok := domainerr.As(v.Err()); !ok || de.HTTPStatus() != 401 { // AUTH (spec 004 category table)
			t.Fatalf("Verdict.Err: %v", v.Err())
		}
	})
}

func TestSubMandateCannotWiden(t *testing.T) {
	ms, _, _ := setup(t)
	ctx := context.Background()
	if _, err := ms.Create(ctx, Mandate{MandateID: "MANDATE-P", PayerBankID: "001", GranteeRef: "a", MaxAmount: amt(1000),
		AllowedPurposes: []string{"BILL"}, AllowedLanes: []string{"EXPRESS"}, ValidTo: clock.Stamp(t0.Add(time.Hour))}, "OPS"); err != nil {
		t.Fatal(err)
	}
	base := Mandate{ParentMandateID: "MANDATE-P", PayerBankID: "001", GranteeRef: "b", MaxAmount: amt(500),
		AllowedPurposes: []string{"BILL"}, AllowedLanes: []string{"EXPRESS"}, ValidTo: clock.Stamp(t0.Add(30 * time.Minute))}
	cases := []struct {
		name  string
		mod   func(*Mandate)
		code  string
		field string
	}{
		{"no limit under a limited parent", func(m *Mandate) { m.MaxAmount = nil }, "MANDATE_BREACH", "max_amount"},
		{"higher limit", func(m *Mandate) { m.MaxAmount = amt(1001) }, "MANDATE_BREACH", "max_amount"},
		{"any purpose", func(m *Mandate) { m.AllowedPurposes = nil }, "MANDATE_BREACH", "allowed_purposes"},
		{"another purpose", func(m *Mandate) { m.AllowedPurposes = []string{"P2P"} }, "MANDATE_BREACH", "allowed_purposes"},
		{"another lane", func(m *Mandate) { m.AllowedLanes = []string{"EXPRESS", "STANDARD"} }, "MANDATE_BREACH", "allowed_lanes"},
		{"open-ended", func(m *Mandate) { m.ValidTo = "" }, "MANDATE_BREACH", "valid_to"},
		{"longer", func(m *Mandate) { m.ValidTo = clock.Stamp(t0.Add(2 * time.Hour)) }, "MANDATE_BREACH", "valid_to"},
		{"earlier start", func(m *Mandate) { m.ValidFrom = clock.Stamp(t0.Add(-time.Hour)) }, "MANDATE_BREACH", "valid_from"},
		{"another payer", func(m *Mandate) { m.PayerBankID = "002" }, "MANDATE_BREACH", "payer_bank_id"},
		{"missing parent", func(m *Mandate) { m.ParentMandateID = "MANDATE-X" }, "MANDATE_NOT_FOUND", ""},
		{"bad id", func(m *Mandate) { m.MandateID = "M-1" }, "INVALID_MANDATE_ID", "mandate_id"},
		{"narrower", func(*Mandate) {}, "", ""},
	}
	for _, c := range cases {
		m := base
		c.mod(&m)
		_, err := ms.Create(ctx, m, "OPS")
		if domainerr.Code(err) != c.code {
			t.Errorf("%s: %v, want %q", c.name, err, c.code)
			continue
		}
		if de, ok := domainerr.As(err); ok && c.field != "" && de.Details["field"] != c.field {
			t.Errorf("%s: field %v, want %s", c.name, de.Details["field"], c.field)
		}
	}
}

// TestRevokeRaceAppliesOnce: N goroutines revoke one mandate; exactly one
// applies, and EntityStateLog has one MandateRevoked row.
func TestRevokeRaceAppliesOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ms, _, db := setupOn(t, b)
		ctx := context.Background()
		if _, err := ms.Create(ctx, Mandate{MandateID: "MANDATE-R", PayerBankID: "001", GranteeRef: "a"}, "OPS"); err != nil {
			t.Fatal(err)
		}
		const n = 16
		var wg sync.WaitGroup
		var mu sync.Mutex
		applied := 0
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := ms.Revoke(ctx, "MANDATE-R", "OPS")
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					applied++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		var hist []entitystate.Entry
		if err := db.Read(ctx, func(tx *store.Tx) error {
			var err error
			hist, err = entitystate.History(ctx, tx, EntityType, "MANDATE-R")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if applied != 1 || len(hist) != 2 || hist[1].EventType != EventRevoked {
			t.Fatalf("applied %d, history %+v; want 1 revoke and [created, revoked]", applied, hist)
		}
		m, _ := ms.Get(ctx, "MANDATE-R")
		if m.Status != StatusRevoked || m.RevokedAt != clock.Stamp(t0) {
			t.Fatalf("row after revoke: %+v", m)
		}
	})
}
