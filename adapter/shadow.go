package adapter

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Account statuses.
const (
	AccountActive = "ACTIVE"
	AccountFrozen = "FROZEN"
)

// Account is a customer account known to the adapter: the hash the
// coordinator uses, the core's account number and the holder name.
type Account struct {
	Hash        string // account_hash used on the ingress API
	CoreAccount string // the core's account number
	HolderName  string
	Status      string // ACTIVE (default) or FROZEN
	// Lifecycle is OPEN, CLOSING_HOLD or CLOSED (lifecycle.go); set by
	// the teller API's account lifecycle only.
	Lifecycle string
	// Currency is the account's ISO 4217 currency: "" means the adapter's
	// Config.Currency. It must be that or one of Config.Currencies.
	Currency string
}

// Shadow is the adapter's view of one account (spec 001 ch. 18 shadow
// ledger).
type Shadow struct {
	Account
	// CoreBalance is the last known core balance: opening balance plus
	// adjustments plus every posting the outbox marked APPLIED.
	CoreBalance int64
	// Holds is the sum of HELD reservations.
	Holds int64
	// PendingDebits and PendingCredits are approved postings the core has
	// not (provably) applied yet: PENDING, CLAIMED, IN_DOUBT, BLOCKED or
	// IN_FILE (in an overnight file not answered yet), whatever the route.
	PendingDebits  int64
	PendingCredits int64
	// Unsettled counts postings whose outcome at the core is unknown right
	// now (CLAIMED, IN_DOUBT, or IN_FILE: the core may have run the file
	// before its result is ingested).
	Unsettled int
	// Available = CoreBalance - Holds - PendingDebits. Pending credits are
	// not spendable until the core has them.
	Available int64
	// Projected is the balance once every pending posting is applied.
	Projected int64
}

// nullable stores "" as NULL.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func accountNotFound(hash string) error {
	return domainerr.New("ACCOUNT_NOT_FOUND", "no account with this account_hash at this bank",
		map[string]any{"account_hash": hash})
}

// OpenAccount registers an account and seeds its shadow with the core's
// opening balance (seedOpeningBalance: a production operation, not a test
// hook). The opening balance must be the core's balance at registration;
// use OpenAccountFromCore to read it from the core.
func (a *Adapter) OpenAccount(ctx context.Context, acct Account, openingBalance int64) error {
	if acct.Hash == "" || acct.CoreAccount == "" || acct.HolderName == "" {
		return domainerr.New("MISSING_FIELD", "account needs hash, core account and holder name",
			map[string]any{"account_hash": acct.Hash, "core_account": acct.CoreAccount})
	}
	if acct.Status == "" {
		acct.Status = AccountActive
	}
	if acct.Status != AccountActive && acct.Status != AccountFrozen {
		return domainerr.New("INVALID_STATE", "account status must be ACTIVE or FROZEN", map[string]any{"status": acct.Status})
	}
	if openingBalance < 0 {
		return domainerr.New("INVALID_AMOUNT", "opening balance cannot be negative", map[string]any{"opening_balance": openingBalance})
	}
	if acct.Currency != "" && !a.accepted[acct.Currency] {
		return domainerr.New("INVALID_CURRENCY", "the bank keeps no account in "+acct.Currency,
			map[string]any{"field": "currency", "currency": acct.Currency, "account_hash": acct.Hash})
	}
	return a.db.Write(ctx, func(tx *store.Tx) error {
		now := a.now()
		_, err := tx.ExecContext(ctx, `INSERT INTO AdapterAccounts
			(account_hash, core_account, holder_name, status, opening_balance, currency, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, acct.Hash, acct.CoreAccount, acct.HolderName, acct.Status, openingBalance,
			nullable(acct.Currency), now, now)
		if store.IsUniqueViolation(err) {
			return domainerr.New("STATE_GUARD", "account already registered", map[string]any{"account_hash": acct.Hash, "core_account": acct.CoreAccount})
		}
		if err != nil {
			return fmt.Errorf("adapter: open account %s: %w", acct.Hash, err)
		}
		a.log.InfoContext(ctx, "adapter.account_opened", "account_hash", acct.Hash, "core_account", acct.CoreAccount,
			"opening_balance", openingBalance)
		return nil
	})
}

// RegisterAlias adds pspr_ref to the bank's directory of payee references,
// pointing at one of its accounts: an EXPRESS transfer sent with that
// pspr_ref and no payee.account_hash is credited to it (NameCheck
// resolves it). A reference is registered once (STATE_GUARD after).
func (a *Adapter) RegisterAlias(ctx context.Context, psprRef, accountHash string) error {
	if psprRef == "" || accountHash == "" {
		return domainerr.New("MISSING_FIELD", "an alias needs pspr_ref and account_hash",
			map[string]any{"pspr_ref": psprRef, "account_hash": accountHash})
	}
	return a.db.Write(ctx, func(tx *store.Tx) error {
		if _, err := readShadow(ctx, tx, accountHash); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO AdapterAliases (pspr_ref, account_hash, created_at) VALUES (?, ?, ?)`,
			psprRef, accountHash, a.now())
		if store.IsUniqueViolation(err) {
			return domainerr.New("STATE_GUARD", "pspr_ref already registered", map[string]any{"pspr_ref": psprRef})
		}
		if err != nil {
			return fmt.Errorf("adapter: register alias %s: %w", psprRef, err)
		}
		a.log.InfoContext(ctx, "adapter.alias_registered", "pspr_ref", psprRef, "account_hash", accountHash)
		return nil
	})
}

