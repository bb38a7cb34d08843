package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// countingCore is an in-memory non-idempotent core for the outbox tests:
// every Apply posts again, it refuses overdrafts, and it can be told to
// fail in the ways a real core over MQ fails.
type countingCore struct {
	mu        sync.Mutex
	balance   map[string]int64
	applied   map[string]int // ref -> times posted
	refused   map[string]string
	order     map[string][]string // account -> refs in posting order
	byRef     map[string]Posting
	offline   bool
	lostNext  int // next N applies: posted, but the answer is lost (in doubt)
	dropNext  int // next N applies: lost before the core saw them (in doubt)
	lookupErr error
	lookups   int
	applies   int
}

func newCountingCore(balances map[string]int64) *countingCore {
	c := &countingCore{balance: map[string]int64{}, applied: map[string]int{}, refused: map[string]string{},
		order: map[string][]string{}, byRef: map[string]Posting{}}
	for k, v := range balances {
		c.balance[k] = v
	}
	return c
}

func (c *countingCore) Apply(ctx context.Context, p Posting) (ApplyResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.applies++
	if c.offline {
		return ApplyResult{}, &NotSentError{Cause: errors.New("core offline")}
	}
	if c.dropNext > 0 {
		c.dropNext--
		return ApplyResult{}, &InDoubtError{Cause: errors.New("request lost")}
	}
	delta := p.Amount
	switch p.Kind {
	case Debit:
		delta = -p.Amount
	case Reversal:
		orig, ok := c.byRef[p.ReversalOf]
		if !ok || c.applied[p.ReversalOf] == 0 {
			c.refused[p.Ref] = "ORIGINAL_NOT_FOUND"
			return ApplyResult{}, &RefusedError{ReasonCode: "TX_NOT_FOUND", Message: "no such posting"}
		}
		if orig.Kind == Credit {
			delta = -p.Amount
		}
	}
	if c.balance[p.Account]+delta < 0 {
		c.refused[p.Ref] = "INSUFFICIENT_FUNDS"
		return ApplyResult{}, &RefusedError{ReasonCode: "INSUFFICIENT_FUNDS", Message: "overdraft"}
	}
	c.balance[p.Account] += delta
	c.applied[p.Ref]++
	c.byRef[p.Ref] = p
	c.order[p.Account] = append(c.order[p.Account], p.Ref)
	if c.lostNext > 0 {
		c.lostNext--
		return ApplyResult{}, &InDoubtError{Cause: errors.New("reply lost")}
	}
	return ApplyResult{CoreRef: fmt.Sprintf("J%d", c.applies), BalanceAfter: c.balance[p.Account]}, nil
}

func (c *countingCore) Lookup(ctx context.Context, ref string) (LookupResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lookups++
	if c.lookupErr != nil {
		return LookupResult{}, c.lookupErr
	}
	if c.applied[ref] > 0 {
		return LookupResult{State: LookupApplied, CoreRef: "J?"}, nil
	}
	if r, ok := c.refused[ref]; ok {
		return LookupResult{State: LookupRefused, ReasonCode: r}, nil
	}
	return LookupResult{State: LookupUnknown}, nil
}

func (c *countingCore) timesApplied(ref string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.applied[ref]
}

func (c *countingCore) bal(acct string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.balance[acct]
}

// fakeCases counts Case openings per dedup key and can fail.
type fakeCases struct {
	mu     sync.Mutex
	opened map[string]int
	fail   int
	calls  int
	reqs   []CaseRequest // every request that opened a Case
}

func (f *fakeCases) OpenCase(ctx context.Context, req CaseRequest) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail > 0 {
		f.fail--
		return "", errors.New("coordinator unavailable")
	}
	if f.opened == nil {
		f.opened = map[string]int{}
	}
	f.opened[req.DedupKey]++
	f.reqs = append(f.reqs, req)
	return fmt.Sprintf("CASE-%d", len(f.opened)), nil
}
