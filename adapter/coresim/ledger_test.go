package coresim

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
)

func openCore(t testing.TB) *Core {
	t.Helper()
	c, err := Open(context.Background(), Config{Bank: "001", DBPath: filepath.Join(t.TempDir(), "core.db"),
		Clock: clock.NewManual(time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func mustBalance(t *testing.T, c *Core, acct string) BalanceOut {
	t.Helper()
	b, err := c.Balance(context.Background(), acct)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The baseline: the core is not idempotent and refuses overdrafts.
func TestCoreIsNotIdempotentAndRefusesOverdraft(t *testing.T) {
	ctx := context.Background()
	c := openCore(t)
	if err := c.OpenAccount(ctx, "001-1-1234567", "ヤマダ タロウ", 1000); err != nil {
		t.Fatal(err)
	}
	in := PostIn{Ref: "P1", TxID: "TX1", Account: "001-1-1234567", Kind: KindCredit, Amount: 100}
	for i := 0; i < 2; i++ {
		out, err := c.Post(ctx, in)
		if err != nil || !out.Applied {
			t.Fatalf("post %d: %+v %v", i, out, err)
		}
	}
	if b := mustBalance(t, c, "001-1-1234567"); b.Balance != 1200 {
		t.Fatalf("same posting twice must be applied twice: balance %d", b.Balance)
	}
	lk, _ := c.Lookup(ctx, "P1")
	if lk.State != StateApplied || lk.Count != 2 {
		t.Fatalf("lookup: %+v", lk)
	}
	out, err := c.Post(ctx, PostIn{Ref: "P2", TxID: "TX2", Account: "001-1-1234567", Kind: KindDebit, Amount: 5000})
	if err != nil || out.Applied || out.ReasonCode != ReasonInsufficientFunds {
		t.Fatalf("overdraft: %+v %v", out, err)
	}
	if b := mustBalance(t, c, "001-1-1234567"); b.Balance != 1200 {
		t.Fatalf("refused debit changed the balance: %d", b.Balance)
	}
	if lk, _ := c.Lookup(ctx, "P2"); lk.State != StateRefused || lk.ReasonCode != ReasonInsufficientFunds {
		t.Fatalf("lookup refused: %+v", lk)
	}
	if lk, _ := c.Lookup(ctx, "NEVER"); lk.State != StateUnknown {
		t.Fatalf("lookup unknown: %+v", lk)
	}
	lines, _ := c.Journal(ctx, "001-1-1234567")
	if len(lines) != 3 || lines[1].Ref != "P1" || lines[2].Ref != "P1" || lines[2].TxID != "TX1" || lines[2].BalanceAfter != 1200 {
		t.Fatalf("journal: %+v", lines)
	}
}

func TestCorePostings(t *testing.T) {
	ctx := context.Background()
	c := openCore(t)
	c.OpenAccount(ctx, "001-1-0000001", "A SAN", 500)
	cases := []struct {
		name    string
		in      PostIn
		applied bool
		reason  string
		balance int64
	}{
		{"debit", PostIn{Ref: "D1", TxID: "T1", Account: "001-1-0000001", Kind: KindDebit, Amount: 200}, true, "", 300},
		{"reversal of debit credits", PostIn{Ref: "V1", TxID: "T1", Account: "001-1-0000001", Kind: KindReversal, Amount: 200, ReversalOf: "D1"}, true, "", 500},
		{"credit", PostIn{Ref: "C1", TxID: "T2", Account: "001-1-0000001", Kind: KindCredit, Amount: 50}, true, "", 550},
		{"reversal of credit debits", PostIn{Ref: "V2", TxID: "T2", Account: "001-1-0000001", Kind: KindReversal, Amount: 50, ReversalOf: "C1"}, true, "", 500},
		{"reversal of unknown", PostIn{Ref: "V3", TxID: "T3", Account: "001-1-0000001", Kind: KindReversal, Amount: 1, ReversalOf: "NOPE"}, false, ReasonOriginalNotFound, 500},
		{"reversal larger than original", PostIn{Ref: "V4", TxID: "T1", Account: "001-1-0000001", Kind: KindReversal, Amount: 201, ReversalOf: "D1"}, false, ReasonInvalidAmount, 500},
		{"unknown account", PostIn{Ref: "X1", TxID: "T4", Account: "001-1-0000099", Kind: KindCredit, Amount: 1}, false, ReasonAccountNotFound, 500},
		{"bad kind", PostIn{Ref: "X2", TxID: "T4", Account: "001-1-0000001", Kind: "MOVE", Amount: 1}, false, ReasonInvalidRequest, 500},
		{"zero amount", PostIn{Ref: "X3", TxID: "T4", Account: "001-1-0000001", Kind: KindCredit, Amount: 0}, false, ReasonInvalidAmount, 500},
	}
	for _, tc := range cases {
		out, err := c.Post(ctx, tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if out.Applied != tc.applied || out.ReasonCode != tc.reason {
			t.Fatalf("%s: %+v", tc.name, out)
		}
		if b := mustBalance(t, c, "001-1-0000001"); b.Balance != tc.balance {
			t.Fatalf("%s: balance %d want %d", tc.name, b.Balance, tc.balance)
		}
	}
}

func TestCoreHolds(t *testing.T) {
	ctx := context.Background()
	c := openCore(t)
	c.OpenAccount(ctx, "001-1-0000001", "A SAN", 1000)
	if h, _ := c.Hold(ctx, "H1", "T1", "001-1-0000001", 700); !h.Applied || h.Available != 300 {
		t.Fatalf("hold: %+v", h)
	}
	if h, _ := c.Hold(ctx, "H2", "T2", "001-1-0000001", 400); h.Applied || h.ReasonCode != ReasonInsufficientFunds {
		t.Fatalf("second hold: %+v", h)
	}
	// Another transaction cannot spend held funds.
	if out, _ := c.Post(ctx, PostIn{Ref: "D2", TxID: "T2", Account: "001-1-0000001", Kind: KindDebit, Amount: 400}); out.Applied {
		t.Fatalf("debit spent held funds: %+v", out)
	}
	// The hold's own transaction consumes it.
	if out, _ := c.Post(ctx, PostIn{Ref: "D1", TxID: "T1", Account: "001-1-0000001", Kind: KindDebit, Amount: 700}); !out.Applied {
		t.Fatalf("debit under its own hold: %+v", out)
	}
	if b := mustBalance(t, c, "001-1-0000001"); b.Balance != 300 || b.Held != 0 || b.Available != 300 {
		t.Fatalf("after consume: %+v", b)
	}
	c.Hold(ctx, "H3", "T3", "001-1-0000001", 100)
	if h, _ := c.Release(ctx, "H3", "001-1-0000001"); !h.Applied || h.Available != 300 {
		t.Fatalf("release: %+v", h)
	}
	if h, _ := c.Release(ctx, "H3", "001-1-0000001"); h.Applied {
		t.Fatalf("second release: %+v", h)
	}
}

func TestAdjustBalanceOutOfBand(t *testing.T) {
	ctx := context.Background()
	c := openCore(t)
	c.OpenAccount(ctx, "001-1-0000001", "A SAN", 100)
	if err := c.AdjustBalanceOutOfBand(ctx, "001-1-0000001", -30); err != nil {
		t.Fatal(err)
	}
	if b := mustBalance(t, c, "001-1-0000001"); b.Balance != 70 {
		t.Fatalf("balance %d", b.Balance)
	}
	if err := c.AdjustBalanceOutOfBand(ctx, "001-1-0000001", -71); err == nil {
		t.Fatal("out-of-band change drove the balance negative")
	}
	lines, _ := c.Journal(ctx, "001-1-0000001")
	if last := lines[len(lines)-1]; last.Source != SourceOOB || last.Delta != -30 {
		t.Fatalf("journal: %+v", last)
	}
}

func TestOnlineWindows(t *testing.T) {
	ws, err := ParseWindows("08:30-17:00,22:00-02:00")
	if err != nil {
		t.Fatal(err)
	}
	c := openCore(t)
	c.SetWindows(ws)
	jst := func(h, m int) time.Time { return time.Date(2026, 12, 2, h, m, 0, 0, clock.JST) }
	cases := []struct {
		at     time.Time
		online bool
	}{
		{jst(8, 29), false}, {jst(8, 30), true}, {jst(16, 59), true}, {jst(17, 0), false},
		{jst(23, 0), true}, {jst(1, 59), true}, {jst(2, 0), false},
	}
	for _, tc := range cases {
		if got := c.Online(tc.at); got != tc.online {
			t.Errorf("%s: online=%v want %v", tc.at.Format("15:04"), got, tc.online)
		}
	}
	c.SetOffline(true)
	if c.Online(jst(9, 0)) {
		t.Fatal("forced offline but online")
	}
	for _, bad := range []string{"8:30-17:00", "08:30", "25:00-26:00", "08:60-09:00"} {
		if _, err := ParseWindows(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestErrorsMaskAccountNumbers: an error about an account names it in the
// masked form (coreacct.Mask), so a logged error leaks no account number.
func TestErrorsMaskAccountNumbers(t *testing.T) {
	c := openCore(t)
	ctx := context.Background()
	for name, err := range map[string]error{
		"close unknown":  c.CloseAccount(ctx, "100-1-7654321"),
		"open malformed": c.OpenAccount(ctx, "100-3-7654321", "YAMADA", 0),
	} {
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		if strings.Contains(err.Error(), "7654321") || !strings.Contains(err.Error(), "***4321") {
			t.Errorf("%s: %q: want the account masked as ***4321", name, err)
		}
	}
}
