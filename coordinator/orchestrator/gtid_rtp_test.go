package orchestrator

import (
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

// A GTID settles and a request to pay completes on each store backend
// (the SQL of both lanes runs on SQLite and PostgreSQL), with banks that
// answer every command OK; an NG leg cancels and a declined request ends.
func TestGtidAndRtpOnEachBackend(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		f := newFixtureOn(t, b, nil)
		legs := []GtidLegRequest{
			{LegID: "P1", Role: bankapi.RolePayer, BankID: "001", AccountHash: "h:a", Amount: bankapi.Amount{Value: 500, Currency: "JPY"}},
			{LegID: "E1", Role: bankapi.RolePayee, BankID: "002", AccountHash: "h:b", Amount: bankapi.Amount{Value: 500, Currency: "JPY"}},
		}
		if _, err := f.o.RegisterGtid(f.ctx, GtidRegister{GTID: "001-G1", Legs: legs}, "g1", "001"); err != nil {
			t.Fatal(err)
		}
		f.run()
		v, err := f.o.Gtid(f.ctx, "001-G1")
		if err != nil || v.State != "GT_SETTLED" || len(v.Chain) != 4 || f.view("001-G1.P1").State != "SETTLED" {
			t.Fatalf("gtid %+v %v", v, err)
		}
		if n := f.b.count(bankapi.LegReadyCheck); n != 2 {
			t.Fatalf("leg-ready-check %d", n)
		}

		if _, err := f.o.RegisterGtid(f.ctx, GtidRegister{GTID: "001-G2", Legs: legs, TimeoutSec: 5}, "g2", "001"); err != nil {
			t.Fatal(err)
		}
		f.b.failWith(bankapi.LegReadyCheck, domainerr.New("BANK_ERROR", "unreachable", nil), false)
		f.run()
		f.clk.Advance(5 * time.Second)
		if res, err := f.o.TimeoutSweep(f.ctx); err != nil || res.GtidTimeouts != 1 {
			t.Fatalf("sweep %+v %v", res, err)
		}
		f.b.failWith(bankapi.LegReadyCheck, nil, false)
		f.run()
		if v, err := f.o.Gtid(f.ctx, "001-G2"); err != nil || v.State != "GT_CANCELLED" || v.ReasonCode != ReasonGtidTimeout {
			t.Fatalf("timed out gtid %+v %v", v, err)
		}

		for i, answer := range []string{"accept", "decline"} {
			id := "RTP-002-" + answer
			if _, err := f.o.RequestRtp(f.ctx, RtpRequest{RtpID: id, PayerBankID: "001", PayeeAccountHash: "h:b",
				Amount: bankapi.Amount{Value: int64(100 + i), Currency: "JPY"}, ExpiresAt: clock.Stamp(f.clk.Now().Add(time.Hour)),
				PayeeName: "SHOP"}, id, "002"); err != nil {
				t.Fatal(err)
			}
			f.run()
			if answer == "accept" {
				_, err = f.o.AcceptRtp(f.ctx, id, RtpAccept{PayerAccountHash: "h:a"}, "001")
			} else {
				_, err = f.o.DeclineRtp(f.ctx, id, "001")
			}
			if err != nil {
				t.Fatal(err)
			}
			f.run()
		}
		if v, err := f.o.Rtp(f.ctx, "RTP-002-accept"); err != nil || v.State != string(RtpCompleted) || f.view(v.LinkedTxID).Lane != LaneRtp {
			t.Fatalf("accepted rtp %+v %v", v, err)
		}
		if v, err := f.o.Rtp(f.ctx, "RTP-002-decline"); err != nil || v.State != string(RtpDeclined) || v.ReasonCode != ReasonRtpDeclined {
			t.Fatalf("declined rtp %+v %v", v, err)
		}
	})
}

