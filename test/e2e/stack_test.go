package e2e

import (
	"context"
	"fmt"
	"github.com/zcgw/zcgw/formats/coreacct"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/adapter/corelink"
	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/adapter/mq/embedded"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox"
)

// start is 10:00 JST, inside every core's online day.
var start = time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)

// scratch puts the databases on tmpfs when there is one.
func scratch(t testing.TB) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "e2e-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

// stack is the coordinator plus banks, each bank an adapter in front of its
// own simulated core reached over one embedded MQ transport.
type stack struct {
	t     testing.TB
	ctx   context.Context
	clk   *clock.Manual
	dir   string
	zc    *store.DB
	tr    *embedded.Transport
	banks *InProcessBanks
	o     *orchestrator.Orchestrator
	bank  map[string]*bank
}

type bank struct {
	s    *stack
	id   string
	core *coresim.Core
	link *corelink.Link
	a    *adapter.Adapter
	mu   sync.Mutex
	acct map[string]string // account hash -> core account
}

type inquiry struct{ l *corelink.Link }

func (i inquiry) Balance(ctx context.Context, acct string) (adapter.CoreBalance, error) {
	return adapter.LinkBalance(ctx, i.l, acct)
}

func (i inquiry) NameCheck(ctx context.Context, acct, name string) (adapter.NameResult, error) {
	r, err := i.l.NameCheck(ctx, acct, name)
	switch {
	case err != nil:
		return "", err
	case r == "M":
		return adapter.NameMatch, nil
	case r == "N":
		return adapter.NameNoAccount, nil
	}
	return adapter.NameMismatch, nil
}

type stackOptions struct {
	cfg          func(*orchestrator.Config)
	realTime     map[string]bool             // per bank; default true
	batchWindows map[string][]adapter.Window // per bank adapter batch windows (JST)
	currencies   map[string][]string         // per bank foreign currencies (adapter.Config.Currencies)
}

func newStack(t testing.TB, opt stackOptions, bankIDs ...string) *stack {
	t.Helper()
	s := &stack{t: t, ctx: context.Background(), clk: clock.NewManual(start), dir: scratch(t), banks: NewInProcessBanks(), bank: map[string]*bank{}}
	var err error
	if s.zc, err = store.Open(s.ctx, filepath.Join(s.dir, "zc.db"), store.Schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.zc.Close() })
	s.tr = embedded.New(filepath.Join(s.dir, "mq.db"), embedded.Options{PollInterval: 5 * time.Millisecond})
	cfg := orchestrator.Config{DB: s.zc, Banks: s.banks, Clock: s.clk}
	if opt.cfg != nil {
		opt.cfg(&cfg)
	}
	if s.o, err = orchestrator.New(cfg); err != nil {
		t.Fatal(err)
	}
	for _, id := range bankIDs {
		rt := true
		if v, ok := opt.realTime[id]; ok {
			rt = v
		}
		s.addBank(id, rt, opt.batchWindows[id], opt.currencies[id]...)
	}
	return s
}

func (s *stack) addBank(id string, realTime bool, batch []adapter.Window, currencies ...string) *bank {
	t := s.t
	t.Helper()
	b := &bank{s: s, id: id, acct: map[string]string{}}
	var err error
	if b.core, err = coresim.Open(s.ctx, coresim.Config{Bank: id, DBPath: filepath.Join(s.dir, "core-"+id+".db"), Clock: s.clk}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.core.Close() })
	conn, err := s.tr.Connect(s.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(s.ctx)
	done := make(chan error, 1)
	go func() {
		err := b.core.Serve(ctx, conn, coresim.ServeConfig{Poll: 5 * time.Millisecond})
		conn.Close()
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("core %s serve loop: %v", id, err)
		}
	})
	if b.link, err = corelink.Open(s.ctx, corelink.Config{Bank: id, Transport: s.tr, Timeout: 2 * time.Second, Clock: s.clk,
		Online: b.core.Online}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.link.Close() })
	if b.a, err = adapter.Open(s.ctx, adapter.Config{BankID: id, DBPath: filepath.Join(s.dir, "adapter-"+id+".db"),
		Core: b.link, Inquiry: inquiry{b.link}, Cases: adapter.CoordinatorCases{DB: s.zc, Cases: cases.New(s.clk, nil, 0)},
		RealTime: realTime, BatchWindows: batch, Currencies: currencies, InquiryTimeout: 2 * time.Second, Clock: s.clk}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.a.Close() })
	if _, err := b.a.InitializeBank(s.ctx, bankapi.InitializeBankRequest{RequestIDValue: "init-" + id}); err != nil {
		t.Fatal(err)
	}
	s.banks.Add(b.a)
	if _, err := s.o.Participants().Create(s.ctx, participants.Participant{BankID: id, BankName: "Bank " + id,
		HLimit: 10_000_000_000_000, IsActive: true}); err != nil {
		t.Fatal(err)
	}
	s.bank[id] = b
	return b
}

// account opens an account at the core and registers it with the adapter.
func (b *bank) account(hash, name string, balance int64) {
	t := b.s.t
	t.Helper()
	b.mu.Lock()
	core := coreacct.Format("100", 1, fmt.Sprintf("%07d", len(b.acct)+1))
	b.acct[hash] = core
	b.mu.Unlock()
	if err := b.core.OpenAccount(b.s.ctx, core, name, balance); err != nil {
		t.Fatal(err)
	}
	if err := b.a.OpenAccountFromCore(b.s.ctx, adapter.Account{Hash: hash, CoreAccount: core, HolderName: name}); err != nil {
		t.Fatal(err)
	}
}

