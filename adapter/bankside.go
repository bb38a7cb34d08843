package adapter

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox"
)

// The bank-side APIs' operations (spec 004 Bank 顧客API / 行員API,
// docs/bank-api.md): what a bank's customers and tellers see and do,
// acting on the core only as ZC's commands do — postings through the
// outbox (claim-then-apply, exactly once), balances by inquiry over the
// core link — so the shadow ledger and the end-of-day reconciliation see a
// teller's cash posting as in-band, never as drift.

// MaxAmountValue is MAX_AMOUNT_VALUE (spec 004: 1 trillion), the input
// bound of a teller's cash amount.
const MaxAmountValue = 1_000_000_000_000

// AccountView is one account as the customer and teller APIs show it:
// the bank's account number (account_id), the hash ZC uses, and the
// shadow ledger's balances.
type AccountView struct {
	AccountID   string `json:"account_id"`
	AccountHash string `json:"account_hash"`
	HolderName  string `json:"holder_name"`
	// Status is NORMAL, FROZEN, CLOSING_HOLD or CLOSED (spec 004).
	Status string `json:"status"`
	// Balance is the last known core balance (shadow); Available what can
	// be spent now (less holds and pending debits).
	Balance   int64  `json:"balance"`
	Available int64  `json:"available"`
	Currency  string `json:"currency"`
}

// Balance is GET .../accounts/{account_id}/balance (spec 004: account_id,
// balance, currency, as_of). Source says where the balance comes from:
// CORE (asked now over the core link) or SHADOW (the core did not answer;
// the shadow ledger's last known core balance).
type Balance struct {
	AccountID string `json:"account_id"`
	Balance   int64  `json:"balance"`
	Available int64  `json:"available"`
	Currency  string `json:"currency"`
	AsOf      string `json:"as_of"`
	Source    string `json:"source"`
}

// Balance sources.
const (
	SourceCore   = "CORE"
	SourceShadow = "SHADOW"
)

// Journal is one posting on an account as the adapter queued it, with
// its status at the core (the outbox's): a transfer's debit or credit, a
// reversal, or a teller's cash posting.
type Journal struct {
	JournalID  string `json:"journal_id"` // the posting reference
	TxID       string `json:"txid"`
	AccountID  string `json:"account_id"`
	Kind       string `json:"kind"`
	Direction  int    `json:"direction"` // +1 credit, -1 debit
	Amount     int64  `json:"amount"`
	Currency   string `json:"currency"`
	Status     string `json:"status"` // the outbox status: PENDING .. APPLIED
	ReversalOf string `json:"reversal_of,omitempty"`
	CreatedAt  string `json:"created_at"`
	AppliedAt  string `json:"applied_at,omitempty"`
}

// CashRequest is the body of POST .../teller/cash/deposit and
// .../withdrawal. IdempotencyKey makes a repeated request answer the
// first posting (required: a teller's retry must not pay out twice).
type CashRequest struct {
	AccountID      string `json:"account_id"`
	Amount         int64  `json:"amount"`
	Currency       string `json:"currency,omitempty"`
	IdempotencyKey string `json:"idempotency_key"`
	Memo           string `json:"memo,omitempty"`
}

// CashResponse answers a cash posting: the journal queued for the core
// and the account's projected balance once it is applied.
type CashResponse struct {
	Journal          Journal `json:"journal"`
	ProjectedBalance int64   `json:"projected_balance"`
}

// CashPrefix starts the txid of a teller's cash posting (no ZC transfer).
const CashPrefix = "CASH-"