// On each backend, the two legs of a decided GTID have their credits
// refused at once (workers racing on the queue): each leg's transfer
// suspends once (EXEC_CREDIT_FAILED) and the GTID once (GT_SUSPENDED,
// one GtidSuspended, one Case): the second suspend's commit waits on the
// GTID row's lock and finds it suspended. After the sweep fails both
// legs, the operator's resolution closes it GT_FAILED_EXECUTION.
func TestGtidSuspendRaceAndResolveOnEachBackend(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		f := newFixtureOn(t, b, func(c *Config) {
			c.Timeouts = Timeouts{Exec: time.Minute, PayeeProof: time.Minute, Suspended: time.Hour, AdapterDownAfter: 1000}
		})
		legs := []GtidLegRequest{
			{LegID: "P1", Role: bankapi.RolePayer, BankID: "001", AccountHash: "h:a", Amount: bankapi.Amount{Value: 500, Currency: "JPY"}},
			{LegID: "E1", Role: bankapi.RolePayee, BankID: "002", AccountHash: "h:b", Amount: bankapi.Amount{Value: 500, Currency: "JPY"}},
			{LegID: "P2", Role: bankapi.RolePayer, BankID: "001", AccountHash: "h:a", Amount: bankapi.Amount{Value: 300, Currency: "JPY"}},
			{LegID: "E2", Role: bankapi.RolePayee, BankID: "002", AccountHash: "h:b", Amount: bankapi.Amount{Value: 300, Currency: "JPY"}},
		}
		f.b.failWith(bankapi.ExecuteCredit, domainerr.New("ACCOUNT_NOT_FOUND", "no such account", nil), false)
		if _, err := f.o.RegisterGtid(f.ctx, GtidRegister{GTID: "001-S1", Legs: legs}, "s1", "001"); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		for i := 0; i < 8; i++ {
			go func() {
				defer func() { done <- struct{}{} }()
				for k := 0; k < 6; k++ {
					if _, err := f.o.RunOnce(f.ctx); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		for i := 0; i < 8; i++ {
			<-done
		}
		f.run()
		for _, id := range []string{"001-S1.P1", "001-S1.P2"} {
			if v := f.view(id); v.State != "SUSPENDED" || v.ReasonCode != ReasonExecCreditFailed {
				t.Fatalf("%s: %s %s", id, v.State, v.ReasonCode)
			}
			if n := f.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = 'Suspended'`, id); n != 1 {
				t.Fatalf("%s suspended %d times", id, n)
			}
		}
		v, err := f.o.Gtid(f.ctx, "001-S1")
		if err != nil || v.State != "GT_SUSPENDED" || v.ReasonCode != ReasonGtidLegSuspended || v.CaseID == "" {
			t.Fatalf("gtid %+v %v", v, err)
		}
		if n := f.count(`SELECT COUNT(*) FROM FinalityLog WHERE gtid = '001-S1' AND txid IS NULL AND event_type = 'GtidSuspended'`); n != 1 {
			t.Fatalf("%d GtidSuspended", n)
		}
		if n := f.count(`SELECT COUNT(*) FROM CaseRelatedTransactions WHERE related_gtid = '001-S1'`); n != 1 {
			t.Fatalf("%d cases linked", n)
		}
		f.clk.Advance(time.Hour + time.Second)
		if res, err := f.o.TimeoutSweep(f.ctx); err != nil || res.FailedTimeouts != 2 {
			t.Fatalf("sweep %+v %v", res, err)
		}
		r, err := f.o.ResolveGtid(f.ctx, "001-S1", GtidOperatorRequest{Operator: "ops", Reason: "payee account closed"})
		if err != nil || r.State != "GT_FAILED_EXECUTION" || len(r.Failed) != 2 || len(r.Released) != 0 || r.CaseID != v.CaseID {
			t.Fatalf("resolve %+v %v", r, err) // both payers were debited: nothing held to release
		}
		if n := f.count(`SELECT COUNT(*) FROM GtidLegs WHERE gtid = '001-S1' AND state = 'LEG_FAILED'`); n != 4 {
			t.Fatalf("%d legs LEG_FAILED", n)
		}
		if n := f.count(`SELECT COUNT(*) FROM Cases WHERE case_id = ? AND state = 'RESOLVED'`, v.CaseID); n != 1 {
			t.Fatal("case not resolved")
		}
	})
}