func (b *bank) coreBalance(hash string) int64 {
	t := b.s.t
	t.Helper()
	bal, err := b.core.Balance(b.s.ctx, b.acct[hash])
	if err != nil || !bal.Found {
		t.Fatalf("core balance of %s at %s: %+v %v", hash, b.id, bal, err)
	}
	return bal.Balance
}

// settleOutbox drains the adapter's outbox to its core until nothing is
// in flight.
func (b *bank) settleOutbox() {
	t := b.s.t
	t.Helper()
	for i := 0; i < 100; i++ {
		if _, err := b.a.Outbox().ResolveInDoubt(b.s.ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := b.a.Outbox().Drain(b.s.ctx, 1000); err != nil {
			t.Fatal(err)
		}
		c, err := b.a.Outbox().Counts(b.s.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c[outbox.Pending]+c[outbox.Claimed]+c[outbox.InDoubt] == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("outbox of %s did not settle", b.id)
}

// run works the orchestrator's queue until idle, then drains every bank's
// outbox to its core.
func (s *stack) run() {
	s.t.Helper()
	if _, err := s.o.RunUntilIdle(s.ctx); err != nil {
		s.t.Fatal(err)
	}
	for _, b := range s.bank {
		b.settleOutbox()
	}
}

func (s *stack) submit(lane, key, payer, payerAcct, payee, payeeAcct string, amount int64) (orchestrator.SubmitResult, error) {
	return s.o.Submit(s.ctx, orchestrator.PaymentInitiated{Lane: lane, Amount: bankapi.Amount{Value: amount, Currency: "JPY"},
		Payer: orchestrator.Party{BankID: payer, AccountHash: payerAcct}, Payee: orchestrator.Party{BankID: payee, AccountHash: payeeAcct},
		Purpose: "P2P"}, key, payer)
}

func (s *stack) mustSubmit(lane, key, payer, payerAcct, payee, payeeAcct string, amount int64) orchestrator.SubmitResult {
	s.t.Helper()
	r, err := s.submit(lane, key, payer, payerAcct, payee, payeeAcct, amount)
	if err != nil {
		s.t.Fatalf("submit %s: %v", key, err)
	}
	return r
}

func (s *stack) view(txid string) orchestrator.View {
	s.t.Helper()
	v, err := s.o.Query(s.ctx, txid)
	if err != nil {
		s.t.Fatalf("query %s: %v", txid, err)
	}
	return v
}

func (s *stack) wantState(txid, state, reason string) orchestrator.View {
	s.t.Helper()
	v := s.view(txid)
	if v.State != state || v.ReasonCode != reason {
		s.t.Fatalf("%s: state %s reason %q, want %s %q", txid, v.State, v.ReasonCode, state, reason)
	}
	return v
}

// ledger is a snapshot of every customer balance at every core and every
// settlement position.
type ledger struct {
	cust map[string]map[string]int64 // bank -> account hash -> core balance
	pos  map[string]map[string]int64 // bank -> venue -> position
}

func (s *stack) snapshot() ledger {
	s.t.Helper()
	l := ledger{cust: map[string]map[string]int64{}, pos: map[string]map[string]int64{}}
	for id, b := range s.bank {
		l.cust[id] = map[string]int64{}
		for h := range b.acct {
			l.cust[id][h] = b.coreBalance(h)
		}
		l.pos[id] = map[string]int64{}
	}
	ps, err := s.o.Positions(s.ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, p := range ps {
		if l.pos[p.BankID] == nil {
			l.pos[p.BankID] = map[string]int64{}
		}
		l.pos[p.BankID][p.Venue] += p.Balance
	}
	return l
}

// move is one expected customer movement.
type move struct {
	bank, acct string
	delta      int64
}

// checkInvariants asserts the balance invariants of spec 000 ch. 9 between
// two snapshots: every customer account moved by exactly its expected
// delta (others not at all); within each bank the customers' change equals
// the bank's settlement position change (zero-sum inside the bank's
// books); system-wide, customers and every venue each sum to zero.
func (s *stack) checkInvariants(before, after ledger, moves ...move) {
	s.t.Helper()
	want := map[string]map[string]int64{}
	for _, m := range moves {
		if want[m.bank] == nil {
			want[m.bank] = map[string]int64{}
		}
		want[m.bank][m.acct] += m.delta
	}
	var sysCust int64
	sysVenue := map[string]int64{}
	for id := range after.cust {
		var bankCust, bankPos int64
		for h, bal := range after.cust[id] {
			d := bal - before.cust[id][h]
			if d != want[id][h] {
				s.t.Errorf("bank %s account %s moved %d, want %d", id, h, d, want[id][h])
			}
			bankCust += d
		}
		for v, bal := range after.pos[id] {
			d := bal - before.pos[id][v]
			bankPos += d
			sysVenue[v] += d
		}
		if bankCust != bankPos {
			s.t.Errorf("bank %s not zero-sum: customers moved %d, settlement positions %d", id, bankCust, bankPos)
		}
		sysCust += bankCust
	}
	if sysCust != 0 {
		s.t.Errorf("system-wide customer balances moved %d, want 0 (conservation)", sysCust)
	}
	for v, d := range sysVenue {
		if d != 0 {
			s.t.Errorf("venue %s moved %d in total, want 0 (conservation)", v, d)
		}
	}
}
