package dns

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// The simulated central-bank current accounts are the SettlementPositions
// rows with venue 'BOJ' (yen, one per bank) — the same accounts the
// HIGH_VALUE lane settles on, so a bank has one central-bank balance —
// and, for any other currency, venue 'CBT-{CHAIN}' (the tokenised current
// account {bank}-CBT-{CCY}-{CHAIN} at that currency's central bank,
// venue.go).
// The venue 'ZC' rows are the coordinator's open net positions: the
// orchestrator moves them (payer -amount, payee +amount) when a non
// HIGH_VALUE transfer settles, and a DNS settlement takes each bank's
// cycle net off them as it posts it on BOJ — so once every settled
// transfer has gone through a cycle, every ZC position is zero again.

// VenueZC is the SettlementPositions venue of the coordinator's open net
// positions that DNS settles.
const VenueZC = "ZC"

// Account is one bank's central-bank balance (GET /internal/boj-positions).
type Account struct {
	BankID    string `json:"bank_id"`
	Venue     string `json:"venue"` // BOJ, or CBT-{CHAIN}
	Currency  string `json:"currency"`
	Balance   int64  `json:"balance"`
	UpdatedAt string `json:"updated_at"`
}

func balanceOf(ctx context.Context, tx *store.Tx, venue, bankID, currency string) (int64, error) {
	var b int64
	err := tx.QueryRowContext(ctx, `SELECT balance FROM SettlementPositions WHERE bank_id = ? AND venue = ? AND currency = ?`,
		bankID, venue, currency).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("dns: %s balance of %s: %w", venue, bankID, err)
	}
	return b, nil
}

func ensureAccount(ctx context.Context, tx *store.Tx, venue, bankID, currency, now string) error {
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO SettlementPositions (bank_id, venue, currency, balance, updated_at)
		VALUES (?, ?, ?, 0, ?)`, bankID, venue, currency, now); err != nil {
		return fmt.Errorf("dns: open %s account of %s: %w", venue, bankID, err)
	}
	return nil
}

// postNet posts one bank's net position of a cycle exactly once (the
// DnsSettlementPostings key (cycle, bank) refuses a second posting): the
// bank's central-bank balance at the cycle's venue moves by amount,
// guarded so that a debit never takes it below zero, and the bank's open
// ZC position moves by -amount.
func postNet(ctx context.Context, tx *store.Tx, c Cycle, bankID string, amount int64, now string) (after int64, posted bool, err error) {
	cycleID, currency, venue := c.CycleID, c.Currency, c.Venue()
	if err := ensureAccount(ctx, tx, venue, bankID, currency, now); err != nil {
		return 0, false, err
	}
	ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE SettlementPositions SET balance = balance + ?, updated_at = ?
		WHERE bank_id = ? AND venue = ? AND currency = ? AND balance + ? >= 0`, amount, now, bankID, venue, currency, amount))
	if err != nil {
		return 0, false, fmt.Errorf("dns: post %d on %s account of %s: %w", amount, venue, bankID, err)
	}
	if !ok {
		return 0, false, domainerr.New("INVARIANT_VIOLATION", "central-bank debit would overdraw the account",
			map[string]any{"cycle_id": cycleID, "bank_id": bankID, "venue": venue, "amount": amount})
	}
	if after, err = balanceOf(ctx, tx, venue, bankID, currency); err != nil {
		return 0, false, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO SettlementPositions (bank_id, venue, currency, balance, updated_at)
		VALUES (?, 'ZC', ?, 0, ?)`, bankID, currency, now); err != nil {
		return 0, false, fmt.Errorf("dns: open ZC position of %s: %w", bankID, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE SettlementPositions SET balance = balance - ?, updated_at = ?
		WHERE bank_id = ? AND venue = 'ZC' AND currency = ?`, amount, now, bankID, currency); err != nil {
		return 0, false, fmt.Errorf("dns: clear ZC position of %s: %w", bankID, err)
	}
	inserted, err := store.Insert(ctx, tx, "DnsSettlementPostings",
		[]string{"cycle_id", "bank_id", "currency", "venue", "amount", "balance_after", "posted_at"},
		cycleID, bankID, currency, venue, amount, after, now)
	if err != nil {
		return 0, false, fmt.Errorf("dns: record posting %s/%s: %w", cycleID, bankID, err)
	}
	if !inserted {
		// Only reachable if a posting exists for a cycle that was not yet
		// SETTLED: the state CAS makes that impossible.
		return 0, false, domainerr.New("INVARIANT_VIOLATION", "DNS cycle posted twice", map[string]any{"cycle_id": cycleID, "bank_id": bankID})
	}
	return after, true, nil
}

// FundInTx credits amount (> 0) to a bank's central-bank account in
// currency inside the caller's transaction: the bridge liquidity or
// prefunding that covers a HOLD gap (the simulator's stand-in for a
// BOJ-NET transfer into the yen account, or a mint into the tokenised
// account of another currency on its settlement chain). It returns the
// new balance.
func (s *Service) FundInTx(ctx context.Context, tx *store.Tx, bankID, currency string, amount int64) (int64, error) {
	if err := s.gate.CheckWritable(ctx, tx); err != nil {
		return 0, err
	}
	if amount <= 0 {
		return 0, domainerr.New("INVALID_AMOUNT", "funding amount must be positive", map[string]any{"amount": amount})
	}
	if err := checkCurrency(currency); err != nil {
		return 0, err
	}
	now := clock.Stamp(s.clk.Now())
	venue := venueOf(s.SettlementChainOf(currency))
	if err := ensureAccount(ctx, tx, venue, bankID, currency, now); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE SettlementPositions SET balance = balance + ?, updated_at = ?
		WHERE bank_id = ? AND venue = ? AND currency = ?`, amount, now, bankID, venue, currency); err != nil {
		return 0, fmt.Errorf("dns: fund %s account of %s: %w", venue, bankID, err)
	}
	s.logger.InfoContext(ctx, "dns.boj_funded", "bank_id", bankID, "venue", venue, "currency", currency, "amount", amount)
	return balanceOf(ctx, tx, venue, bankID, currency)
}

// Fund is FundInTx in its own write transaction.
func (s *Service) Fund(ctx context.Context, bankID, currency string, amount int64) (bal int64, err error) {
	err = s.db.Write(ctx, func(tx *store.Tx) error {
		bal, err = s.FundInTx(ctx, tx, bankID, currency, amount)
		return err
	})
	return bal, err
}

// Accounts lists every central-bank account (GET /internal/boj-positions),
// by bank and currency.
func (s *Service) Accounts(ctx context.Context) (out []Account, err error) {
	err = s.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT bank_id, venue, currency, balance, updated_at FROM SettlementPositions
			WHERE venue = ? OR venue LIKE ? ORDER BY bank_id, currency, venue`, VenueBOJ, venueCBTPrefix+"%")
		if err != nil {
			return fmt.Errorf("dns: list BOJ accounts: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var a Account
			if err := rows.Scan(&a.BankID, &a.Venue, &a.Currency, &a.Balance, &a.UpdatedAt); err != nil {
				return err
			}
			out = append(out, a)
		}
		return rows.Err()
	})
	return out, err
}
