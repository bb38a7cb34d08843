package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/gateway/node"
)

// The invariants bench checks after every run, in this order.
const (
	InvTerminal     = "terminal"      // every accepted transfer SETTLED or CANCELLED, no unknown row, every posting APPLIED
	InvAccounts     = "accounts"      // each customer balance = opening + its SETTLED transfers
	InvConservation = "conservation"  // per bank customers moved = settlement position moved; system-wide 0
	InvExactlyOnce  = "exactly-once"  // each APPLIED posting journalled exactly once at its core, no stray line
	InvChains       = "chains-verify" // every FinalityLog chain verifies
)

// BoundIdleCPU names the idle mode's bound (Options.MaxIdleCPU) when a
// run breaks it: not an invariant of the money, but a failed run all the
// same.
const BoundIdleCPU = "idle-cpu"

func breach(inv, format string, args ...any) error {
	return &Breach{Invariant: inv, Detail: fmt.Sprintf(format, args...)}
}

// positions sums each bank's settlement positions (ZC + BOJ).
func positions(ctx context.Context, n *node.Node) (map[string]int64, error) {
	ps, err := n.Orchestrator.Positions(ctx)
	if err != nil {
		return nil, fmt.Errorf("bench: positions: %w", err)
	}
	out := map[string]int64{}
	for _, p := range ps {
		out[p.BankID] += p.Balance
		out["venue:"+p.Venue] += p.Balance
	}
	return out, nil
}

func check(ctx context.Context, n *node.Node, cfg node.Config, opening map[string]int64, sents []sent, states map[string]string, rep *Report) error {
	// Terminal.
	rep.Invariants = append(rep.Invariants, InvTerminal)
	known := map[string]bool{}
	for _, s := range sents {
		known[s.txid] = true
		switch st := states[s.txid]; st {
		case "SETTLED", "CANCELLED":
		case "":
			return breach(InvTerminal, "transfer %s was accepted but Transactions has no row", s.txid)
		default:
			return breach(InvTerminal, "transfer %s is %s, not terminal, after the quiescence bound", s.txid, st)
		}
	}
	for id, st := range states {
		if !known[id] {
			return breach(InvTerminal, "Transactions has %s (%s), the answer to no request", id, st)
		}
	}
	for _, bc := range cfg.Banks {
		var ref, st string
		err := n.Banks[bc.BankID].Adapter.DB().Read(ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(ctx, `SELECT ref, status FROM AdapterOutbox WHERE status != 'APPLIED' ORDER BY ref LIMIT 1`).Scan(&ref, &st)
		})
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fmt.Errorf("bench: bank %s outbox: %w", bc.BankID, err)
		default:
			return breach(InvTerminal, "bank %s: posting %s is %s, not APPLIED at its core, after the quiescence bound", bc.BankID, ref, st)
		}
	}

	// Accounts and conservation.
	rep.Invariants = append(rep.Invariants, InvAccounts, InvConservation)
	want := map[string]int64{}
	for _, s := range sents {
		if states[s.txid] == "SETTLED" {
			want[s.payer] -= s.amount
			want[s.payee] += s.amount
		}
	}
	bankMoved := map[string]int64{}
	var sys int64
	for _, bc := range cfg.Banks {
		core := n.Banks[bc.BankID].Core
		for _, a := range bc.Accounts {
			bal, err := core.Balance(ctx, a.CoreAccount)
			if err != nil {
				return fmt.Errorf("bench: bank %s core balance %s: %w", bc.BankID, a.CoreAccount, err)
			}
			key := bc.BankID + "/" + a.Hash
			if !bal.Found {
				return breach(InvAccounts, "account %s (%s) is missing at its core", key, a.CoreAccount)
			}
			moved := bal.Balance - a.Balance
			if moved != want[key] {
				return breach(InvAccounts, "account %s at its core moved %d, its SETTLED transfers say %d (off by %d)", key, moved, want[key], moved-want[key])
			}
			bankMoved[bc.BankID] += moved
			sys += moved
		}
	}
	closing, err := positions(ctx, n)
	if err != nil {
		return err
	}
	for _, bc := range cfg.Banks {
		pos := closing[bc.BankID] - opening[bc.BankID]
		if pos != bankMoved[bc.BankID] {
			return breach(InvConservation, "bank %s: customers moved %d at its core, its settlement positions (ZC + BOJ) moved %d", bc.BankID, bankMoved[bc.BankID], pos)
		}
	}
	if sys != 0 {
		return breach(InvConservation, "customer balances moved %d system-wide, want 0", sys)
	}
	for k, v := range closing {
		if strings.HasPrefix(k, "venue:") && v != opening[k] {
			return breach(InvConservation, "settlement positions at %s moved %d in total, want 0", strings.TrimPrefix(k, "venue:"), v-opening[k])
		}
	}

	// Exactly once at every core.
	rep.Invariants = append(rep.Invariants, InvExactlyOnce)
	for _, bc := range cfg.Banks {
		b := n.Banks[bc.BankID]
		journal := map[string]int{}
		if err := each(ctx, b.Core.DB(), `SELECT ref FROM CoreJournal WHERE source != ?`, func(ref string) { journal[ref]++ }, coresim.SourceSeed); err != nil {
			return fmt.Errorf("bench: bank %s core journal: %w", bc.BankID, err)
		}
		applied := map[string]bool{}
		if err := each(ctx, b.Adapter.DB(), `SELECT ref FROM AdapterOutbox WHERE status = 'APPLIED'`, func(ref string) { applied[ref] = true }); err != nil {
			return fmt.Errorf("bench: bank %s outbox: %w", bc.BankID, err)
		}
		refs := make([]string, 0, len(journal))
		for ref := range journal {
			refs = append(refs, ref)
		}
		sort.Strings(refs)
		for _, ref := range refs {
			switch {
			case journal[ref] > 1:
				return breach(InvExactlyOnce, "bank %s: posting %s applied %d times at its core", bc.BankID, ref, journal[ref])
			case !applied[ref]:
				return breach(InvExactlyOnce, "bank %s: core journal line %s has no APPLIED posting in the adapter's outbox", bc.BankID, ref)
			}
		}
		for ref := range applied {
			if journal[ref] == 0 {
				return breach(InvExactlyOnce, "bank %s: posting %s is APPLIED in the outbox but not in its core's journal", bc.BankID, ref)
			}
		}
	}

	// Chains.
	rep.Invariants = append(rep.Invariants, InvChains)
	vr, err := finality.VerifyAll(ctx, n.DB)
	if err != nil {
		return fmt.Errorf("bench: verify chains: %w", err)
	}
	if !vr.OK() {
		return breach(InvChains, "%d chain(s) broken, the first: %+v", len(vr.Breaks), vr.Breaks[0])
	}
	rep.ChainsVerified = vr.Chains
	return nil
}

// each runs a one-column query and hands every value to fn.
func each(ctx context.Context, db *store.DB, q string, fn func(string), args ...any) error {
	return db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				return err
			}
			fn(v)
		}
		return rows.Err()
	})
}