// resolveAlias returns the account pspr_ref points at, "" when none does.
func resolveAlias(ctx context.Context, tx *store.Tx, psprRef string) (string, error) {
	var hash string
	err := tx.QueryRowContext(ctx, `SELECT account_hash FROM AdapterAliases WHERE pspr_ref = ?`, psprRef).Scan(&hash)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("adapter: resolve pspr_ref %s: %w", psprRef, err)
	}
	return hash, nil
}

// OpenAccountFromCore registers an account with the balance and the
// currency the core reports now (a balance inquiry over the core link).
// An account registered without a currency takes the core's; one declared
// in another currency than the core keeps it in is INVALID_CURRENCY.
func (a *Adapter) OpenAccountFromCore(ctx context.Context, acct Account) error {
	if a.inq == nil {
		return domainerr.New("BANK_ERROR", "no core inquiry link configured", nil)
	}
	bal, err := a.inq.Balance(ctx, acct.CoreAccount)
	if err != nil {
		return domainerr.Wrap("BANK_ERROR", err, "balance inquiry failed", map[string]any{"core_account": acct.CoreAccount})
	}
	if err := a.coreCurrency(&acct, bal.Currency); err != nil {
		return err
	}
	return a.OpenAccount(ctx, acct, bal.Ledger)
}

// coreCurrency reconciles the currency acct is registered in with the one
// the core reports (core == "": a core that does not say): an account
// without one takes the core's, a different one is INVALID_CURRENCY.
func (a *Adapter) coreCurrency(acct *Account, core string) error {
	if core == "" {
		return nil
	}
	declared := acct.Currency
	if declared == "" {
		declared = a.currency
	}
	if acct.Currency == "" && core != a.currency {
		acct.Currency = core
		return nil
	}
	if declared != core {
		return domainerr.New("INVALID_CURRENCY", "the core keeps the account in "+core+", not "+declared,
			map[string]any{"field": "currency", "currency": declared, "core_currency": core, "core_account": acct.CoreAccount})
	}
	return nil
}

