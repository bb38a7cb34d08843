package e2e

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
)

// crashingBanks forwards every call to real adapters. For an armed command
// it returns BANK_TIMEOUT after the adapter answered (and recorded its
// answer), as when the coordinator dies between the adapter's record and
// its own. It keeps every body sent and every answer or error code per
// request_id.
type crashingBanks struct {
	inner   *InProcessBanks
	mu      sync.Mutex
	armed   map[bankapi.Command]bool
	bodies  map[string][]string
	answers map[string][]string
}

func newCrashingBanks(inner *InProcessBanks) *crashingBanks {
	return &crashingBanks{inner: inner, armed: map[bankapi.Command]bool{}, bodies: map[string][]string{}, answers: map[string][]string{}}
}

func (c *crashingBanks) arm(cmd bankapi.Command) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed[cmd] = true
}

func (c *crashingBanks) Call(ctx context.Context, bankID string, req bankapi.Request, resp any) error {
	raw, _ := json.Marshal(req)
	err := c.inner.Call(ctx, bankID, req, resp)
	answer := "error " + domainerr.Code(err)
	if err == nil {
		b, _ := json.Marshal(resp)
		answer = string(b)
	}
	id := req.RequestID()
	if id == "" {
		id = string(req.Command())
	}
	c.mu.Lock()
	c.bodies[id] = append(c.bodies[id], string(raw))
	c.answers[id] = append(c.answers[id], answer)
	crash := err == nil && c.armed[req.Command()]
	delete(c.armed, req.Command())
	c.mu.Unlock()
	if crash {
		return domainerr.New("BANK_TIMEOUT", "the answer was lost: the coordinator died after the bank recorded the command",
			map[string]any{"bank_id": bankID, "command": string(req.Command())})
	}
	return err
}

// wantReplay checks that every call under requestID (at least two: the
// crashed one and its retry) sent the same bytes and got the same answer.
func (c *crashingBanks) wantReplay(t *testing.T, requestID string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	bodies, answers := c.bodies[requestID], c.answers[requestID]
	if len(bodies) < 2 {
		t.Fatalf("%s sent %d times, want the crashed call and its retry", requestID, len(bodies))
	}
	for i := 1; i < len(bodies); i++ {
		if bodies[i] != bodies[0] {
			t.Errorf("%s: attempt %d changed the body under the same request_id:\n first %s\n later %s", requestID, i+1, bodies[0], bodies[i])
		}
		if answers[i] != answers[0] {
			t.Errorf("%s: attempt %d was not a replay:\n first %s\n later %s", requestID, i+1, answers[0], answers[i])
		}
	}
}

// TestRetryIsReplayForEveryCommand: for each of the 13 ingress commands, a
// crash between "adapter recorded" and "coordinator recorded" is followed
// by a retry that sends the same body and gets the adapter's stored answer
// (never IDEMPOTENCY_KEY_CONFLICT). For the 8 commands the orchestrator
// sends, the clock jumps past the execution timeouts and the sweep runs in
// between (which restarts pending_since), and the transfer still settles
// with each leg posted once (release-reserve: cancelled with H_LIMIT_EXCEEDED
// and the hold released once). The other 5 are sent by their callers with
// the same body again.
func TestRetryIsReplayForEveryCommand(t *testing.T) {
	driven := map[bankapi.Command]string{ // command -> lane that sends it
		bankapi.ReserveFunds: orchestrator.LaneExpress, bankapi.ExecuteDebit: orchestrator.LaneExpress,
		bankapi.ExecuteCredit: orchestrator.LaneExpress, bankapi.CreditNotify: orchestrator.LaneExpress,
		bankapi.DebitSettled: orchestrator.LaneExpress, bankapi.AuthorityCheck: orchestrator.LaneStandard,
		bankapi.NameCheck: orchestrator.LaneStandard, bankapi.ReleaseReserve: orchestrator.LaneExpress,
	}
	for _, cmd := range bankapi.Commands {
		t.Run(string(cmd), func(t *testing.T) {
			var cb *crashingBanks
			s := newStack(t, stackOptions{cfg: func(c *orchestrator.Config) {
				cb = newCrashingBanks(c.Banks.(*InProcessBanks))
				c.Banks = cb
			}}, "001", "002", "003")
			s.bank["001"].account("h:a", "SATO HANAKO", 100_000)
			s.bank["002"].account("h:b", "YAMADA TARO", 5_000)
			laneName, isDriven := driven[cmd]
			if !isDriven {
				sendTwice(t, s, cb, cmd)
				return
			}
			if cmd == bankapi.ReleaseReserve { // ZC's H too small: the bank's hold must be released, then cancel
				p, err := s.o.Participants().Get(s.ctx, "001")
				if err != nil {
					t.Fatal(err)
				}
				p.HLimit = 1_000
				if _, err := s.o.Participants().Update(s.ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			before := s.snapshot()
			cb.arm(cmd)
			tr := s.mustSubmit(laneName, "k-"+string(cmd), "001", "h:a", "002", "h:b", 2_500)
			s.run()
			for i := 0; i < 4; i++ { // the sweep and the retries a minute and more later
				s.clk.Advance(61 * time.Second)
				if _, err := s.o.TimeoutSweep(s.ctx); err != nil {
					t.Fatal(err)
				}
				s.clk.Advance(5 * time.Minute)
				s.run()
			}
			cb.wantReplay(t, "TX:"+tr.TxID+":"+string(cmd)+":ZC")
			if cmd == bankapi.ReleaseReserve {
				s.wantState(tr.TxID, "CANCELLED", "H_LIMIT_EXCEEDED")
				if sh, err := s.bank["001"].a.Shadow(s.ctx, "h:a"); err != nil || sh.Available != 100_000 {
					t.Fatalf("payer shadow after the release: %+v %v", sh, err)
				}
				s.checkInvariants(before, s.snapshot())
				return
			}
			v := s.wantState(tr.TxID, "SETTLED", "")
			if v.Case.CaseID != "" {
				t.Fatalf("a crash opened Case %s", v.Case.CaseID)
			}
			s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -2_500}, move{"002", "h:b", 2_500})
		})
	}
}

