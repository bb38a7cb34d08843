package coresim

import (
	"context"
	"testing"
)

// The account lifecycle: open, closing hold (credits refused, debits
// allowed), close only at balance 0, and every action repeated answers
// Duplicate without changing anything.
func TestAccountLifecycle(t *testing.T) {
	ctx := context.Background()
	c := openCore(t)
	const acct = "100-1-0000042"
	steps := []struct {
		name           string
		action, holder string
		post           *PostIn
		wantApplied    bool
		wantDup        bool
		wantReason     string
		wantStatus     string
		wantBalance    int64
	}{
		{name: "open", action: MaintOpen, holder: "ｽｽﾞｷ ｲﾁﾛｳ", wantApplied: true, wantStatus: StatusOpen},
		{name: "open again, same holder", action: MaintOpen, holder: "スズキ イチロウ", wantApplied: true, wantDup: true, wantStatus: StatusOpen},
		{name: "open again, another holder", action: MaintOpen, holder: "ﾀﾅｶ ﾊﾅｺ", wantReason: ReasonAccountExists, wantStatus: StatusOpen},
		{name: "fund", post: &PostIn{Ref: "P1", TxID: "CASH-1", Account: acct, Kind: KindCredit, Amount: 500}, wantApplied: true, wantStatus: StatusOpen, wantBalance: 500},
		{name: "close without hold", action: MaintShut, wantReason: ReasonNotOnHold, wantStatus: StatusOpen, wantBalance: 500},
		{name: "hold", action: MaintHold, wantApplied: true, wantStatus: StatusClosingHold, wantBalance: 500},
		{name: "hold again", action: MaintHold, wantApplied: true, wantDup: true, wantStatus: StatusClosingHold, wantBalance: 500},
		{name: "credit on hold", post: &PostIn{Ref: "P2", TxID: "TX-2", Account: acct, Kind: KindCredit, Amount: 1}, wantReason: ReasonClosing, wantStatus: StatusClosingHold, wantBalance: 500},
		{name: "close with balance", action: MaintShut, wantReason: ReasonBalanceNotZero, wantStatus: StatusClosingHold, wantBalance: 500},
		{name: "pay out", post: &PostIn{Ref: "P3", TxID: "CASH-3", Account: acct, Kind: KindDebit, Amount: 500}, wantApplied: true, wantStatus: StatusClosingHold},
		{name: "close", action: MaintShut, wantApplied: true, wantStatus: StatusClosed},
		{name: "close again", action: MaintShut, wantApplied: true, wantDup: true, wantStatus: StatusClosed},
		{name: "lift after close", action: MaintLift, wantReason: ReasonAccountClosed, wantStatus: StatusClosed},
		{name: "credit after close", post: &PostIn{Ref: "P4", TxID: "TX-4", Account: acct, Kind: KindCredit, Amount: 1}, wantReason: ReasonAccountNotFound, wantStatus: StatusClosed},
	}
	for _, s := range steps {
		var applied, dup bool
		var reason string
		if s.post != nil {
			out, err := c.Post(ctx, *s.post)
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			applied, reason = out.Applied, out.ReasonCode
		} else {
			out, err := c.Maintain(ctx, s.action, acct, s.holder)
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			applied, dup, reason = out.Applied, out.Duplicate, out.ReasonCode
		}
		b := mustBalance(t, c, acct)
		if applied != s.wantApplied || dup != s.wantDup || reason != s.wantReason || b.Status != s.wantStatus || b.Balance != s.wantBalance {
			t.Errorf("%s: applied %v dup %v reason %q status %s balance %d; want %v %v %q %s %d", s.name, applied, dup, reason,
				b.Status, b.Balance, s.wantApplied, s.wantDup, s.wantReason, s.wantStatus, s.wantBalance)
		}
	}
}
