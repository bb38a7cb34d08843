package e2e

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/params"
)

// rtpStack: 002 (a shop) asks 001's customer to pay.
func rtpStack(t *testing.T) *stack {
	s := newStack(t, stackOptions{}, "001", "002")
	s.bank["001"].account("h:a", "SATO HANAKO", 100_000)
	s.bank["002"].account("h:shop", "TANAKA SHOTEN", 0)
	return s
}

func (s *stack) requestRtp(id string, amount int64, expiresIn time.Duration) orchestrator.RtpView {
	s.t.Helper()
	v, err := s.o.RequestRtp(s.ctx, orchestrator.RtpRequest{RtpID: id, PayerBankID: "001", PayeeAccountHash: "h:shop",
		Amount: bankapi.Amount{Value: amount, Currency: "JPY"}, ExpiresAt: clock.Stamp(s.clk.Now().Add(expiresIn)),
		PayeeName: "TANAKA SHOTEN", Description: "invoice " + id}, id, "002")
	if err != nil || v.State != "CREATED" {
		s.t.Fatalf("request %s: %+v %v", id, v, err)
	}
	return v
}

func (s *stack) rtp(id string) orchestrator.RtpView {
	s.t.Helper()
	v, err := s.o.Rtp(s.ctx, id)
	if err != nil {
		s.t.Fatalf("rtp %s: %v", id, err)
	}
	return v
}

func (s *stack) wantRtp(id, state, reason string, chain ...finality.EventType) orchestrator.RtpView {
	s.t.Helper()
	v := s.rtp(id)
	if v.State != state || v.ReasonCode != reason {
		s.t.Fatalf("%s: %s %q, want %s %q", id, v.State, v.ReasonCode, state, reason)
	}
	s.wantAggChain(id, v.Chain, chain...)
	return v
}

// rtpNotices pulls the payer bank core's RTP notifications.
func (s *stack) rtpNotices(bank string) []adapter.Notification {
	s.t.Helper()
	ns, err := s.bank[bank].a.PullNotifications(s.ctx, 100)
	if err != nil {
		s.t.Fatal(err)
	}
	var out []adapter.Notification
	for _, n := range ns {
		if n.Kind == adapter.NotifyRTP {
			out = append(out, n)
		}
	}
	return out
}

func TestRtpAcceptedCompletes(t *testing.T) {
	s := rtpStack(t)
	before := s.snapshot()
	s.requestRtp("RTP-002-1", 5_000, time.Hour)
	s.run()
	v := s.wantRtp("RTP-002-1", "NOTIFIED", "", finality.RtpRequested, finality.RtpNotified)
	if v.AttemptCount != 1 || v.NotifiedAt == "" {
		t.Fatalf("%+v", v)
	}
	// The payer bank's core pulls the notice exactly once.
	if ns := s.rtpNotices("001"); len(ns) != 1 || ns[0].Ref != "RTP-002-1" || ns[0].Amount != 5_000 {
		t.Fatalf("notices %+v", ns)
	}
	if _, err := s.o.AcceptRtp(s.ctx, "RTP-002-1", orchestrator.RtpAccept{PayerAccountHash: "h:a"}, "002"); !hasCode(err, "UNAUTHORIZED") {
		t.Fatalf("payee accepting: %v", err)
	}
	v, err := s.o.AcceptRtp(s.ctx, "RTP-002-1", orchestrator.RtpAccept{PayerAccountHash: "h:a"}, "001")
	if err != nil || v.State != "TX_CREATED" || v.LinkedTxID == "" || v.ResponseType != "ACCEPT" {
		t.Fatalf("accept: %+v %v", v, err)
	}
	if again, err := s.o.AcceptRtp(s.ctx, "RTP-002-1", orchestrator.RtpAccept{PayerAccountHash: "h:a"}, "001"); !hasCode(err, "INVALID_STATE") || again.LinkedTxID != v.LinkedTxID {
		t.Fatalf("second accept: %+v %v", again, err)
	}
	s.run()
	tv := s.wantState(v.LinkedTxID, "SETTLED", "")
	if tv.Lane != orchestrator.LaneRtp || tv.PayerBankID != "001" || tv.PayeeBankID != "002" {
		t.Fatalf("%+v", tv)
	}
	s.wantRtp("RTP-002-1", "COMPLETED", "", finality.RtpRequested, finality.RtpNotified, finality.RtpAccepted,
		finality.RtpTxCreated, finality.RtpCompleted)
	s.wantNoH()
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -5_000}, move{"002", "h:shop", 5_000})
	if n := s.banks.Calls()[bankapi.RTPNotify]; n != 1 {
		t.Fatalf("rtp-notify calls %d", n)
	}
}

