package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// InProcessBanks reaches bank adapters in this process. It implements
// orchestrator.Banks. It is safe for concurrent use.
type InProcessBanks struct {
	mu       sync.RWMutex
	adapters map[string]*adapter.Adapter
	down     map[string]map[bankapi.Command]bool // unreachable bank (command "" = every command)
	calls    map[bankapi.Command]int
}

// NewInProcessBanks returns an empty set of banks.
func NewInProcessBanks() *InProcessBanks {
	return &InProcessBanks{adapters: map[string]*adapter.Adapter{}, down: map[string]map[bankapi.Command]bool{}, calls: map[bankapi.Command]int{}}
}

// Add registers a bank's adapter.
func (b *InProcessBanks) Add(a *adapter.Adapter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.adapters[a.BankID()] = a
}

// SetDown makes a bank unreachable for the given commands (none: every
// command) — each call fails as a transport failure would, BANK_ERROR —
// or reachable again (down false clears every command).
func (b *InProcessBanks) SetDown(bankID string, down bool, cmds ...bankapi.Command) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !down {
		delete(b.down, bankID)
		return
	}
	if len(cmds) == 0 {
		cmds = []bankapi.Command{""}
	}
	if b.down[bankID] == nil {
		b.down[bankID] = map[bankapi.Command]bool{}
	}
	for _, c := range cmds {
		b.down[bankID][c] = true
	}
}

// Calls returns how many calls of each command reached a bank.
func (b *InProcessBanks) Calls() map[bankapi.Command]int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make(map[bankapi.Command]int, len(b.calls))
	for k, v := range b.calls {
		out[k] = v
	}
	return out
}

// Call implements orchestrator.Banks.
func (b *InProcessBanks) Call(ctx context.Context, bankID string, req bankapi.Request, resp any) error {
	cmd := req.Command()
	b.mu.Lock()
	a, ok := b.adapters[bankID]
	down := b.down[bankID][""] || b.down[bankID][cmd]
	if ok && !down {
		b.calls[cmd]++
	}
	b.mu.Unlock()
	if !ok || down {
		return domainerr.New("BANK_ERROR", "bank ingress unreachable", map[string]any{"bank_id": bankID, "command": string(cmd)})
	}
	if err := ctx.Err(); err != nil {
		return bankTimeout(bankID, cmd, err)
	}
	// The wire: the request is JSON-encoded by the caller and decoded by
	// the receiver into its own fresh value.
	raw, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("e2e: encode %s: %w", cmd, err)
	}
	in, ok := bankapi.NewRequest(cmd)
	if !ok {
		return domainerr.New("INVALID_REQUEST", "unknown command", map[string]any{"command": string(cmd)})
	}
	if err := json.Unmarshal(raw, in); err != nil {
		return fmt.Errorf("e2e: decode %s: %w", cmd, err)
	}
	out, err := a.Dispatch(ctx, in)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return bankTimeout(bankID, cmd, err)
		}
		de, ok := domainerr.As(err)
		if !ok { // the HTTP handler answers any other error as a retryable BANK_ERROR
			return domainerr.New("BANK_ERROR", "bank adapter failed; retry", map[string]any{"bank_id": bankID, "command": string(cmd)})
		}
		// What the catalog body carries: code, category, message, details.
		return &domainerr.Error{Code: de.Code, Category: de.Category, Message: de.Message, Details: de.Details}
	}
	body, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("e2e: encode %s response: %w", cmd, err)
	}
	return json.Unmarshal(body, resp)
}

func bankTimeout(bankID string, cmd bankapi.Command, err error) error {
	return domainerr.Wrap("BANK_TIMEOUT", err, "bank ingress did not answer in time", map[string]any{"bank_id": bankID, "command": string(cmd)})
}
