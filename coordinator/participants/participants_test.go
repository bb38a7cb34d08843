package participants

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

func jst(h, m int) time.Time { return time.Date(2026, 12, 2, h, m, 0, 0, clock.JST) }

func TestWindowOpen(t *testing.T) {
	cases := []struct {
		start, end string
		at         time.Time
		open       bool
	}{
		{"", "", jst(3, 0), true},
		{"09:00", "09:00", jst(3, 0), true}, // start == end: 24h open
		{"09:00", "17:00", jst(8, 59), false},
		{"09:00", "17:00", jst(9, 0), true},
		{"09:00", "17:00", jst(16, 59), true},
		{"09:00", "17:00", jst(17, 0), false}, // [start, end)
		{"22:00", "06:00", jst(23, 0), true},  // wraps past midnight
		{"22:00", "06:00", jst(5, 59), true},
		{"22:00", "06:00", jst(6, 0), false},
		{"22:00", "06:00", jst(12, 0), false},
	}
	for _, c := range cases {
		p := Participant{WindowStart: c.start, WindowEnd: c.end}
		if got := p.WindowOpen(c.at); got != c.open {
			t.Errorf("%s-%s at %s: %v, want %v", c.start, c.end, c.at.Format("15:04"), got, c.open)
		}
		next := p.NextWindowOpen(c.at)
		if !p.WindowOpen(next) || next.Before(c.at) || next.Sub(c.at) > 24*time.Hour {
			t.Errorf("%s-%s at %s: next open %s", c.start, c.end, c.at.Format("15:04"), next)
		}
		if c.open && !next.Equal(c.at) {
			t.Errorf("open window: next open %s, want now", next)
		}
	}
}

func TestValidate(t *testing.T) {
	neg := int64(-1)
	for name, c := range map[string]struct {
		p    Participant
		code string
	}{
		"ok":          {Participant{BankID: "001", BankName: "A"}, ""},
		"no_id":       {Participant{BankName: "A"}, "MISSING_FIELD"},
		"no_name":     {Participant{BankID: "001"}, "MISSING_FIELD"},
		"bad_mode":    {Participant{BankID: "001", BankName: "A", ParticipationMode: "SOMETIMES"}, "INVALID_REQUEST"},
		"neg_limit":   {Participant{BankID: "001", BankName: "A", TxAmountLimit: &neg}, "INVALID_REQUEST"},
		"half_window": {Participant{BankID: "001", BankName: "A", WindowStart: "09:00"}, "INVALID_REQUEST"},
		"bad_window":  {Participant{BankID: "001", BankName: "A", WindowStart: "25:00", WindowEnd: "09:00"}, "INVALID_REQUEST"},
		"colon_id":    {Participant{BankID: "0:1", BankName: "A"}, "INVALID_REQUEST"},
		"dash_id":     {Participant{BankID: "00-1", BankName: "A"}, "INVALID_REQUEST"},
		"newline_id":  {Participant{BankID: "001\n", BankName: "A"}, "INVALID_REQUEST"},
	} {
		if got := domainerr.Code(c.p.Validate()); got != c.code {
			t.Errorf("%s: %q, want %q", name, got, c.code)
		}
	}
}

func TestRegistryRoundTripAndReadOnly(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC))
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "zc.db"), store.Schema)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := New(db, clk)
	lim := int64(5000)
	p, err := r.Create(ctx, Participant{BankID: "001", BankName: "A", HLimit: 10, IsActive: true, TxAmountLimit: &lim,
		WindowStart: "09:00", WindowEnd: "17:00"})
	if err != nil {
		t.Fatal(err)
	}
	if p.IngressBaseURL != "/bank/001" || p.ParticipationMode != ModeFull || *p.TxAmountLimit != 5000 || p.RegisteredAt != "2026-12-02T01:00:00.000000000Z" ||
		p.EffectiveHVThreshold() != DefaultHVThreshold {
		t.Fatalf("%+v", p)
	}
	if _, err := r.Create(ctx, Participant{BankID: "001", BankName: "again"}); domainerr.Code(err) != "INVALID_REQUEST" {
		t.Fatalf("duplicate: %v", err)
	}
	hv := int64(1000)
	p.HVThreshold, p.TxAmountLimit, p.ParticipationMode = &hv, nil, ModeSendOnly
	if p, err = r.Update(ctx, p); err != nil || p.TxAmountLimit != nil || p.EffectiveHVThreshold() != 1000 || p.ParticipationMode != ModeSendOnly {
		t.Fatalf("%+v %v", p, err)
	}
	if _, err := r.Update(ctx, Participant{BankID: "999", BankName: "x"}); domainerr.Code(err) != "PARTICIPANT_NOT_FOUND" {
		t.Fatal(err)
	}
	ctl := sysmode.NewController(db, finality.New(clk), clk, nil)
	if _, _, err := ctl.ActivateBCP(ctx, "op", "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Create(ctx, Participant{BankID: "002", BankName: "B"}); domainerr.Code(err) != "SYSTEM_BCP_READ_ONLY" {
		t.Fatalf("create in read-only: %v", err)
	}
	all, err := r.List(ctx)
	if err != nil || len(all) != 1 || all[0].BankID != "001" {
		t.Fatalf("list in read-only: %v %v", all, err)
	}
}
