package e2e

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
)

// cpu is this process's user+system CPU time (every goroutine: the
// coordinator, the adapters, the simulated cores, the embedded MQ).
func cpu(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestCostPerGtidAndRtp measures, and bounds, the coordinator's
// statements and commits per settled 2x2 GTID (registration, four
// leg-ready-checks, the decision, two leg transfers settled, GT_SETTLED)
// and per completed request to pay (request, rtp-notify, accept, the
// transfer, COMPLETED), next to EXPRESS measured in the same run, with
// the process CPU per unit (figures in docs/gtid-rtp.md).
func TestCostPerGtidAndRtp(t *testing.T) {
	const n = 32
	s := gtidStack(t)
	s.bank["001"].account("h:rich", "SATO RICH", 1_000_000_000)
	s.bank["002"].account("h:rich2", "YAMADA RICH", 1_000_000_000)

	measure := func(what string, fn func(i int), settle func()) (store.Snapshot, time.Duration) {
		z0, c0 := s.zc.Stats(), cpu(t)
		for i := 0; i < n; i++ {
			fn(i)
		}
		settle()
		z1, c1 := s.zc.Stats(), cpu(t)
		per := store.Snapshot{Statements: (z1.Statements - z0.Statements) / n, Commits: (z1.Commits - z0.Commits) / n}
		t.Logf("%s: %d statements, %d commits per unit at the coordinator; %.2f CPU-s per 1000 (process, adapters and cores included)",
			what, per.Statements, per.Commits, (c1-c0).Seconds()*1000/n)
		return per, c1 - c0
	}
	run := func() {
		if _, err := s.o.RunUntilIdle(s.ctx); err != nil {
			t.Fatal(err)
		}
	}
	express, _ := measure("EXPRESS transfer", func(i int) {
		s.mustSubmit(orchestrator.LaneExpress, fmt.Sprintf("c-x-%d", i), "001", "h:rich", "002", "h:b", 100)
	}, run)
	gtid, _ := measure("2x2 GTID", func(i int) {
		req := orchestrator.GtidRegister{GTID: fmt.Sprintf("001-C%d", i), Legs: []orchestrator.GtidLegRequest{
			leg("P1", bankapi.RolePayer, "001", "h:rich", 300), leg("E1", bankapi.RolePayee, "003", "h:c", 300),
			leg("P2", bankapi.RolePayer, "002", "h:rich2", 200), leg("E2", bankapi.RolePayee, "001", "h:a2", 200)}}
		if _, err := s.o.RegisterGtid(s.ctx, req, req.GTID, "001"); err != nil {
			t.Fatal(err)
		}
	}, run)
	rtp, _ := measure("request to pay", func(i int) {
		id := fmt.Sprintf("RTP-002-C%d", i)
		if _, err := s.o.RequestRtp(s.ctx, orchestrator.RtpRequest{RtpID: id, PayerBankID: "001", PayeeAccountHash: "h:b",
			Amount: bankapi.Amount{Value: 100, Currency: "JPY"}, ExpiresAt: clock.Stamp(s.clk.Now().Add(time.Hour)), PayeeName: "SHOP"}, id, "002"); err != nil {
			t.Fatal(err)
		}
	}, func() {
		run()
		for i := 0; i < n; i++ {
			if _, err := s.o.AcceptRtp(s.ctx, fmt.Sprintf("RTP-002-C%d", i), orchestrator.RtpAccept{PayerAccountHash: "h:rich"}, "001"); err != nil {
				t.Fatal(err)
			}
		}
		run()
	})
	for i := 0; i < n; i++ {
		if v := s.gtid(fmt.Sprintf("001-C%d", i)); v.State != "GT_SETTLED" {
			t.Fatalf("GTID %d: %s", i, v.State)
		}
		if v := s.rtp(fmt.Sprintf("RTP-002-C%d", i)); v.State != "COMPLETED" {
			t.Fatalf("RTP %d: %s", i, v.State)
		}
	}
	// Bounds: a GTID costs its two leg transfers plus its own commits
	// (register, the leg answers, the decision); a request to pay its
	// transfer plus request, attempt, notified and the answer.
	if gtid.Commits > 2*express.Commits+8 {
		t.Errorf("%d commits per GTID, bound %d", gtid.Commits, 2*express.Commits+8)
	}
	if rtp.Commits > express.Commits+5 {
		t.Errorf("%d commits per request to pay, bound %d", rtp.Commits, express.Commits+5)
	}
}
