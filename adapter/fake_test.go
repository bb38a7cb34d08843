package adapter

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/outbox"
)

// fakeCore is an in-memory non-idempotent core for the adapter's unit
// tests (the conformance suite in test/adapterconf uses the real simulated
// core over MQ): it posts every Apply, refuses overdrafts, answers
// inquiries, and can be offline or block name inquiries.
type fakeCore struct {
	mu       sync.Mutex
	balance  map[string]int64
	currency map[string]string // account -> ISO 4217; absent: JPY
	names    map[string]string
	applied  map[string]int
	byRef    map[string]outbox.Posting
	offline  bool
	lostNext int           // next N applies: posted, but the answer is lost (in doubt)
	block    chan struct{} // non-nil: NameCheck waits for it (or ctx)
	asked    chan struct{} // receives when NameCheck is entered
}

func newFakeCore() *fakeCore {
	return &fakeCore{balance: map[string]int64{}, currency: map[string]string{}, names: map[string]string{}, applied: map[string]int{},
		byRef: map[string]outbox.Posting{}}
}

func (c *fakeCore) Apply(ctx context.Context, p outbox.Posting) (outbox.ApplyResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.offline {
		return outbox.ApplyResult{}, &outbox.NotSentError{Cause: errors.New("core offline")}
	}
	delta := p.Amount
	switch p.Kind {
	case outbox.Debit:
		delta = -p.Amount
	case outbox.Reversal:
		orig, ok := c.byRef[p.ReversalOf]
		if !ok {
			return outbox.ApplyResult{}, &outbox.RefusedError{ReasonCode: "TX_NOT_FOUND", Message: "no such posting"}
		}
		if orig.Kind == outbox.Credit {
			delta = -p.Amount
		}
	}
	if c.balance[p.Account]+delta < 0 {
		return outbox.ApplyResult{}, &outbox.RefusedError{ReasonCode: "INSUFFICIENT_FUNDS", Message: "overdraft"}
	}
	c.balance[p.Account] += delta
	c.applied[p.Ref]++
	c.byRef[p.Ref] = p
	if c.lostNext > 0 {
		c.lostNext--
		return outbox.ApplyResult{}, &outbox.InDoubtError{Cause: errors.New("reply lost")}
	}
	return outbox.ApplyResult{CoreRef: "J" + p.Ref, BalanceAfter: c.balance[p.Account]}, nil
}

func (c *fakeCore) Lookup(ctx context.Context, ref string) (outbox.LookupResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.offline {
		return outbox.LookupResult{}, errors.New("core offline")
	}
	if c.applied[ref] > 0 {
		return outbox.LookupResult{State: outbox.LookupApplied}, nil
	}
	return outbox.LookupResult{State: outbox.LookupUnknown}, nil
}

func (c *fakeCore) Balance(ctx context.Context, account string) (CoreBalance, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.offline {
		return CoreBalance{}, errors.New("core offline")
	}
	b, ok := c.balance[account]
	if !ok {
		return CoreBalance{}, fmt.Errorf("no account %s", account)
	}
	cur := c.currency[account]
	if cur == "" {
		cur = "JPY"
	}
	return CoreBalance{Ledger: b, Currency: cur}, nil
}

func (c *fakeCore) NameCheck(ctx context.Context, account, given string) (NameResult, error) {
	c.mu.Lock()
	block, asked, offline, name := c.block, c.asked, c.offline, c.names[account]
	c.mu.Unlock()
	if asked != nil {
		asked <- struct{}{}
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if offline {
		return "", errors.New("core offline")
	}
	switch {
	case name == "":
		return NameNoAccount, nil
	case normalizeName(name) == normalizeName(given):
		return NameMatch, nil
	}
	return NameMismatch, nil
}

func (c *fakeCore) set(f func(c *fakeCore)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c)
}

func (c *fakeCore) bal(account string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.balance[account]
}

// fakeCases records the Cases opened, idempotently by DedupKey.
type fakeCases struct {
	fail  error // non-nil: OpenCase fails
	mu    sync.Mutex
	byKey map[string]string
	reqs  []outbox.CaseRequest
}

func (f *fakeCases) OpenCase(ctx context.Context, r outbox.CaseRequest) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return "", f.fail
	}
	if f.byKey == nil {
		f.byKey = map[string]string{}
	}
	if id, ok := f.byKey[r.DedupKey]; ok {
		return id, nil
	}
	id := fmt.Sprintf("CASE-%d", len(f.byKey)+1)
	f.byKey[r.DedupKey] = id
	f.reqs = append(f.reqs, r)
	return id, nil
}

func (f *fakeCases) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

type harness struct {
	t     testing.TB
	a     *Adapter
	core  *fakeCore
	cases *fakeCases
	clk   *clock.Manual
	ctx   context.Context
}

// start is 10:00 JST, outside the test batch window (23:00-01:00 JST).
var start = time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)

func newHarness(t testing.TB, mod ...func(*Config)) *harness {
	t.Helper()
	ctx := context.Background()
	h := &harness{t: t, core: newFakeCore(), cases: &fakeCases{}, clk: clock.NewManual(start), ctx: ctx}
	cfg := Config{BankID: "001", DBPath: filepath.Join(t.TempDir(), "adapter.db"), RealTime: true,
		BatchWindows: []Window{{From: 23 * 60, To: 60}}, Clock: h.clk,
		InquiryTimeout: time.Second}
	cfg.Core, cfg.Inquiry, cfg.Cases = h.core, h.core, h.cases
	for _, m := range mod {
		m(&cfg)
	}
	a, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	// Every test on a harness ends by recomputing the shadow's kept
	// totals from the posting and outbox rows (shadow_totals.go).
	t.Cleanup(func() { checkShadowTotals(t, a) })
	h.a = a
	if _, err := a.InitializeBank(ctx, bankapi.InitializeBankRequest{}); err != nil {
		t.Fatal(err)
	}
	return h
}

// account registers an account at the fake core and the adapter.
func (h *harness) account(hash, core, name string, balance int64) {
	h.t.Helper()
	h.core.set(func(c *fakeCore) { c.balance[core] = balance; c.names[core] = name })
	if err := h.a.OpenAccountFromCore(h.ctx, Account{Hash: hash, CoreAccount: core, HolderName: name}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) shadow(hash string) Shadow {
	h.t.Helper()
	s, err := h.a.Shadow(h.ctx, hash)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func (h *harness) drain() outbox.DrainResult {
	h.t.Helper()
	r, err := h.a.Outbox().Drain(h.ctx, 1000)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func jpy(v int64) bankapi.Amount { return bankapi.Amount{Value: v, Currency: "JPY"} }