func TestRtpDeclinedAndExpired(t *testing.T) {
	s := rtpStack(t)
	before := s.snapshot()
	s.requestRtp("RTP-002-D", 1_000, time.Hour)
	s.requestRtp("RTP-002-E", 1_000, time.Minute)
	s.run()
	if _, err := s.o.DeclineRtp(s.ctx, "RTP-002-D", "001"); err != nil {
		t.Fatal(err)
	}
	s.wantRtp("RTP-002-D", "DECLINED", orchestrator.ReasonRtpDeclined, finality.RtpRequested, finality.RtpNotified, finality.RtpDeclined)
	if _, err := s.o.AcceptRtp(s.ctx, "RTP-002-D", orchestrator.RtpAccept{PayerAccountHash: "h:a"}, "001"); !hasCode(err, "INVALID_STATE") {
		t.Fatalf("accept after decline: %v", err)
	}
	s.clk.Advance(time.Minute)
	// Past expires_at the payer can no longer accept, even before the sweep.
	if _, err := s.o.AcceptRtp(s.ctx, "RTP-002-E", orchestrator.RtpAccept{PayerAccountHash: "h:a"}, "001"); !hasCode(err, "EXPIRED") {
		t.Fatalf("accept after expiry: %v", err)
	}
	if res, err := s.o.TimeoutSweep(s.ctx); err != nil || res.RtpExpired != 1 {
		t.Fatalf("sweep %+v %v", res, err)
	}
	s.wantRtp("RTP-002-E", "EXPIRED", orchestrator.ReasonRtpTimeout, finality.RtpRequested, finality.RtpNotified, finality.RtpExpired)
	s.run()
	if n := s.count("SELECT COUNT(*) FROM Transactions"); n != 0 {
		t.Fatalf("%d transfers", n)
	}
	s.wantNoH()
	s.checkInvariants(before, s.snapshot())
}

func TestRtpNotifyAttemptsExhausted(t *testing.T) {
	s := rtpStack(t)
	s.banks.SetDown("001", true, bankapi.RTPNotify)
	s.requestRtp("RTP-002-F", 1_000, time.Hour)
	for i := 0; i < 5; i++ {
		s.run()
		s.clk.Advance(10 * time.Second) // past each backoff
	}
	v := s.wantRtp("RTP-002-F", "FAILED", orchestrator.ReasonRtpNotifyFailed, finality.RtpRequested, finality.RtpFailed)
	if v.AttemptCount != int(params.DefaultRtpAttemptMax) {
		t.Fatalf("attempts %d", v.AttemptCount)
	}
	s.banks.SetDown("001", false)
	s.run()
	if ns := s.rtpNotices("001"); len(ns) != 0 {
		t.Fatalf("a failed request was notified: %+v", ns)
	}
}

// The payer's bank cannot be reached before the request expires: the
// sweep expires it from CREATED, and nothing is notified afterwards.
func TestRtpExpiresUndelivered(t *testing.T) {
	s := rtpStack(t)
	s.banks.SetDown("001", true, bankapi.RTPNotify)
	s.requestRtp("RTP-002-U", 1_000, time.Minute)
	s.run() // attempt 1 fails; the retry waits for its backoff
	s.clk.Advance(time.Minute)
	if res, err := s.o.TimeoutSweep(s.ctx); err != nil || res.RtpExpired != 1 {
		t.Fatalf("sweep %+v %v", res, err)
	}
	s.banks.SetDown("001", false)
	s.run()
	v := s.wantRtp("RTP-002-U", "EXPIRED", orchestrator.ReasonRtpTimeout, finality.RtpRequested, finality.RtpExpired)
	if v.AttemptCount != 1 {
		t.Fatalf("attempts %d", v.AttemptCount)
	}
	if ns := s.rtpNotices("001"); len(ns) != 0 {
		t.Fatalf("an expired request was notified: %+v", ns)
	}
}

