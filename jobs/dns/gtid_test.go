package dns

import (
	"context"
	"fmt"
	"testing"

	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
)

// gtidOf reads the settlement GTID of a cycle: its state and its legs as
// "bank ROLE amount STATE".
func (e *env) gtidOf(t testing.TB, cycleID string) (state string, legs []string) {
	t.Helper()
	ctx := context.Background()
	gtid := SettlementGTID(cycleID)
	if err := e.db.Read(ctx, func(tx *store.Tx) error {
		if err := tx.QueryRowContext(ctx, "SELECT state FROM GtidTransactions WHERE gtid = ?", gtid).Scan(&state); err != nil {
			return err
		}
		ls, err := lane.LegsInTx(ctx, tx, gtid)
		for _, l := range ls {
			legs = append(legs, fmt.Sprintf("%s %s %d %s %s", l.BankID, l.Role, l.AmountValue, l.Currency, l.State))
		}
		return err
	}); err != nil {
		t.Fatalf("settlement gtid of %s: %v", cycleID, err)
	}
	return state, legs
}

// A settled cycle is recorded as a GTID created at GT_SETTLED: one leg per
// bank that moved (net debtors PAYER, creditors PAYEE), GtidSettled on the
// GTID's chain, and the cycle's DnsSettled names it. On the resume path too.
func TestSettlementRecordedAsGtid(t *testing.T) {
	e := newEnv(t, 3)
	ctx := context.Background()
	e.settledTx(t, "EXPRESS", "001", "002", 5000, lane.Settled)
	e.settledTx(t, "EXPRESS", "003", "002", 2000, lane.Settled)
	e.settledTx(t, "EXPRESS", "002", "001", 1000, lane.Settled)
	// nets: 001 -4000, 002 +6000, 003 -2000; 001 is short at first.
	e.svc.Fund(ctx, "001", "JPY", 1000)
	e.svc.Fund(ctx, "003", "JPY", 5000)
	k, err := kickDay(ctx, e.svc, day)
	if err != nil {
		t.Fatal(err)
	}
	id := k.Cycle.CycleID
	if r, err := e.svc.Settle(ctx, id); err != nil || !r.Held {
		t.Fatalf("settle = %+v %v", r, err)
	}
	if n := e.count(t, "SELECT COUNT(*) FROM GtidTransactions"); n != 0 {
		t.Fatal("a held cycle recorded a settlement GTID")
	}
	e.svc.Fund(ctx, "001", "JPY", 3000)
	if r, err := e.svc.Resume(ctx, id); err != nil || !r.Applied || r.Held {
		t.Fatalf("resume = %+v %v", r, err)
	}
	state, legs := e.gtidOf(t, id)
	want := []string{"002 PAYEE 6000 JPY LEG_SETTLED", "001 PAYER 4000 JPY LEG_SETTLED", "003 PAYER 2000 JPY LEG_SETTLED"}
	if state != string(lane.GtSettled) || fmt.Sprint(legs) != fmt.Sprint(want) {
		t.Fatalf("gtid %s %v, want GT_SETTLED %v", state, legs, want)
	}
	gtid := SettlementGTID(id)
	if ev := e.events(t, gtid); fmt.Sprint(ev) != fmt.Sprint([]string{string(finality.GtidSettled)}) {
		t.Fatalf("gtid chain %v", ev)
	}
	if r, err := finality.VerifyChain(ctx, e.db, gtid); err != nil || !r.OK() {
		t.Fatalf("gtid chain does not verify: %+v %v", r, err)
	}
	if n := e.count(t, "SELECT COUNT(*) FROM FinalityLog WHERE gtid = ? AND event_type = 'DnsSettled' AND payload_json LIKE ?", id, `%"settlement_gtid":"`+gtid+`"%`); n != 1 {
		t.Fatalf("DnsSettled does not name the settlement GTID (%d)", n)
	}
	if n := e.count(t, "SELECT total_amount FROM GtidTransactions WHERE gtid = ?", gtid); n != 6000 {
		t.Fatalf("total_amount %d", n)
	}
	// Settling again changes nothing.
	before := e.dump(t)
	if r, err := e.svc.Settle(ctx, id); err != nil || r.Applied {
		t.Fatalf("settle again = %+v %v", r, err)
	}
	if e.dump(t) != before {
		t.Fatal("settling a settled cycle changed rows")
	}
}

// A cycle in which nothing moves records no settlement GTID.
func TestBalancedCycleRecordsNoGtid(t *testing.T) {
	e := newEnv(t, 2)
	ctx := context.Background()
	e.settledTx(t, "EXPRESS", "001", "002", 3000, lane.Settled)
	e.settledTx(t, "EXPRESS", "002", "001", 3000, lane.Settled)
	k, err := kickDay(ctx, e.svc, day)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := e.svc.Settle(ctx, k.Cycle.CycleID); err != nil || !r.Applied || len(r.Postings) != 0 {
		t.Fatalf("settle = %+v %v", r, err)
	}
	if n := e.count(t, "SELECT COUNT(*) FROM GtidTransactions"); n != 0 {
		t.Fatalf("%d settlement GTIDs for a cycle that moved nothing", n)
	}
}
