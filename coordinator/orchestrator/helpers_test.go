package orchestrator

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

var t0 = time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC) // 10:00 JST

// fakeBanks is a test double of the bank ingress boundary: it answers
// every command like a healthy bank, records the calls, and returns the
// error planned for a command (once or always).
type fakeBanks struct {
	mu        sync.Mutex
	calls     []string // "bank:command"
	fail      map[bankapi.Command]error
	failOnce  map[bankapi.Command]bool
	proofType string                    // proof_type of execute-debit (default PAYER_EXEC_PROOF; HV tests set the isolation proof)
	onCall    func(cmd bankapi.Command) // runs before answering (outside the lock)
	aliases   map[string]string         // pspr_ref -> account_hash the payee bank resolves
	credited  map[string]string         // txid -> payee_account_hash of its execute-credit
	bodies    map[string][]string       // request_id -> JSON body of every call
}

func newFakeBanks() *fakeBanks {
	return &fakeBanks{fail: map[bankapi.Command]error{}, failOnce: map[bankapi.Command]bool{},
		aliases: map[string]string{}, credited: map[string]string{}, bodies: map[string][]string{}}
}

func (f *fakeBanks) failWith(cmd bankapi.Command, err error, once bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[cmd], f.failOnce[cmd] = err, once
}

func (f *fakeBanks) count(cmd bankapi.Command) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c[4:] == string(cmd) {
			n++
		}
	}
	return n
}

func (f *fakeBanks) Call(ctx context.Context, bankID string, req bankapi.Request, resp any) error {
	if err := req.Validate(); err != nil {
		return err
	}
	cmd := req.Command()
	f.mu.Lock()
	f.calls = append(f.calls, bankID+":"+string(cmd))
	if raw, err := json.Marshal(req); err == nil {
		f.bodies[req.RequestID()] = append(f.bodies[req.RequestID()], string(raw))
	}
	if err, ok := f.fail[cmd]; ok && err != nil {
		if f.failOnce[cmd] {
			delete(f.fail, cmd)
		}
		f.mu.Unlock()
		return err
	}
	pt, hook := f.proofType, f.onCall
	resolved := ""
	switch q := req.(type) {
	case *bankapi.NameCheckRequest:
		if q.AccountHash == "" {
			resolved = f.aliases[q.PSPRRef]
		}
	case *bankapi.ExecuteCreditRequest:
		f.credited[q.TxID] = q.PayeeAccountHash
	}
	f.mu.Unlock()
	if hook != nil {
		hook(cmd)
	}
	switch r := resp.(type) {
	case *bankapi.ReserveFundsResponse:
		*r = bankapi.ReserveFundsResponse{Result: bankapi.ResultReserved, ReservationRef: "RSV-" + req.(*bankapi.ReserveFundsRequest).TxID}
	case *bankapi.CheckResponse:
		*r = bankapi.CheckResponse{Result: bankapi.ResultOK}
	case *bankapi.NameCheckResponse:
		*r = bankapi.NameCheckResponse{Result: bankapi.ResultMatch}
		if q := req.(*bankapi.NameCheckRequest); q.AccountHash == "" {
			*r = bankapi.NameCheckResponse{Result: bankapi.ResultMatch, ResolvedAccountHash: resolved}
			if resolved == "" {
				*r = bankapi.NameCheckResponse{Result: bankapi.ResultMismatch, ReasonCode: bankapi.ReasonAccountNotFound}
			}
		}
	case *bankapi.ExecuteResponse:
		typ := bankapi.ProofPayeeExec
		if cmd == bankapi.ExecuteDebit {
			typ = bankapi.ProofPayerExec
			if pt != "" {
				typ = pt
			}
		}
		*r = bankapi.ExecuteResponse{Result: bankapi.ResultOK, BankProofRef: bankapi.BankProofRef{IssuerBankID: bankID, ProofType: typ,
			ProofID: "PRF-" + bankID, RecordedAt: "2026-12-02T01:00:00.000000000Z", Venue: bankapi.VenueBankLedger}}
	case *bankapi.NotifyResponse:
		*r = bankapi.NotifyResponse{Result: bankapi.ResultNotified}
	case *bankapi.DebitSettledResponse:
		*r = bankapi.DebitSettledResponse{Result: bankapi.ResultAcknowledged}
	case *bankapi.ReleaseReserveResponse:
		*r = bankapi.ReleaseReserveResponse{Result: bankapi.ResultReleased}
	}
	return nil
}

type fixture struct {
	t   testing.TB
	ctx context.Context
	clk *clock.Manual
	db  *store.DB
	b   *fakeBanks
	o   *Orchestrator
}

func newFixture(t testing.TB, mod func(*Config)) *fixture {
	t.Helper()
	dir := t.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() { // behaviour, not disk latency
		if d, err := os.MkdirTemp("/dev/shm", "orch-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			dir = d
		}
	}
	return newFixtureAt(t, filepath.Join(dir, "zc.db"), mod)
}

// newFixtureOn is newFixture on backend b (storetest).
func newFixtureOn(t testing.TB, b storetest.Backend, mod func(*Config)) *fixture {
	t.Helper()
	return newFixtureAt(t, b.Location(t, "zc"), mod)
}

func newFixtureAt(t testing.TB, location string, mod func(*Config)) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: context.Background(), clk: clock.NewManual(t0), b: newFakeBanks()}
	var err error
	if f.db, err = store.Open(f.ctx, location, store.Schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.db.Close() })
	cfg := Config{DB: f.db, Banks: f.b, Clock: f.clk}
	if mod != nil {
		mod(&cfg)
	}
	if f.o, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"001", "002"} {
		if _, err := f.o.Participants().Create(f.ctx, participants.Participant{BankID: id, BankName: "Bank " + id,
			HLimit: 1_000_000_000_000, IsActive: true}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func pi(lane string, amount int64) PaymentInitiated {
	return PaymentInitiated{Lane: lane, Amount: bankapi.Amount{Value: amount, Currency: "JPY"},
		Payer: Party{BankID: "001", AccountHash: "h:a"}, Payee: Party{BankID: "002", AccountHash: "h:b"}}
}

func (f *fixture) submit(req PaymentInitiated, key string) SubmitResult {
	f.t.Helper()
	r, err := f.o.Submit(f.ctx, req, key, req.Payer.BankID)
	if err != nil {
		f.t.Fatalf("submit %s: %v", key, err)
	}
	return r
}

func (f *fixture) run() {
	f.t.Helper()
	if _, err := f.o.RunUntilIdle(f.ctx); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) view(txid string) View {
	f.t.Helper()
	v, err := f.o.Query(f.ctx, txid)
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

func (f *fixture) count(q string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.db.Read(f.ctx, func(tx *store.Tx) error { return tx.QueryRowContext(f.ctx, q, args...).Scan(&n) }); err != nil {
		f.t.Fatal(err)
	}
	return n
}

func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	if got := domainerr.Code(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}