// The payer accepts but its bank refuses the funds: the transfer is
// cancelled on its lane and the sweep fails the request with it.
func TestRtpTransferRefusedFailsRequest(t *testing.T) {
	s := rtpStack(t)
	before := s.snapshot()
	s.requestRtp("RTP-002-P", 200_000, time.Hour) // more than h:a holds
	s.run()
	v, err := s.o.AcceptRtp(s.ctx, "RTP-002-P", orchestrator.RtpAccept{PayerAccountHash: "h:a"}, "001")
	if err != nil {
		t.Fatal(err)
	}
	s.run()
	s.wantState(v.LinkedTxID, "CANCELLED", "INSUFFICIENT_FUNDS")
	if _, err := s.o.TimeoutSweep(s.ctx); err != nil {
		t.Fatal(err)
	}
	s.wantRtp("RTP-002-P", "FAILED", "INSUFFICIENT_FUNDS", finality.RtpRequested, finality.RtpNotified, finality.RtpAccepted, finality.RtpTxCreated, finality.RtpFailed)
	s.wantNoH()
	s.checkInvariants(before, s.snapshot())
}

// The payer's accept, its decline and the expiry sweep race on one
// NOTIFIED request while the clock crosses expires_at: exactly one answer
// lands, and a transfer exists if and only if the accept won.
func TestRtpAnswerRace(t *testing.T) {
	s := rtpStack(t)
	outcomes := map[string]int{}
	for round := 0; round < 10; round++ {
		id := fmt.Sprintf("RTP-002-R%d", round)
		s.requestRtp(id, 100, 10*time.Second)
		s.run()
		s.clk.Advance(10*time.Second - time.Duration(round+1)*time.Millisecond)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < 12; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				switch i % 4 {
				case 0:
					s.o.AcceptRtp(s.ctx, id, orchestrator.RtpAccept{PayerAccountHash: "h:a"}, "001") //nolint:errcheck // losers are refused
				case 1:
					s.o.DeclineRtp(s.ctx, id, "001") //nolint:errcheck // losers are refused
				case 2:
					if _, err := s.o.TimeoutSweep(s.ctx); err != nil {
						t.Error(err)
					}
				default:
					s.clk.Advance(2 * time.Millisecond)
				}
			}(i)
		}
		close(start)
		wg.Wait()
		s.clk.Advance(time.Second)
		if _, err := s.o.TimeoutSweep(s.ctx); err != nil {
			t.Fatal(err)
		}
		v := s.rtp(id)
		outcomes[v.State]++
		answers := 0
		for _, e := range v.Chain {
			switch finality.EventType(e.EventType) {
			case finality.RtpAccepted, finality.RtpDeclined, finality.RtpExpired:
				answers++
			}
		}
		linked := s.count("SELECT COUNT(*) FROM Transactions WHERE txid = ?", v.LinkedTxID)
		switch {
		case answers != 1:
			t.Fatalf("round %d: %d answers: %+v", round, answers, v)
		case (v.State == "TX_CREATED") != (linked == 1):
			t.Fatalf("round %d: state %s with %d linked transfers", round, v.State, linked)
		case v.State != "TX_CREATED" && v.State != "DECLINED" && v.State != "EXPIRED":
			t.Fatalf("round %d ended %s", round, v.State)
		}
	}
	if n := s.count("SELECT COUNT(*) FROM Transactions"); n != outcomes["TX_CREATED"] {
		t.Fatalf("%d transfers for %d accepts", n, outcomes["TX_CREATED"])
	}
	t.Logf("outcomes %v", outcomes)
}

