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