// LinkCustomer lets customerID see an account (given by its number) on the
// customer API. Linking twice is a no-op.
func (a *Adapter) LinkCustomer(ctx context.Context, customerID, accountID string) error {
	if customerID == "" || accountID == "" {
		return domainerr.New("MISSING_FIELD", "a customer link needs customer_id and account_id",
			map[string]any{"customer_id": customerID, "account_id": accountID})
	}
	return a.db.Write(ctx, func(tx *store.Tx) error {
		hash, err := accountByIDTx(ctx, tx, accountID)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO AdapterCustomerAccounts (customer_id, account_hash, created_at) VALUES (?, ?, ?)
			ON CONFLICT (customer_id, account_hash) DO NOTHING`, customerID, hash, a.now())
		if err != nil {
			return fmt.Errorf("adapter: link customer: %w", err)
		}
		return nil
	})
}

// holdsTx reports whether customerID holds the account hash.
func (a *Adapter) holdsTx(ctx context.Context, tx *store.Tx, customerID, hash string) (bool, error) {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM AdapterCustomerAccounts WHERE customer_id = ? AND account_hash = ?`,
		customerID, hash).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("adapter: read customer link: %w", err)
	}
	return n > 0, nil
}

// customerAccountTx resolves an account number a customer names: another
// customer's account is ACCOUNT_NOT_FOUND, exactly like a missing one.
func (a *Adapter) customerAccountTx(ctx context.Context, tx *store.Tx, customerID, accountID string) (string, error) {
	hash, err := accountByIDTx(ctx, tx, accountID)
	if err != nil {
		return "", err
	}
	ok, err := a.holdsTx(ctx, tx, customerID, hash)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", domainerr.New("ACCOUNT_NOT_FOUND", "no account with this account_id at this bank", map[string]any{"account_id": accountID})
	}
	return hash, nil
}

// CustomerAccountHashes returns the account hashes customerID holds.
func (a *Adapter) CustomerAccountHashes(ctx context.Context, customerID string) ([]string, error) {
	var out []string
	err := a.db.Read(ctx, func(tx *store.Tx) (err error) {
		out, err = queryStrings(ctx, tx, `SELECT account_hash FROM AdapterCustomerAccounts WHERE customer_id = ? ORDER BY account_hash`, customerID)
		return err
	})
	if out == nil {
		out = []string{}
	}
	return out, err
}

func (a *Adapter) view(s Shadow) AccountView {
	return AccountView{AccountID: s.CoreAccount, AccountHash: s.Hash, HolderName: s.HolderName, Status: statusView(s),
		Balance: s.CoreBalance, Available: s.Available, Currency: a.accountCurrency(s)}
}

// Accounts lists the accounts of customerID, or every account of the bank
// when customerID is "" (the teller's list).
func (a *Adapter) Accounts(ctx context.Context, customerID string) ([]AccountView, error) {
	out := []AccountView{}
	err := a.db.Read(ctx, func(tx *store.Tx) error {
		var hashes []string
		var err error
		if customerID == "" {
			hashes, err = accountHashes(ctx, tx)
		} else {
			hashes, err = queryStrings(ctx, tx, `SELECT account_hash FROM AdapterCustomerAccounts WHERE customer_id = ? ORDER BY account_hash`, customerID)
		}
		if err != nil {
			return fmt.Errorf("adapter: list accounts: %w", err)
		}
		for _, h := range hashes {
			s, err := readShadow(ctx, tx, h)
			if err != nil {
				return err
			}
			out = append(out, a.view(s))
		}
		return nil
	})
	return out, err
}

// AccountBalance answers the balance of an account (customerID "" for a
// teller): the core is asked over the core link; when it does not answer
// (offline, batch window) the shadow's last known core balance is given
// with source SHADOW.
func (a *Adapter) AccountBalance(ctx context.Context, customerID, accountID string) (Balance, error) {
	var s Shadow
	err := a.db.Read(ctx, func(tx *store.Tx) error {
		hash, err := a.resolveTx(ctx, tx, customerID, accountID)
		if err != nil {
			return err
		}
		s, err = readShadow(ctx, tx, hash)
		return err
	})
	if err != nil {
		return Balance{}, err
	}
	out := Balance{AccountID: accountID, Balance: s.CoreBalance, Available: s.Available, Currency: a.accountCurrency(s), AsOf: a.now(), Source: SourceShadow}
	if a.inq != nil {
		ictx, cancel := context.WithTimeout(ctx, a.inqWait)
		bal, err := a.inq.Balance(ictx, s.CoreAccount)
		cancel()
		if err == nil && bal.Currency != "" && bal.Currency != out.Currency {
			err = domainerr.New("INVALID_CURRENCY", "the core reports the account in "+bal.Currency+", registered in "+out.Currency,
				map[string]any{"core_currency": bal.Currency, "currency": out.Currency, "account_hash": s.Hash})
		}
		if err == nil {
			out.Balance, out.Source = bal.Ledger, SourceCore
		} else {
			a.log.WarnContext(ctx, "adapter.balance_from_shadow", "account_hash", s.Hash, "error", err)
		}
	}
	return out, nil
}