// The RTP parameters are read from the parameter ledger when a request is
// made: an operator's PR-RTP-ATTEMPT-MAX of 1 fails the next request after
// one undelivered rtp-notify (a request made before the change keeps its
// 3), and PR-RTP-MAX-LIFETIME of 1h refuses an expires_at 2h ahead.
func TestRtpParametersFromTheLedger(t *testing.T) {
	s := rtpStack(t)
	ledger := params.NewLedger(s.zc, finality.New(s.clk), s.clk, nil, s.o.Lease())
	set := func(name params.Name, old, new int64) {
		t.Helper()
		if _, err := ledger.Set(s.ctx, params.Change{Name: name, Old: old, New: new, EvidenceRef: "CAB-RTP-1", Reason: "same-day convergence", By: "ops"}); err != nil {
			t.Fatal(err)
		}
	}
	s.banks.SetDown("001", true, bankapi.RTPNotify)
	s.requestRtp("RTP-002-P3", 1_000, time.Hour) // before the change: max_attempts 3
	set(params.RtpAttemptMax, params.DefaultRtpAttemptMax, 1)
	if v := s.requestRtp("RTP-002-P1", 1_000, time.Hour); v.MaxAttempts != 1 {
		t.Fatalf("max_attempts %d, want the ledger's 1", v.MaxAttempts)
	}
	s.run()
	v := s.wantRtp("RTP-002-P1", "FAILED", orchestrator.ReasonRtpNotifyFailed, finality.RtpRequested, finality.RtpFailed)
	if v.AttemptCount != 1 {
		t.Fatalf("attempts %d, want 1", v.AttemptCount)
	}
	if v := s.rtp("RTP-002-P3"); v.State != "CREATED" || v.AttemptCount != 1 || v.MaxAttempts != 3 {
		t.Fatalf("the earlier request: %+v", v)
	}
	for i := 0; i < 5; i++ {
		s.clk.Advance(10 * time.Second) // past each backoff
		s.run()
	}
	if v := s.wantRtp("RTP-002-P3", "FAILED", orchestrator.ReasonRtpNotifyFailed, finality.RtpRequested, finality.RtpFailed); v.AttemptCount != 3 {
		t.Fatalf("the earlier request: attempts %d, want 3", v.AttemptCount)
	}

	s.banks.SetDown("001", false)
	req := orchestrator.RtpRequest{PayerBankID: "001", PayeeAccountHash: "h:shop", Amount: bankapi.Amount{Value: 500, Currency: "JPY"},
		ExpiresAt: clock.Stamp(s.clk.Now().Add(2 * time.Hour)), PayeeName: "TANAKA SHOTEN"}
	if _, err := s.o.RequestRtp(s.ctx, req, "rtp-2h-ok", "002"); err != nil {
		t.Fatalf("2h under the default lifetime: %v", err)
	}
	set(params.RtpMaxLifetime, int64(params.DefaultRtpMaxLifetime/time.Second), 3600)
	if _, err := s.o.RequestRtp(s.ctx, req, "rtp-2h-refused", "002"); !hasCode(err, "INVALID_REQUEST") {
		t.Fatalf("2h over PR-RTP-MAX-LIFETIME 1h: %v", err)
	}
	req.ExpiresAt = clock.Stamp(s.clk.Now().Add(30 * time.Minute))
	if v, err := s.o.RequestRtp(s.ctx, req, "rtp-30m", "002"); err != nil || v.MaxAttempts != 1 {
		t.Fatalf("30 min: %+v %v", v, err)
	}
	if n := s.count("SELECT COUNT(*) FROM RtpRequests"); n != 4 {
		t.Fatalf("%d requests, want 4 (the refused one wrote nothing)", n)
	}
}