// SetAccountStatus freezes or unfreezes an account.
func (a *Adapter) SetAccountStatus(ctx context.Context, hash, status string) error {
	if status != AccountActive && status != AccountFrozen {
		return domainerr.New("INVALID_STATE", "account status must be ACTIVE or FROZEN", map[string]any{"status": status})
	}
	return a.db.Write(ctx, func(tx *store.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE AdapterAccounts SET status = ?, updated_at = ? WHERE account_hash = ?`,
			status, a.now(), hash)
		if err != nil {
			return fmt.Errorf("adapter: set status %s: %w", hash, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return accountNotFound(hash)
		}
		return nil
	})
}

// Shadow returns the shadow ledger of one account.
func (a *Adapter) Shadow(ctx context.Context, hash string) (Shadow, error) {
	var s Shadow
	err := a.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		s, err = readShadow(ctx, tx, hash)
		return err
	})
	return s, err
}

// Shadows returns the shadow ledger of every account, by account_hash.
func (a *Adapter) Shadows(ctx context.Context) ([]Shadow, error) {
	var out []Shadow
	err := a.db.Read(ctx, func(tx *store.Tx) error {
		hashes, err := accountHashes(ctx, tx)
		if err != nil {
			return err
		}
		for _, h := range hashes {
			s, err := readShadow(ctx, tx, h)
			if err != nil {
				return err
			}
			out = append(out, s)
		}
		return nil
	})
	return out, err
}

func accountHashes(ctx context.Context, tx *store.Tx) ([]string, error) {
	out, err := queryStrings(ctx, tx, `SELECT account_hash FROM AdapterAccounts ORDER BY account_hash`)
	if err != nil {
		return nil, fmt.Errorf("adapter: list accounts: %w", err)
	}
	return out, nil
}

// queryStrings runs a query of one text column and returns its values.
func queryStrings(ctx context.Context, tx *store.Tx, q string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// readShadow computes the shadow of one account inside tx, in one
// statement: the account, its kept posting totals (AdapterShadowTotals,
// shadow_totals.go) and its held amount.
func readShadow(ctx context.Context, tx *store.Tx, hash string) (Shadow, error) {
	var s Shadow
	var opening, adj, applied int64
	err := tx.QueryRowContext(ctx, `SELECT a.account_hash, a.core_account, a.holder_name, a.status, a.lifecycle, COALESCE(a.currency, ''), a.opening_balance, a.adjustment,
		COALESCE(t.applied, 0), COALESCE(t.pending_debits, 0), COALESCE(t.pending_credits, 0), COALESCE(t.unsettled, 0),
		(SELECT COALESCE(SUM(h.amount), 0) FROM AdapterHolds h WHERE h.account_hash = a.account_hash AND h.status = 'HELD')
		FROM AdapterAccounts a LEFT JOIN AdapterShadowTotals t ON t.account_hash = a.account_hash WHERE a.account_hash = ?`, hash).
		Scan(&s.Hash, &s.CoreAccount, &s.HolderName, &s.Status, &s.Lifecycle, &s.Currency, &opening, &adj, &applied, &s.PendingDebits, &s.PendingCredits, &s.Unsettled, &s.Holds)
	if errors.Is(err, sql.ErrNoRows) {
		return s, accountNotFound(hash)
	}
	if err != nil {
		return s, fmt.Errorf("adapter: read account %s: %w", hash, err)
	}
	s.CoreBalance = opening + adj + applied
	s.Available = s.CoreBalance - s.Holds - s.PendingDebits
	s.Projected = s.CoreBalance + s.PendingCredits - s.PendingDebits
	return s, nil
}

// Screening entry types for authority-check.
const (
	ScreenAccount  = "ACCOUNT"
	ScreenTxID     = "TXID"
	ScreenVaultRef = "VAULT_REF"
)

// AddScreeningEntry adds an entry to the bank's local AML/sanctions list.
func (a *Adapter) AddScreeningEntry(ctx context.Context, entryType, value, reason string) error {
	if entryType != ScreenAccount && entryType != ScreenTxID && entryType != ScreenVaultRef {
		return domainerr.New("INVALID_REQUEST", "screening entry type must be ACCOUNT, TXID or VAULT_REF",
			map[string]any{"entry_type": entryType})
	}
	if value == "" || reason == "" {
		return domainerr.New("MISSING_FIELD", "screening entry needs a value and a reason", map[string]any{"entry_type": entryType})
	}
	return a.db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO AdapterScreening (entry_type, value, reason, added_at)
			VALUES (?, ?, ?, ?) ON CONFLICT (entry_type, value) DO UPDATE SET reason = excluded.reason, added_at = excluded.added_at`, entryType, value, reason, a.now())
		if err != nil {
			return fmt.Errorf("adapter: add screening entry: %w", err)
		}
		return nil
	})
}

func (a *Adapter) audit(ctx context.Context, tx *store.Tx, event, txid, requestID, payload string) error {
	var p any
	if payload != "" {
		p = payload
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO AdapterAuditLog (event, txid, request_id, payload_json, occurred_at)
		VALUES (?, ?, ?, ?, ?)`, event, txid, requestID, p, a.now())
	if err != nil {
		return fmt.Errorf("adapter: audit %s: %w", event, err)
	}
	return nil
}
