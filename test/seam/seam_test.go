package seam

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/gateway/node"
	"github.com/zcgw/zcgw/outbox"
)

func scratch(t *testing.T) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "seam-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

type env struct {
	t   *testing.T
	ctx context.Context
	n   *node.Node

	mu   sync.Mutex
	sent map[bankapi.Command]int
}

func newEnv(t *testing.T) *env {
	t.Helper()
	cfg := node.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Banks = append(cfg.Banks, node.BankConfig{BankID: "003", Name: "Bank 003 (leaving)", HLimit: 1_000_000, RealTime: true,
		Accounts: []node.Account{{Hash: "h:003-0001", CoreAccount: "100-1-0000001", Name: "LEAVER", Balance: 5000}}})
	n, err := node.Start(context.Background(), node.Options{DataDir: scratch(t), Config: &cfg, NoWorkers: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return &env{t: t, ctx: context.Background(), n: n, sent: map[bankapi.Command]int{}}
}

// call sends req through the coordinator's real client: JSON, Ed25519
// signature, HTTP, the gateway's verification, the adapter's handler.
func (e *env) call(bank string, req bankapi.Request, resp any) error {
	e.mu.Lock()
	e.sent[req.Command()]++
	e.mu.Unlock()
	return e.n.Client.Call(e.ctx, bank, req, resp)
}

func (e *env) must(bank string, req bankapi.Request, resp any) {
	e.t.Helper()
	if err := e.call(bank, req, resp); err != nil {
		e.t.Fatalf("%s at %s: %v", req.Command(), bank, err)
	}
}

func (e *env) shadow(bank, hash string) adapter.Shadow {
	e.t.Helper()
	s, err := e.n.Banks[bank].Adapter.Shadow(e.ctx, hash)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) coreBalance(bank, acct string) int64 {
	e.t.Helper()
	b, err := e.n.Banks[bank].Core.Balance(e.ctx, acct)
	if err != nil || !b.Found {
		e.t.Fatalf("core balance %s/%s: %+v %v", bank, acct, b, err)
	}
	return b.Balance
}

func (e *env) outbox(bank, txid string) []outbox.Entry {
	e.t.Helper()
	rows, err := e.n.Banks[bank].Adapter.Outbox().List(e.ctx, outbox.Filter{TxID: txid})
	if err != nil {
		e.t.Fatal(err)
	}
	return rows
}

// drain sends the bank's outbox to its core until nothing is pending.
func (e *env) drain(bank string) {
	e.t.Helper()
	ob := e.n.Banks[bank].Adapter.Outbox()
	for i := 0; i < 100; i++ {
		ob.ResolveInDoubt(e.ctx)
		if _, err := ob.Drain(e.ctx, 100); err != nil {
			e.t.Fatal(err)
		}
		c, _ := ob.Counts(e.ctx)
		if c[outbox.Pending]+c[outbox.Claimed]+c[outbox.InDoubt] == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.t.Fatal("outbox did not drain")
}

func (e *env) journal(bank, acct, txid string) []int64 {
	e.t.Helper()
	lines, err := e.n.Banks[bank].Core.Journal(e.ctx, acct)
	if err != nil {
		e.t.Fatal(err)
	}
	var deltas []int64
	for _, l := range lines {
		if l.TxID == txid {
			deltas = append(deltas, l.Delta)
		}
	}
	return deltas
}

func jpy(v int64) bankapi.Amount { return bankapi.Amount{Value: v, Currency: "JPY"} }

const (
	payer     = "h:001-0001"
	payerCore = "100-1-0000001"
	payee     = "h:002-0001"
	payeeCore = "100-1-0000001"
)

func TestSeamRoundTrips(t *testing.T) {
	e := newEnv(t)
	open := int64(1_000_000_000)
	cases := map[bankapi.Command]func(t *testing.T){
		bankapi.ReserveFunds: func(t *testing.T) {
			var r bankapi.ReserveFundsResponse
			e.must("001", &bankapi.ReserveFundsRequest{RequestIDValue: "rq-rf-1", TxID: "TX-SEAM-1", Amount: jpy(1200), AccountHash: payer}, &r)
			if r.Result != bankapi.ResultReserved || r.ReservationRef == "" {
				t.Fatalf("response %+v", r)
			}
			if s := e.shadow("001", payer); s.Holds != 1200 || s.Available != open-1200 {
				t.Fatalf("shadow after reserve: %+v", s)
			}
			// Over the available balance: an ERROR body, no new hold.
			var r2 bankapi.ReserveFundsResponse
			e.must("001", &bankapi.ReserveFundsRequest{RequestIDValue: "rq-rf-2", TxID: "TX-SEAM-NSF", Amount: jpy(open), AccountHash: payer}, &r2)
			if r2.Result != bankapi.ResultError || r2.ReasonCode != bankapi.ReasonInsufficientFunds || e.shadow("001", payer).Holds != 1200 {
				t.Fatalf("NSF reserve: %+v holds %d", r2, e.shadow("001", payer).Holds)
			}
		},
		bankapi.ExecuteDebit: func(t *testing.T) {
			var rf bankapi.ReserveFundsResponse
			e.must("001", &bankapi.ReserveFundsRequest{RequestIDValue: "rq-ed-0", TxID: "TX-SEAM-2", Amount: jpy(3000), AccountHash: payer}, &rf)
			holds := e.shadow("001", payer).Holds
			var r bankapi.ExecuteResponse
			e.must("001", &bankapi.ExecuteDebitRequest{RequestIDValue: "rq-ed-1", TxID: "TX-SEAM-2", Amount: jpy(3000), DecisionProofRef: "DP-2",
				HReservation: &bankapi.HReservation{ReservationID: rf.ReservationRef, Mode: "RESERVED"}, Lane: "EXPRESS", PayerAccountHash: payer}, &r)
			if r.Result != bankapi.ResultOK || r.BankProofRef.ProofType != bankapi.ProofPayerExec || r.BankProofRef.IssuerBankID != "001" {
				t.Fatalf("response %+v", r)
			}
			if s := e.shadow("001", payer); s.Holds != holds-3000 || s.PendingDebits != 3000 {
				t.Fatalf("shadow after debit: %+v", s)
			}
			rows := e.outbox("001", "TX-SEAM-2")
			if len(rows) != 1 || rows[0].Status != outbox.Pending || rows[0].Posting.Amount != 3000 {
				t.Fatalf("outbox rows %+v", rows)
			}
			before := e.coreBalance("001", payerCore)
			e.drain("001")
			if got := e.journal("001", payerCore, "TX-SEAM-2"); len(got) != 1 || got[0] != -3000 {
				t.Fatalf("core journal %v", got)
			}
			if after := e.coreBalance("001", payerCore); after != before-3000 {
				t.Fatalf("core balance %d -> %d", before, after)
			}
			if rows := e.outbox("001", "TX-SEAM-2"); rows[0].Status != outbox.Applied {
				t.Fatalf("outbox after drain %+v", rows[0])
			}
		},
		bankapi.ExecuteCredit: func(t *testing.T) {
			before := e.coreBalance("002", payeeCore)
			var r bankapi.ExecuteResponse
			e.must("002", &bankapi.ExecuteCreditRequest{RequestIDValue: "rq-ec-1", TxID: "TX-SEAM-2", Amount: jpy(3000), DecisionProofRef: "DP-2", PayeeAccountHash: payee}, &r)
			if r.Result != bankapi.ResultOK || r.BankProofRef.ProofType != bankapi.ProofPayeeExec || r.BankProofRef.IssuerBankID != "002" {
				t.Fatalf("response %+v", r)
			}
			if s := e.shadow("002", payee); s.PendingCredits != 3000 {
				t.Fatalf("shadow after credit: %+v", s)
			}
			e.drain("002")
			if got := e.journal("002", payeeCore, "TX-SEAM-2"); len(got) != 1 || got[0] != 3000 {
				t.Fatalf("core journal %v", got)
			}
			if after := e.coreBalance("002", payeeCore); after != before+3000 {
				t.Fatalf("core balance %d -> %d", before, after)
			}
			// The same request_id again: cached answer, no second posting.
			var again bankapi.ExecuteResponse
			e.must("002", &bankapi.ExecuteCreditRequest{RequestIDValue: "rq-ec-1", TxID: "TX-SEAM-2", Amount: jpy(3000), DecisionProofRef: "DP-2", PayeeAccountHash: payee}, &again)
			if again.BankProofRef.ProofID != r.BankProofRef.ProofID || len(e.outbox("002", "TX-SEAM-2")) != 1 {
				t.Fatalf("replay: %+v rows %d", again, len(e.outbox("002", "TX-SEAM-2")))
			}
		},
		bankapi.ReleaseReserve: func(t *testing.T) {
			var rf bankapi.ReserveFundsResponse
			e.must("001", &bankapi.ReserveFundsRequest{RequestIDValue: "rq-rr-0", TxID: "TX-SEAM-3", Amount: jpy(700), AccountHash: payer}, &rf)
			holds := e.shadow("001", payer).Holds
			var r bankapi.ReleaseReserveResponse
			e.must("001", &bankapi.ReleaseReserveRequest{RequestIDValue: "rq-rr-1", TxID: "TX-SEAM-3", ReservationRef: rf.ReservationRef}, &r)
			if r.Result != bankapi.ResultReleased || r.ReservationRef != rf.ReservationRef {
				t.Fatalf("response %+v", r)
			}
			if s := e.shadow("001", payer); s.Holds != holds-700 {
				t.Fatalf("hold not released: %+v", s)
			}
		},
		bankapi.LegReadyCheck: func(t *testing.T) {
			holds := e.shadow("001", payer).Holds
			var r bankapi.CheckResponse
			e.must("001", &bankapi.LegReadyCheckRequest{RequestIDValue: "rq-lr-1", GTID: "GT-SEAM", LegID: "L1", Role: bankapi.RolePayer, Amount: jpy(500), AccountHash: payer}, &r)
			if r.Result != bankapi.ResultOK {
				t.Fatalf("response %+v", r)
			}
			if s := e.shadow("001", payer); s.Holds != holds+500 {
				t.Fatalf("payer leg hold: %+v (holds before %d)", s, holds)
			}
			var p bankapi.CheckResponse
			e.must("002", &bankapi.LegReadyCheckRequest{RequestIDValue: "rq-lr-2", GTID: "GT-SEAM", LegID: "L2", Role: bankapi.RolePayee, Amount: jpy(500), AccountHash: "h:nope"}, &p)
			if p.Result != bankapi.ResultNG {
				t.Fatalf("payee leg on an unknown account: %+v", p)
			}
		},
		bankapi.AuthorityCheck: func(t *testing.T) {
			var ok bankapi.CheckResponse
			e.must("001", &bankapi.AuthorityCheckRequest{RequestIDValue: "rq-ac-1", TxID: "TX-SEAM-4", CheckType: bankapi.CheckInitial}, &ok)
			if ok.Result != bankapi.ResultOK {
				t.Fatalf("clean txid: %+v", ok)
			}
			if err := e.n.Banks["001"].Adapter.AddScreeningEntry(e.ctx, adapter.ScreenTxID, "TX-SEAM-5", "seam test"); err != nil {
				t.Fatal(err)
			}
			var ng bankapi.CheckResponse
			e.must("001", &bankapi.AuthorityCheckRequest{RequestIDValue: "rq-ac-2", TxID: "TX-SEAM-5", CheckType: bankapi.CheckInitial}, &ng)
			if ng.Result != bankapi.ResultNG || ng.ReasonCode == "" {
				t.Fatalf("listed txid: %+v", ng)
			}
		},
		bankapi.NameCheck: func(t *testing.T) {
			var r bankapi.NameCheckResponse
			e.must("002", &bankapi.NameCheckRequest{RequestIDValue: "rq-nc-1", TxID: "TX-SEAM-6", AccountHash: payee}, &r)
			if r.Result != bankapi.ResultMatch {
				t.Fatalf("registered holder (asked of the core over MQ): %+v", r)
			}
		},
		bankapi.AccountVerify: func(t *testing.T) {
			name := e.n.Config.Banks[1].Accounts[0].Name
			for _, c := range []struct {
				name  string
				score float64
			}{{name, 1.0}, {name[:len(name)-1] + "X", 0.8}, {"SOMEONE ELSE", 0}} {
				var r bankapi.AccountVerifyResponse
				id := strconv.Itoa(int(c.score * 10)) // request ids follow coordinator/ident (no spaces)
				e.must("002", &bankapi.AccountVerifyRequest{RequestIDValue: "rq-av-" + id, VerificationID: "V-" + id, TargetAccountHash: payee, TargetAccountName: c.name}, &r)
				if r.MatchScore != c.score || r.NameProvided == nil || *r.NameProvided != c.name {
					t.Fatalf("verify %q: %+v", c.name, r)
				}
			}
		},
		bankapi.CreditNotify: func(t *testing.T) {
			var r bankapi.NotifyResponse
			e.must("002", &bankapi.CreditNotifyRequest{RequestIDValue: "rq-cn-1", TxID: "TX-SEAM-2", PayeeAccountHash: payee, Amount: jpy(3000), PayerBankID: "001", Purpose: "P2P"}, &r)
			if r.Result != bankapi.ResultNotified {
				t.Fatalf("response %+v", r)
			}
			ns, err := e.n.Banks["002"].Adapter.PullNotifications(e.ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(ns) != 1 || ns[0].Kind != adapter.NotifyCredit || ns[0].Ref != "TX-SEAM-2" || ns[0].Amount != 3000 || ns[0].AccountHash != payee {
				t.Fatalf("stored notifications %+v", ns)
			}
		},
		bankapi.RTPNotify: func(t *testing.T) {
			var r bankapi.NotifyResponse
			e.must("001", &bankapi.RTPNotifyRequest{RequestIDValue: "rq-rtp-1", RTPID: "RTP-SEAM", PayeeBankID: "002", PayerBankID: "001", Amount: jpy(2000),
				ExpiresAt: time.Now().Add(time.Hour).UTC().Format(time.RFC3339), PayeeName: "TANAKA SHOTEN"}, &r)
			if r.Result != bankapi.ResultNotified {
				t.Fatalf("response %+v", r)
			}
			ns, err := e.n.Banks["001"].Adapter.PullNotifications(e.ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(ns) != 1 || ns[0].Kind != adapter.NotifyRTP || ns[0].Ref != "RTP-SEAM" || ns[0].Amount != 2000 {
				t.Fatalf("stored notifications %+v", ns)
			}
		},
		bankapi.DebitSettled: func(t *testing.T) {
			var r bankapi.DebitSettledResponse
			e.must("001", &bankapi.DebitSettledRequest{RequestIDValue: "rq-ds-1", TxID: "TX-SEAM-2", Amount: jpy(3000), PayeeBankID: "002",
				SettledAt: time.Now().UTC().Format(time.RFC3339)}, &r)
			if r.Result != bankapi.ResultAcknowledged || r.TxID != "TX-SEAM-2" {
				t.Fatalf("response %+v", r)
			}
			// The receiver recorded it: the settled debit can no longer be compensated.
			_, err := e.n.Banks["001"].Adapter.Compensate(e.ctx, adapter.CompensateRequest{RequestIDValue: "comp-1", TxID: "TX-SEAM-2", Reason: "seam"})
			if domainerr.Code(err) != "STATE_GUARD" {
				t.Fatalf("compensate after debit-settled: %v", err)
			}
		},
		bankapi.InitializeBank: func(t *testing.T) {
			var r bankapi.BankResponse
			e.must("002", &bankapi.InitializeBankRequest{RequestIDValue: "rq-ib-1"}, &r)
			if r.Result != bankapi.ResultAlreadyInitialized || r.BankID != "002" {
				t.Fatalf("response %+v", r)
			}
		},
		bankapi.CleanupBank: func(t *testing.T) {
			// Money in motion at 001 (a HELD reserve): refused, the bank's
			// reason code travels back through HTTP unchanged.
			err := e.call("001", &bankapi.CleanupBankRequest{}, nil)
			if de, ok := domainerr.As(err); !ok || de.Code != "STATE_GUARD" || de.Category != domainerr.Conflict {
				t.Fatalf("cleanup with holds: %v", err)
			}
			if _, err := e.n.Banks["001"].Adapter.Shadow(e.ctx, payer); err != nil {
				t.Fatalf("refused cleanup lost data: %v", err)
			}
			var r bankapi.BankResponse
			e.must("003", &bankapi.CleanupBankRequest{}, &r)
			if r.Result != bankapi.ResultCleanedUp || r.BankID != "003" {
				t.Fatalf("response %+v", r)
			}
			if _, err := e.n.Banks["003"].Adapter.Shadow(e.ctx, "h:003-0001"); err == nil {
				t.Fatal("cleanup-bank left the shadow account")
			}
		},
	}
	for _, cmd := range bankapi.Commands { // spec order: reserve before debit before credit
		f, ok := cases[cmd]
		if !ok {
			t.Errorf("no seam round trip for %s", cmd)
			continue
		}
		t.Run(string(cmd), f)
	}
	// Coverage by machine: every command crossed the wire.
	for _, cmd := range bankapi.Commands {
		if e.sent[cmd] == 0 {
			t.Errorf("command %s was never sent through the seam", cmd)
		}
	}
	if len(cases) != len(bankapi.Commands) {
		t.Errorf("%d seam cases for %d commands", len(cases), len(bankapi.Commands))
	}
}

// An unsigned or forged request never reaches the adapter.
func TestSeamRefusesUnsigned(t *testing.T) {
	e := newEnv(t)
	body := `{"request_id":"rq-x","txid":"TX-X","amount":{"value":100,"currency":"JPY"},"account_hash":"h:001-0001"}`
	for name, hdr := range map[string]map[string]string{
		"no signature":     {},
		"forged signature": {"X-ZC-Key-Id": "KEY-ZC-nope", "X-ZC-Sig-Nonce": "n1", "X-ZC-Sig-Time": time.Now().UTC().Format(time.RFC3339), "X-ZC-Signature": "AAAA"},
	} {
		req, _ := http.NewRequest("POST", e.n.URL+"/bank/001/zc-ingress/reserve-funds", strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized || res.Header.Get("X-Request-Id") == "" {
			t.Errorf("%s: status %d", name, res.StatusCode)
		}
	}
	if s := e.shadow("001", payer); s.Holds != 0 {
		t.Fatalf("refused request placed a hold: %+v", s)
	}
}