// PR-RTP-ATTEMPT-SCHEDULE: a failed rtp-notify is attempted again at the
// ledger's next JST time of the same day, and not before (the work item
// waits in the queue); a change of the schedule applies to the next
// re-attempt; with no time left before expires_at or the day's end the
// request is FAILED at once, with attempts to spare.
func TestRtpAttemptSchedule(t *testing.T) {
	s := rtpStack(t)
	ledger := params.NewLedger(s.zc, finality.New(s.clk), s.clk, nil, s.o.Lease())
	setSchedule := func(old, new string) {
		t.Helper()
		o, err := params.ParseSchedule(old)
		if err != nil {
			t.Fatal(err)
		}
		n, err := params.ParseSchedule(new)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ledger.Set(s.ctx, params.Change{Name: params.RtpAttemptSchedule, Old: o, New: n, EvidenceRef: "CAB-RTP-2",
			Reason: "same-day convergence", By: "ops"}); err != nil {
			t.Fatal(err)
		}
	}
	jst := func(hhmm string) time.Time {
		t.Helper()
		tm, err := time.ParseInLocation("2006-01-02 15:04", clock.BusinessDate(s.clk.Now())+" "+hhmm, clock.JST)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	advanceTo := func(tm time.Time) {
		t.Helper()
		if d := tm.Sub(s.clk.Now()); d < 0 {
			t.Fatalf("clock at %s, past %s", s.clk.Now(), tm)
		} else {
			s.clk.Advance(d)
		}
	}
	wantWaiting := func(id string, attempts int, until time.Time) {
		t.Helper()
		if v := s.rtp(id); v.State != "CREATED" || v.AttemptCount != attempts {
			t.Fatalf("%s: %s after %d attempts, want CREATED after %d", id, v.State, v.AttemptCount, attempts)
		}
		items, err := s.o.QueueItems(s.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 1 || items[0].Status != orchestrator.StatusReady || items[0].NextAttemptAt != clock.Stamp(until) ||
			items[0].LastErrorCode != "BANK_ERROR" {
			t.Fatalf("%s: work item %+v, want READY not before %s", id, items, clock.Stamp(until))
		}
	}

	setSchedule("none", "09:00,12:00,15:00")
	advanceTo(jst("10:30"))
	s.banks.SetDown("001", true, bankapi.RTPNotify)
	s.requestRtp("RTP-002-S1", 2_000, 8*time.Hour)
	s.run() // attempt 1 at 10:30 fails
	wantWaiting("RTP-002-S1", 1, jst("12:00"))
	advanceTo(jst("12:00").Add(-time.Second))
	s.run()
	wantWaiting("RTP-002-S1", 1, jst("12:00")) // not before 12:00
	s.banks.SetDown("001", false)
	advanceTo(jst("12:00"))
	s.run()
	v := s.wantRtp("RTP-002-S1", "NOTIFIED", "", finality.RtpRequested, finality.RtpNotified)
	if v.AttemptCount != 2 || v.NotifiedAt != clock.Stamp(jst("12:00")) {
		t.Fatalf("%+v, want notified at 12:00 JST on attempt 2", v)
	}
	if ns := s.rtpNotices("001"); len(ns) != 1 || ns[0].Ref != "RTP-002-S1" {
		t.Fatalf("notices %+v", ns)
	}

	// The operator moves the times: the next re-attempt follows the ledger.
	setSchedule("09:00,12:00,15:00", "12:30,16:00")
	s.banks.SetDown("001", true, bankapi.RTPNotify)
	s.requestRtp("RTP-002-S2", 2_000, 3*time.Hour) // expires 15:00 JST
	s.run()                                        // attempt 1 at 12:00 fails
	wantWaiting("RTP-002-S2", 1, jst("12:30"))
	advanceTo(jst("12:30"))
	s.run() // attempt 2 at 12:30 fails; 16:00 is after expires_at
	v = s.wantRtp("RTP-002-S2", "FAILED", orchestrator.ReasonRtpNotifyFailed, finality.RtpRequested, finality.RtpFailed)
	if v.AttemptCount != 2 || v.MaxAttempts != 3 {
		t.Fatalf("%+v, want FAILED after 2 of 3 attempts", v)
	}

	// No time left today: FAILED at 16:00, not retried tomorrow.
	s.requestRtp("RTP-002-S3", 2_000, 12*time.Hour) // expires 00:30 JST the next day
	s.run()
	wantWaiting("RTP-002-S3", 1, jst("16:00"))
	advanceTo(jst("16:00"))
	s.run()
	v = s.wantRtp("RTP-002-S3", "FAILED", orchestrator.ReasonRtpNotifyFailed, finality.RtpRequested, finality.RtpFailed)
	if v.AttemptCount != 2 {
		t.Fatalf("%+v, want FAILED after attempt 2 at 16:00", v)
	}
	if n := s.count("SELECT COUNT(*) FROM OrchestratorQueue WHERE kind = 'RTP' AND status = 'READY'"); n != 0 {
		t.Fatalf("%d RTP items still waiting", n)
	}
	if n := s.count("SELECT COUNT(*) FROM Transactions"); n != 0 {
		t.Fatalf("%d transfers", n)
	}
}