func (a *Adapter) resolveTx(ctx context.Context, tx *store.Tx, customerID, accountID string) (string, error) {
	if customerID == "" {
		return accountByIDTx(ctx, tx, accountID)
	}
	return a.customerAccountTx(ctx, tx, customerID, accountID)
}

const journalCols = `p.ref, p.txid, a.core_account, p.kind, p.direction, p.amount, o.status, COALESCE(p.reversal_of, ''),
	p.created_at, COALESCE(o.applied_at, '')`

// Journals lists postings newest first: of one account (accountID, as seen
// by customerID when set) or of the whole bank (accountID ""), of one txid
// when txid is set; at most limit (1..1000, default 100).
func (a *Adapter) Journals(ctx context.Context, customerID, accountID, txid string, limit int) ([]Journal, error) {
	if limit <= 0 {
		limit = 100
	}
	if limit > 1000 {
		return nil, domainerr.New("INVALID_REQUEST", "limit must be 1..1000", map[string]any{"field": "limit", "limit": limit})
	}
	out := []Journal{}
	err := a.db.Read(ctx, func(tx *store.Tx) error {
		hash := ""
		if accountID != "" {
			var err error
			if hash, err = a.resolveTx(ctx, tx, customerID, accountID); err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+journalCols+` FROM AdapterPostings p
			JOIN AdapterOutbox o ON o.id = p.outbox_id JOIN AdapterAccounts a ON a.account_hash = p.account_hash
			WHERE (? = '' OR p.account_hash = ?) AND (? = '' OR p.txid = ?)
			ORDER BY p.created_at DESC, p.ref DESC LIMIT ?`, hash, hash, txid, txid, limit)
		if err != nil {
			return fmt.Errorf("adapter: list journals: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var j Journal
			if err := rows.Scan(&j.JournalID, &j.TxID, &j.AccountID, &j.Kind, &j.Direction, &j.Amount, &j.Status, &j.ReversalOf,
				&j.CreatedAt, &j.AppliedAt); err != nil {
				return err
			}
			j.Currency = a.currency
			out = append(out, j)
		}
		return rows.Err()
	})
	return out, err
}

// Cash posts a teller's cash deposit (direction +1) or withdrawal (-1) to
// the core through the outbox, exactly once per idempotency_key (the
// adapter's idempotency table, key "TELLER:{key}"): the same key and body
// answer the first journal, another body IDEMPOTENCY_KEY_CONFLICT. A
// withdrawal needs the shadow's available balance; a frozen account takes
// neither.
func (a *Adapter) Cash(ctx context.Context, req CashRequest, direction int, tellerID string) (CashResponse, error) {
	kind, cmd := outbox.Credit, "teller-cash-deposit"
	if direction < 0 {
		kind, cmd = outbox.Debit, "teller-cash-withdrawal"
	}
	switch {
	case req.AccountID == "":
		return CashResponse{}, domainerr.New("MISSING_FIELD", "account_id is required", map[string]any{"field": "account_id"})
	case req.IdempotencyKey == "":
		return CashResponse{}, domainerr.New("MISSING_FIELD", "idempotency_key is required", map[string]any{"field": "idempotency_key"})
	case req.Amount <= 0 || req.Amount > MaxAmountValue:
		return CashResponse{}, domainerr.New("INVALID_AMOUNT", fmt.Sprintf("amount must be 1..%d", int64(MaxAmountValue)),
			map[string]any{"field": "amount", "amount": req.Amount})
	case req.Currency != "" && req.Currency != a.currency:
		return CashResponse{}, domainerr.New("INVALID_CURRENCY", "this core keeps "+a.currency+" only",
			map[string]any{"field": "currency", "currency": req.Currency})
	}
	return once(ctx, a, cmd, "TELLER:"+req.IdempotencyKey, req, func(tx *store.Tx) (CashResponse, error) {
		if err := a.requireBank(ctx, tx); err != nil {
			return CashResponse{}, err
		}
		hash, err := accountByIDTx(ctx, tx, req.AccountID)
		if err != nil {
			return CashResponse{}, err
		}
		s, err := readShadow(ctx, tx, hash)
		if err != nil {
			return CashResponse{}, err
		}
		if s.Status == AccountFrozen {
			return CashResponse{}, domainerr.New("ACCOUNT_FROZEN", "the account is frozen", map[string]any{"account_id": req.AccountID})
		}
		if direction < 0 && s.Available < req.Amount {
			return CashResponse{}, domainerr.New("RESERVE_FAILED", "insufficient available balance",
				map[string]any{"reason": "INSUFFICIENT_FUNDS", "account_id": req.AccountID, "requested": req.Amount, "available": s.Available})
		}
		txid := CashPrefix + newRef()
		ref, err := a.queuePosting(ctx, tx, s, txid, "TELLER:"+req.IdempotencyKey, "", kind, direction, req.Amount, "")
		if err != nil {
			return CashResponse{}, err
		}
		payload, _ := json.Marshal(map[string]any{"teller_id": tellerID, "account_id": req.AccountID, "amount": req.Amount,
			"direction": direction, "journal_id": ref, "memo": req.Memo})
		if err := a.audit(ctx, tx, "TELLER_CASH", txid, "TELLER:"+req.IdempotencyKey, string(payload)); err != nil {
			return CashResponse{}, err
		}
		now := a.now()
		return CashResponse{Journal: Journal{JournalID: ref, TxID: txid, AccountID: req.AccountID, Kind: string(kind), Direction: direction,
			Amount: req.Amount, Currency: a.currency, Status: string(outbox.Pending), CreatedAt: now},
			ProjectedBalance: s.Projected + int64(direction)*req.Amount}, nil
	})
}

// SetAccountStatusByID is PATCH .../teller/accounts/{account_id}/status
// (spec 004: NORMAL/FROZEN/CLOSING_HOLD/CLOSED). FROZEN and NORMAL on an
// open account are the bank's freeze, kept by the adapter; CLOSING_HOLD,
// CLOSED and NORMAL on an account on closing hold are the core's account
// lifecycle, asked of the core over the core link (setLifecycle).
func (a *Adapter) SetAccountStatusByID(ctx context.Context, accountID, status, tellerID string) (AccountView, error) {
	switch status {
	case StatusNormal, AccountActive, StatusFrozen, StatusClosingHold, StatusClosed:
	default:
		return AccountView{}, domainerr.New("INVALID_STATE", "status must be NORMAL, FROZEN, CLOSING_HOLD or CLOSED",
			map[string]any{"field": "status", "status": status})
	}
	var s Shadow
	if err := a.db.Read(ctx, func(tx *store.Tx) error {
		hash, err := accountByIDTx(ctx, tx, accountID)
		if err != nil {
			return err
		}
		s, err = readShadow(ctx, tx, hash)
		return err
	}); err != nil {
		return AccountView{}, err
	}
	var err error
	switch {
	case status == StatusClosingHold:
		s, err = a.setLifecycle(ctx, s.Hash, opHold, tellerID)
	case status == StatusClosed:
		s, err = a.setLifecycle(ctx, s.Hash, opClose, tellerID)
	case s.Lifecycle == LifecycleClosingHold && status != StatusFrozen:
		s, err = a.setLifecycle(ctx, s.Hash, opLift, tellerID)
	case s.Lifecycle != LifecycleOpen:
		err = domainerr.New("STATE_GUARD", "the account is "+s.Lifecycle+": it cannot be frozen or unfrozen",
			map[string]any{"account_id": accountID, "account_status": s.Lifecycle, "requested": status})
	default:
		freeze := AccountActive
		if status == StatusFrozen {
			freeze = AccountFrozen
		}
		if err = a.SetAccountStatus(ctx, s.Hash, freeze); err == nil {
			err = a.db.Write(ctx, func(tx *store.Tx) error {
				return a.audit(ctx, tx, "ACCOUNT_STATUS", "", "", fmt.Sprintf(`{"account_id":%q,"status":%q,"teller_id":%q}`, accountID, freeze, tellerID))
			})
		}
		if err == nil {
			s, err = a.Shadow(ctx, s.Hash)
		}
	}
	if err != nil {
		return AccountView{}, err
	}
	return a.view(s), nil
}

// AuditEntry is one AdapterAuditLog row.
type AuditEntry struct {
	ID         int64           `json:"id"`
	Event      string          `json:"event"`
	TxID       string          `json:"txid,omitempty"`
	RequestID  string          `json:"request_id,omitempty"`
	Payload    json.RawMessage `json:"payload,omitempty"`
	OccurredAt string          `json:"occurred_at"`
}

// AuditLog lists the bank side's audit trail newest first (of one txid
// when set), at most limit (1..1000, default 100).
func (a *Adapter) AuditLog(ctx context.Context, txid string, limit int) ([]AuditEntry, error) {
	if limit <= 0 {
		limit = 100
	}
	if limit > 1000 {
		return nil, domainerr.New("INVALID_REQUEST", "limit must be 1..1000", map[string]any{"field": "limit", "limit": limit})
	}
	out := []AuditEntry{}
	err := a.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, event, COALESCE(txid, ''), COALESCE(request_id, ''), COALESCE(payload_json, ''), occurred_at
			FROM AdapterAuditLog WHERE (? = '' OR txid = ?) ORDER BY id DESC LIMIT ?`, txid, txid, limit)
		if err != nil {
			return fmt.Errorf("adapter: read audit log: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var e AuditEntry
			var p string
			if err := rows.Scan(&e.ID, &e.Event, &e.TxID, &e.RequestID, &p, &e.OccurredAt); err != nil {
				return err
			}
			if p != "" && json.Valid([]byte(p)) {
				e.Payload = json.RawMessage(p)
			}
			out = append(out, e)
		}
		return rows.Err()
	})
	return out, err
}

// BatchStatus is GET .../teller/batch/status: the core's batch windows,
// whether one is open now, the outbox by status, and the reconciliation
// drifts still open.
type BatchStatus struct {
	BankID          string         `json:"bank_id"`
	RealTime        bool           `json:"real_time"`
	BatchWindowOpen bool           `json:"batch_window_open"`
	BatchWindows    []WindowView   `json:"batch_windows"`
	Outbox          map[string]int `json:"outbox"`
	OpenDrifts      int            `json:"open_drifts"`
	AsOf            string         `json:"as_of"`
}

// WindowView is a batch window as HH:MM JST.
type WindowView struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// BatchStatus reads the batch status.
func (a *Adapter) BatchStatus(ctx context.Context) (BatchStatus, error) {
	out := BatchStatus{BankID: a.bank, RealTime: a.realTime, BatchWindowOpen: a.inBatchWindow(), BatchWindows: []WindowView{},
		Outbox: map[string]int{}, AsOf: a.now()}
	for _, w := range a.windows {
		out.BatchWindows = append(out.BatchWindows, WindowView{From: fmt.Sprintf("%02d:%02d", w.From/60, w.From%60),
			To: fmt.Sprintf("%02d:%02d", w.To/60, w.To%60)})
	}
	err := a.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT status, COUNT(*) FROM AdapterOutbox WHERE bank = ? GROUP BY status`, a.bank)
		if err != nil {
			return fmt.Errorf("adapter: outbox status: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var st string
			var n int
			if err := rows.Scan(&st, &n); err != nil {
				return err
			}
			out.Outbox[st] = n
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM AdapterReconDrift WHERE bank_id = ? AND status = 'OPEN'`, a.bank).Scan(&out.OpenDrifts)
	})
	return out, err
}

// SuspenseItem is a credit kept in the custody (別段預金) account and, once
// a teller resolved it, where it went.
type SuspenseItem struct {
	Journal
	// ResolvedTo is the account the credit was moved to ("" while it
	// waits); ResolutionTxID the txid of the two postings that moved it.
	ResolvedTo     string `json:"resolved_to,omitempty"`
	ResolutionTxID string `json:"resolution_txid,omitempty"`
}

// SuspensePrefix starts the txid of a suspense resolution's two postings,
// followed by the custody credit's journal id.
const SuspensePrefix = "SUSP-"

// SuspenseResolveRequest is the body of POST
// .../teller/suspense/{suspense_id}/resolve.
type SuspenseResolveRequest struct {
	AccountID string `json:"account_id"`
	Memo      string `json:"memo,omitempty"`
}

// SuspenseResolution answers a resolve: the debit of the custody account
// and the credit of the account, queued for the core together.
type SuspenseResolution struct {
	SuspenseID string  `json:"suspense_id"`
	TxID       string  `json:"txid"`
	Debit      Journal `json:"debit"`
	Credit     Journal `json:"credit"`
}

// Suspense lists the credits kept in the bank's custody account (credits
// for accounts the bank no longer holds), newest first, with their
// resolution.
func (a *Adapter) Suspense(ctx context.Context) ([]SuspenseItem, error) {
	out := []SuspenseItem{}
	if a.custody == "" {
		return out, nil
	}
	err := a.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+journalCols+`, COALESCE(r.core_account, ''), COALESCE(c.txid, '')
			FROM AdapterPostings p JOIN AdapterOutbox o ON o.id = p.outbox_id JOIN AdapterAccounts a ON a.account_hash = p.account_hash
			LEFT JOIN AdapterPostings c ON c.txid = '`+SuspensePrefix+`' || p.ref AND c.kind = 'CREDIT'
			LEFT JOIN AdapterAccounts r ON r.account_hash = c.account_hash
			WHERE p.account_hash = ? AND p.kind = 'CREDIT' AND p.txid NOT LIKE '`+SuspensePrefix+`%'
			ORDER BY p.created_at DESC, p.ref DESC`, a.custody)
		if err != nil {
			return fmt.Errorf("adapter: list suspense: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var it SuspenseItem
			j := &it.Journal
			if err := rows.Scan(&j.JournalID, &j.TxID, &j.AccountID, &j.Kind, &j.Direction, &j.Amount, &j.Status, &j.ReversalOf,
				&j.CreatedAt, &j.AppliedAt, &it.ResolvedTo, &it.ResolutionTxID); err != nil {
				return err
			}
			j.Currency = a.currency
			out = append(out, it)
		}
		return rows.Err()
	})
	return out, err
}

// ResolveSuspense moves a credit kept in the custody account to an
// account of the bank (the payee reopened, or the right account was
// found): a DEBIT of the custody account and a CREDIT of the account,
// queued together in the outbox (txid SUSP-{suspense_id}), exactly once
// per suspense credit (the adapter's idempotency table, key
// SUSPENSE:{suspense_id}: the same body answers the first resolution,
// another account IDEMPOTENCY_KEY_CONFLICT). The credit must be APPLIED at
// the core (STATE_GUARD otherwise) and the account ACTIVE.
func (a *Adapter) ResolveSuspense(ctx context.Context, suspenseID string, req SuspenseResolveRequest, tellerID string) (SuspenseResolution, error) {
	if req.AccountID == "" {
		return SuspenseResolution{}, domainerr.New("MISSING_FIELD", "account_id is required", map[string]any{"field": "account_id"})
	}
	if a.custody == "" {
		return SuspenseResolution{}, domainerr.New("NOT_FOUND", "this bank keeps no custody account", map[string]any{"suspense_id": suspenseID})
	}
	return once(ctx, a, "teller-suspense-resolve", "SUSPENSE:"+suspenseID, req, func(tx *store.Tx) (SuspenseResolution, error) {
		var amount int64
		var status, txid string
		err := tx.QueryRowContext(ctx, `SELECT p.amount, o.status, p.txid FROM AdapterPostings p JOIN AdapterOutbox o ON o.id = p.outbox_id
			WHERE p.ref = ? AND p.account_hash = ? AND p.kind = 'CREDIT'`, suspenseID, a.custody).Scan(&amount, &status, &txid)
		if errors.Is(err, sql.ErrNoRows) || strings.HasPrefix(txid, SuspensePrefix) {
			return SuspenseResolution{}, domainerr.New("NOT_FOUND", "no credit with this suspense_id in the custody account", map[string]any{"suspense_id": suspenseID})
		}
		if err != nil {
			return SuspenseResolution{}, fmt.Errorf("adapter: read suspense %s: %w", suspenseID, err)
		}
		if status != string(outbox.Applied) {
			return SuspenseResolution{}, domainerr.New("STATE_GUARD", "the custody credit is not applied at the core yet",
				map[string]any{"suspense_id": suspenseID, "status": status})
		}
		hash, err := accountByIDTx(ctx, tx, req.AccountID)
		if err != nil {
			return SuspenseResolution{}, err
		}
		if hash == a.custody {
			return SuspenseResolution{}, domainerr.New("INVALID_REQUEST", "the target is the custody account itself", map[string]any{"field": "account_id"})
		}
		target, err := readShadow(ctx, tx, hash)
		if err != nil {
			return SuspenseResolution{}, err
		}
		if target.Status != AccountActive {
			return SuspenseResolution{}, domainerr.New("ACCOUNT_FROZEN", "the target account is frozen", map[string]any{"account_id": req.AccountID})
		}
		custody, err := readShadow(ctx, tx, a.custody)
		if err != nil {
			return SuspenseResolution{}, err
		}
		if custody.Available < amount {
			return SuspenseResolution{}, domainerr.New("STATE_GUARD", "the custody account's available balance does not cover the credit",
				map[string]any{"suspense_id": suspenseID, "available": custody.Available, "amount": amount})
		}
		rtx := SuspensePrefix + suspenseID
		rid := "SUSPENSE:" + suspenseID
		dref, err := a.queuePosting(ctx, tx, custody, rtx, rid, "", outbox.Debit, -1, amount, "")
		if err != nil {
			return SuspenseResolution{}, err
		}
		cref, err := a.queuePosting(ctx, tx, target, rtx, rid, "", outbox.Credit, 1, amount, "")
		if err != nil {
			return SuspenseResolution{}, err
		}
		payload, _ := json.Marshal(map[string]any{"suspense_id": suspenseID, "original_txid": txid, "account_id": req.AccountID,
			"amount": amount, "teller_id": tellerID, "memo": req.Memo})
		if err := a.audit(ctx, tx, "SUSPENSE_RESOLVED", rtx, rid, string(payload)); err != nil {
			return SuspenseResolution{}, err
		}
		now := a.now()
		j := func(ref, acct, kind string, dir int) Journal {
			return Journal{JournalID: ref, TxID: rtx, AccountID: acct, Kind: kind, Direction: dir, Amount: amount, Currency: a.currency,
				Status: string(outbox.Pending), CreatedAt: now}
		}
		return SuspenseResolution{SuspenseID: suspenseID, TxID: rtx, Debit: j(dref, custody.CoreAccount, string(outbox.Debit), -1),
			Credit: j(cref, req.AccountID, string(outbox.Credit), 1)}, nil
	})
}