// sendTwice sends a command the orchestrator does not send the way its
// caller would: the first answer is lost, the same body is sent again.
func sendTwice(t *testing.T, s *stack, cb *crashingBanks, cmd bankapi.Command) {
	t.Helper()
	bank, id := "001", "R-"+string(cmd)
	var req bankapi.Request
	var resp any
	switch cmd {
	case bankapi.LegReadyCheck:
		req, resp = &bankapi.LegReadyCheckRequest{RequestIDValue: id, GTID: "GT-1", LegID: "L1", Role: bankapi.RolePayer,
			Amount: bankapi.Amount{Value: 700, Currency: "JPY"}, AccountHash: "h:a"}, &bankapi.CheckResponse{}
	case bankapi.AccountVerify:
		req, resp = &bankapi.AccountVerifyRequest{RequestIDValue: id, VerificationID: "V-1", TargetAccountHash: "h:a",
			TargetAccountName: "SATO HANAKO"}, &bankapi.AccountVerifyResponse{}
	case bankapi.RTPNotify:
		req, resp = &bankapi.RTPNotifyRequest{RequestIDValue: id, RTPID: "RTP-1", PayeeBankID: "002", PayerBankID: "001",
			Amount: bankapi.Amount{Value: 700, Currency: "JPY"}, ExpiresAt: "2026-12-03T01:00:00Z", PayeeName: "YAMADA TARO"},
			&bankapi.NotifyResponse{}
	case bankapi.InitializeBank: // what a node sends at every start
		req, resp = &bankapi.InitializeBankRequest{RequestIDValue: "init-" + bank}, &bankapi.BankResponse{}
	case bankapi.CleanupBank: // no request_id: idempotent by state
		bank, id = "003", string(bankapi.CleanupBank)
		req, resp = &bankapi.CleanupBankRequest{}, &bankapi.BankResponse{}
	default:
		t.Fatalf("command %s has no case", cmd)
	}
	if req.RequestID() != "" {
		id = req.RequestID()
	}
	cb.arm(cmd)
	if err := cb.Call(s.ctx, bank, req, resp); domainerr.Code(err) != "BANK_TIMEOUT" {
		t.Fatalf("crashed call: %v", err)
	}
	if err := cb.Call(s.ctx, bank, req, resp); err != nil {
		t.Fatalf("retry: %v", err)
	}
	cb.wantReplay(t, id)
	if cmd == bankapi.LegReadyCheck { // one hold, not two
		if sh, err := s.bank["001"].a.Shadow(s.ctx, "h:a"); err != nil || sh.Available != 100_000-700 {
			t.Fatalf("payer shadow: %+v %v", sh, err)
		}
	}
}
