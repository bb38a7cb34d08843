package adapter

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zcgw/zcgw/adapter/corelink"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/zclog"
	"github.com/zcgw/zcgw/formats/coreacct"
	"github.com/zcgw/zcgw/outbox"
)

// The account lifecycle of the teller API (spec 004 行員API: POST
// .../teller/accounts, .../accounts/batch, PATCH .../status with
// NORMAL/FROZEN/CLOSING_HOLD/CLOSED; docs/bank-api.md). The core keeps
// the lifecycle; the adapter asks for each change over the core link
// (coremsg ACMQ) and keeps its own side in AdapterAccounts.lifecycle so
// that its commands refuse what the core would refuse before anything is
// queued.
//
// Exactly once at the core: every action is recorded PENDING in
// AdapterAccountOps in the same transaction as the adapter's side of the
// change (the claim), then sent; a lost answer leaves it PENDING and the
// teller's retry sends it again. Unlike a posting, a lifecycle action
// assigns a state (open this number for this holder; put on hold; lift;
// close), so the core answers a repeat with "already so" (ACMR D) and
// nothing happens twice: no inquiry by reference is needed.

// Account lifecycles (AdapterAccounts.lifecycle).
const (
	LifecycleOpen        = "OPEN"
	LifecycleClosingHold = "CLOSING_HOLD"
	LifecycleClosed      = "CLOSED"
)

// The statuses PATCH .../teller/accounts/{account_id}/status takes and the
// account views show (spec 004).
const (
	StatusNormal      = "NORMAL"
	StatusFrozen      = "FROZEN"
	StatusClosingHold = "CLOSING_HOLD"
	StatusClosed      = "CLOSED"
)

// CauseAccountClosed is details.cause of the STATE_GUARD refusing a
// posting the account's lifecycle does not take: the spec's reason for a
// closed account (custody_detail.reason_code ACCOUNT_CLOSED), also given
// for one on closing hold (details.account_status says which).
const CauseAccountClosed = "ACCOUNT_CLOSED"

// AccountCore performs account lifecycle actions at the core (the core
// link, corelink.Link). nil in Config: the teller API's account creation
// and closing answer BANK_ERROR.
type AccountCore interface {
	MaintainAccount(ctx context.Context, ref, action, account, name string) (corelink.MaintResult, error)
}

// Lifecycle actions as AdapterAccountOps records them, and their ACMQ
// action codes.
const (
	opOpen  = "OPEN"
	opHold  = "HOLD"
	opLift  = "LIFT"
	opClose = "CLOSE"
)

var opCodes = map[string]string{opOpen: corelink.MaintOpen, opHold: corelink.MaintHold, opLift: corelink.MaintLift, opClose: corelink.MaintClose}

// Account op statuses.
const (
	opPending = "PENDING"
	opApplied = "APPLIED"
	opRefused = "REFUSED"
)

// newOpRef is a fresh lifecycle action reference: "A" and 15 base32
// characters, like a posting reference (it fits ACMQ's 受付参照番号 X(32)).
func newOpRef() string { return "A" + newRef()[1:] }

// statusView is the spec's status of an account: its lifecycle when not
// OPEN, else NORMAL or FROZEN.
func statusView(s Shadow) string {
	switch {
	case s.Lifecycle == LifecycleClosingHold || s.Lifecycle == LifecycleClosed:
		return s.Lifecycle
	case s.Status == AccountFrozen:
		return StatusFrozen
	}
	return StatusNormal
}

// lifecycleView is a lifecycle state under the name the teller API shows
// and takes (an open account is NORMAL there).
func lifecycleView(l string) string {
	if l == LifecycleOpen {
		return StatusNormal
	}
	return l
}

// lifecycleRefusal is the STATE_GUARD of a posting the account's
// lifecycle refuses.
func lifecycleRefusal(s Shadow, what string) error {
	state := map[string]string{LifecycleClosingHold: "on closing hold", LifecycleClosed: "closed"}[s.Lifecycle]
	return domainerr.New("STATE_GUARD", "the account is "+state+": it takes no "+what,
		map[string]any{"cause": CauseAccountClosed, "account_status": s.Lifecycle, "account_id": s.CoreAccount})
}

// guardLifecycleTx is the guarded write every posting makes on its
// account before it is queued (queueLanePosting): a credit needs an OPEN
// account, a debit or reversal one not CLOSED. The UPDATE touches the
// account row, so a posting and a lifecycle change of the same account
// are serialized (the close's CAS sees the posting, or the posting sees
// the close) on SQLite and PostgreSQL alike.
func guardLifecycleTx(ctx context.Context, tx *store.Tx, s Shadow, kind outbox.Kind) error {
	allowed := `lifecycle IN ('OPEN','CLOSING_HOLD')`
	what := "debit"
	if kind == outbox.Credit {
		allowed, what = `lifecycle = 'OPEN'`, "credit"
	}
	res, err := tx.ExecContext(ctx, `UPDATE AdapterAccounts SET lifecycle = lifecycle WHERE account_hash = ? AND `+allowed, s.Hash)
	if err != nil {
		return fmt.Errorf("adapter: guard account %s: %w", s.Hash, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	var now string
	if err := tx.QueryRowContext(ctx, `SELECT lifecycle FROM AdapterAccounts WHERE account_hash = ?`, s.Hash).Scan(&now); err != nil {
		return fmt.Errorf("adapter: read account %s: %w", s.Hash, err)
	}
	s.Lifecycle = now
	return lifecycleRefusal(s, what)
}

// CreateAccountRequest is the body of POST .../teller/accounts (and one
// item of .../accounts/batch).
type CreateAccountRequest struct {
	// IdempotencyKey: one account per key (required: a teller's retry
	// must not open two accounts).
	IdempotencyKey string `json:"idempotency_key"`
	// HolderName is the holder's name (kana, as the core keeps it).
	HolderName string `json:"holder_name"`
	// AccountID is the account number to open (BBB-T-NNNNNNN); empty: the
	// next free number of Branch and AccountType.
	AccountID   string `json:"account_id,omitempty"`
	Branch      string `json:"branch,omitempty"`       // default "100"
	AccountType uint8  `json:"account_type,omitempty"` // default 1 (普通)
	// AccountHash is the hash ZC will know the account by; empty: derived
	// from the bank and the account number.
	AccountHash string `json:"account_hash,omitempty"`
	// CustomerID links the account to a customer of the customer API.
	CustomerID string `json:"customer_id,omitempty"`
	// InitialDeposit (0..MAX_AMOUNT_VALUE) is queued as a cash deposit
	// once the core opened the account.
	InitialDeposit int64 `json:"initial_deposit,omitempty"`
}

// CreateAccountResponse answers an account creation.
type CreateAccountResponse struct {
	Account AccountView `json:"account"`
	// OpRef is the lifecycle action at the core (ACMQ reference).
	OpRef string `json:"op_ref"`
	// InitialDeposit is the deposit's journal when one was asked for.
	InitialDeposit *Journal `json:"initial_deposit,omitempty"`
}

// BatchAccountsRequest is the body of POST .../teller/accounts/batch.
type BatchAccountsRequest struct {
	Accounts []CreateAccountRequest `json:"accounts"`
}

// BatchAccountResult is one item's outcome: its account, or the catalog
// error that refused it. The items are independent.
type BatchAccountResult struct {
	Index   int                    `json:"index"`
	Created *CreateAccountResponse `json:"created,omitempty"`
	Error   *domainerr.Body        `json:"error,omitempty"`
}

// BatchAccountsResponse lists every item's outcome, in request order.
type BatchAccountsResponse struct {
	Results []BatchAccountResult `json:"results"`
	Created int                  `json:"created"`
	Failed  int                  `json:"failed"`
}

// MaxBatchAccounts bounds one batch.
const MaxBatchAccounts = 500

// DeriveAccountHash is the account hash of an account opened without one:
// "h:" and 32 hex digits of SHA-256 over the bank and the account number.
func DeriveAccountHash(bank, account string) string {
	sum := sha256.Sum256([]byte("zcgw-account:" + bank + ":" + account))
	return "h:" + hex.EncodeToString(sum[:16])
}

func (a *Adapter) validateCreate(req *CreateAccountRequest) error {
	bad := func(code, field, why string) error { return domainerr.New(code, why, map[string]any{"field": field}) }
	switch {
	case req.IdempotencyKey == "":
		return bad("MISSING_FIELD", "idempotency_key", "idempotency_key is required")
	case strings.TrimSpace(req.HolderName) == "":
		return bad("MISSING_FIELD", "holder_name", "holder_name is required")
	case req.InitialDeposit < 0 || req.InitialDeposit > MaxAmountValue:
		return bad("INVALID_AMOUNT", "initial_deposit", fmt.Sprintf("initial_deposit must be 0..%d", int64(MaxAmountValue)))
	}
	if req.AccountID != "" {
		if req.Branch != "" || req.AccountType != 0 {
			return bad("INVALID_REQUEST", "account_id", "give account_id, or branch and account_type, not both")
		}
		if _, err := coreacct.Parse(req.AccountID); err != nil {
			return bad("INVALID_REQUEST", "account_id", err.Error())
		}
		return nil
	}
	if req.Branch == "" {
		req.Branch = "100"
	}
	if req.AccountType == 0 {
		req.AccountType = 1
	}
	if len(req.Branch) != 3 || strings.Trim(req.Branch, "0123456789") != "" {
		return bad("INVALID_REQUEST", "branch", "branch must be 3 digits")
	}
	if _, err := coreacct.Parse(coreacct.Format(req.Branch, req.AccountType, "0000001")); err != nil {
		return bad("INVALID_REQUEST", "account_type", err.Error())
	}
	return nil
}

// nextAccountTx allocates the next account number of branch and type:
// one above the highest the adapter knows or has asked the core for.
func nextAccountTx(ctx context.Context, tx *store.Tx, branch string, typ uint8) (string, error) {
	prefix := coreacct.Format(branch, typ, "0000000")
	prefix = prefix[:len(prefix)-7]
	nums, err := queryStrings(ctx, tx, `SELECT core_account FROM AdapterAccounts WHERE core_account LIKE ?
		UNION SELECT core_account FROM AdapterAccountOps WHERE action = 'OPEN' AND core_account LIKE ?`, prefix+"%", prefix+"%")
	if err != nil {
		return "", fmt.Errorf("adapter: allocate account number: %w", err)
	}
	hi := 0
	for _, n := range nums {
		if v, err := strconv.Atoi(n[len(prefix):]); err == nil && v > hi {
			hi = v
		}
	}
	if hi >= 9_999_999 {
		return "", domainerr.New("STATE_GUARD", "no account number left in this branch and type", map[string]any{"branch": branch})
	}
	return coreacct.Format(branch, typ, fmt.Sprintf("%07d", hi+1)), nil
}

type accountOp struct {
	ref, key, hash, account, action, status, reason, coreReason, request string
}

func readOpTx(ctx context.Context, tx *store.Tx, where string, arg any) (accountOp, bool, error) {
	var o accountOp
	var key sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT op_ref, idempotency_key, account_hash, core_account, action, status, request_json,
		COALESCE(reason_code, ''), COALESCE(core_reason, '') FROM AdapterAccountOps WHERE `+where, arg).
		Scan(&o.ref, &key, &o.hash, &o.account, &o.action, &o.status, &o.request, &o.reason, &o.coreReason)
	if errors.Is(err, sql.ErrNoRows) {
		return o, false, nil
	}
	if err != nil {
		return o, false, fmt.Errorf("adapter: read account op: %w", err)
	}
	o.key = key.String
	return o, true, nil
}

func (a *Adapter) insertOpTx(ctx context.Context, tx *store.Tx, o accountOp, by string) error {
	now := a.now()
	_, err := tx.ExecContext(ctx, `INSERT INTO AdapterAccountOps (op_ref, idempotency_key, account_hash, core_account, action, status,
		request_json, requested_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'PENDING', ?, ?, ?, ?)`,
		o.ref, nullable(o.key), o.hash, o.account, o.action, o.request, by, now, now)
	if err != nil {
		return fmt.Errorf("adapter: record account op %s: %w", o.ref, err)
	}
	return nil
}

// finishOpTx moves a PENDING op to APPLIED or REFUSED (guarded: of racing
// finishers one does it, and only it does what goes with it).
func (a *Adapter) finishOpTx(ctx context.Context, tx *store.Tx, ref, status, reason, coreReason string) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE AdapterAccountOps SET status = ?, reason_code = ?, core_reason = ?, updated_at = ?
		WHERE op_ref = ? AND status = 'PENDING'`, status, nullable(reason), nullable(coreReason), a.now(), ref)
	if err != nil {
		return false, fmt.Errorf("adapter: finish account op %s: %w", ref, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// sendOp sends a recorded op to the core. A refusal is a result, not an
// error; an error means no answer (the op stays PENDING).
func (a *Adapter) sendOp(ctx context.Context, o accountOp, name string) (corelink.MaintResult, error) {
	if a.acctCore == nil {
		return corelink.MaintResult{}, domainerr.New("BANK_ERROR", "no core link for account maintenance is configured", nil)
	}
	r, err := a.acctCore.MaintainAccount(ctx, o.ref, opCodes[o.action], o.account, name)
	if err != nil {
		a.log.WarnContext(ctx, "adapter.account_op_unanswered", "op_ref", o.ref, "action", o.action, "error", err)
		if c := domainerr.Code(err); c != "BANK_TIMEOUT" && c != "BANK_ERROR" {
			return r, err
		}
		return r, domainerr.Wrap("BANK_TIMEOUT", err, "the core did not answer the account "+strings.ToLower(o.action)+
			"; it stays pending: send the same request again", map[string]any{"op_ref": o.ref, "account_id": o.account})
	}
	a.log.InfoContext(ctx, "adapter.account_op_answered", "op_ref", o.ref, "action", o.action, "applied", r.Applied,
		"duplicate", r.Duplicate, "core_reason", r.CoreReason)
	return r, nil
}

func opRefusal(o accountOp) error {
	return domainerr.New("STATE_GUARD", "the core refused the account "+strings.ToLower(o.action),
		map[string]any{"op_ref": o.ref, "account_id": o.account, "core_reason": o.coreReason, "reason_code": o.reason})
}

// CreateAccount opens an account at the core and registers it (spec 004
// POST .../teller/accounts): recorded PENDING with the allocated number,
// sent as ACMQ O, then, once the core opened it, registered with balance
// 0, linked to its customer and, with initial_deposit, funded by a cash
// deposit through the outbox — exactly once per idempotency_key (the same
// key and body answer the same account; another body
// IDEMPOTENCY_KEY_CONFLICT).
func (a *Adapter) CreateAccount(ctx context.Context, req CreateAccountRequest, tellerID string) (CreateAccountResponse, error) {
	if err := a.validateCreate(&req); err != nil {
		return CreateAccountResponse{}, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return CreateAccountResponse{}, fmt.Errorf("adapter: encode account request: %w", err)
	}
	var o accountOp
	err = a.db.Write(ctx, func(tx *store.Tx) error {
		if err := a.requireBank(ctx, tx); err != nil {
			return err
		}
		prev, found, err := readOpTx(ctx, tx, "idempotency_key = ?", req.IdempotencyKey)
		if err != nil {
			return err
		}
		if found {
			if prev.request != string(body) {
				return domainerr.New("IDEMPOTENCY_KEY_CONFLICT", "this idempotency_key opened an account with another request",
					map[string]any{"idempotency_key": req.IdempotencyKey, "op_ref": prev.ref})
			}
			o = prev
			return nil
		}
		acct := req.AccountID
		if acct == "" {
			if acct, err = nextAccountTx(ctx, tx, req.Branch, req.AccountType); err != nil {
				return err
			}
		} else if _, err := accountByIDTx(ctx, tx, acct); err == nil {
			return domainerr.New("STATE_GUARD", "the bank already holds this account number", map[string]any{"account_id": acct})
		}
		hash := req.AccountHash
		if hash == "" {
			hash = DeriveAccountHash(a.bank, acct)
		}
		if _, err := readShadow(ctx, tx, hash); err == nil {
			return domainerr.New("STATE_GUARD", "account_hash already registered", map[string]any{"account_hash": hash})
		}
		o = accountOp{ref: newOpRef(), key: req.IdempotencyKey, hash: hash, account: acct, action: opOpen,
			status: opPending, request: string(body)}
		return a.insertOpTx(ctx, tx, o, "TELLER:"+tellerID)
	})
	if err != nil {
		return CreateAccountResponse{}, err
	}
	if o.status == opPending {
		r, err := a.sendOp(ctx, o, req.HolderName)
		if err != nil {
			return CreateAccountResponse{}, err
		}
		if o, err = a.finishOpen(ctx, o, req, r, tellerID); err != nil {
			return CreateAccountResponse{}, err
		}
	}
	if o.status == opRefused {
		return CreateAccountResponse{}, opRefusal(o)
	}
	return a.openedAccount(ctx, o)
}

// finishOpen registers the account the core opened (or records the
// refusal), once: the guarded op update decides which of racing
// finishers does it.
func (a *Adapter) finishOpen(ctx context.Context, o accountOp, req CreateAccountRequest, r corelink.MaintResult, tellerID string) (accountOp, error) {
	a.ob.Wake()
	err := a.db.Write(ctx, func(tx *store.Tx) error {
		if !r.Applied {
			won, err := a.finishOpTx(ctx, tx, o.ref, opRefused, r.ReasonCode, r.CoreReason)
			if err != nil || !won {
				return err
			}
			return a.audit(ctx, tx, "ACCOUNT_OPEN_REFUSED", "", o.ref, fmt.Sprintf(`{"account_id":%q,"core_reason":%q,"teller_id":%q}`,
				o.account, r.CoreReason, tellerID))
		}
		won, err := a.finishOpTx(ctx, tx, o.ref, opApplied, "", "")
		if err != nil || !won {
			return err
		}
		now := a.now()
		if _, err := tx.ExecContext(ctx, `INSERT INTO AdapterAccounts (account_hash, core_account, holder_name, status, lifecycle,
			opening_balance, created_at, updated_at) VALUES (?, ?, ?, 'ACTIVE', 'OPEN', ?, ?, ?)`,
			o.hash, o.account, req.HolderName, r.Ledger, now, now); err != nil {
			return fmt.Errorf("adapter: register account %s: %w", o.account, err)
		}
		if req.CustomerID != "" {
			if _, err := tx.ExecContext(ctx, `INSERT INTO AdapterCustomerAccounts (customer_id, account_hash, created_at) VALUES (?, ?, ?)`,
				req.CustomerID, o.hash, now); err != nil {
				return fmt.Errorf("adapter: link customer: %w", err)
			}
		}
		if req.InitialDeposit > 0 {
			s, err := readShadow(ctx, tx, o.hash)
			if err != nil {
				return err
			}
			if _, err := a.queuePosting(ctx, tx, s, CashPrefix+o.ref, o.ref, "", outbox.Credit, 1, req.InitialDeposit, ""); err != nil {
				return err
			}
		}
		payload, _ := json.Marshal(map[string]any{"account_id": o.account, "account_hash": o.hash, "customer_id": req.CustomerID,
			"initial_deposit": req.InitialDeposit, "teller_id": tellerID, "duplicate_at_core": r.Duplicate})
		return a.audit(ctx, tx, "ACCOUNT_OPENED", CashPrefix+o.ref, o.ref, string(payload))
	})
	if err != nil {
		return o, err
	}
	a.ob.Wake()
	var found bool
	err = a.db.Read(ctx, func(tx *store.Tx) (err error) { o, found, err = readOpTx(ctx, tx, "op_ref = ?", o.ref); return })
	if err == nil && !found {
		err = fmt.Errorf("adapter: account op %s vanished", o.ref)
	}
	return o, err
}

// openedAccount answers an APPLIED open: the account and its initial
// deposit's journal.
func (a *Adapter) openedAccount(ctx context.Context, o accountOp) (CreateAccountResponse, error) {
	out := CreateAccountResponse{OpRef: o.ref}
	s, err := a.Shadow(ctx, o.hash)
	if err != nil {
		return out, err
	}
	out.Account = a.view(s)
	js, err := a.Journals(ctx, "", o.account, CashPrefix+o.ref, 1)
	if err != nil {
		return out, err
	}
	if len(js) == 1 {
		out.InitialDeposit = &js[0]
	}
	return out, nil
}

// CreateAccounts is POST .../teller/accounts/batch: each item is an
// independent CreateAccount (its own idempotency_key); one refused item
// does not stop the others.
func (a *Adapter) CreateAccounts(ctx context.Context, req BatchAccountsRequest, tellerID string) (BatchAccountsResponse, error) {
	if len(req.Accounts) == 0 || len(req.Accounts) > MaxBatchAccounts {
		return BatchAccountsResponse{}, domainerr.New("INVALID_REQUEST", fmt.Sprintf("accounts must hold 1..%d items", MaxBatchAccounts),
			map[string]any{"field": "accounts", "count": len(req.Accounts)})
	}
	out := BatchAccountsResponse{Results: make([]BatchAccountResult, 0, len(req.Accounts))}
	for i, item := range req.Accounts {
		r, err := a.CreateAccount(ctx, item, tellerID)
		if err != nil {
			if _, ok := domainerr.As(err); !ok || ctx.Err() != nil {
				return BatchAccountsResponse{}, fmt.Errorf("adapter: batch item %d: %w", i, err)
			}
			b := domainerr.JSON(err, zclog.RequestIDFrom(ctx))
			b.Details = withIndex(b.Details, i)
			out.Results = append(out.Results, BatchAccountResult{Index: i, Error: &b})
			out.Failed++
			continue
		}
		out.Results = append(out.Results, BatchAccountResult{Index: i, Created: &r})
		out.Created++
	}
	return out, nil
}

func withIndex(d map[string]any, i int) map[string]any {
	if d == nil {
		d = map[string]any{}
	}
	d["index"] = i
	return d
}

// setLifecycle is PATCH .../status with CLOSING_HOLD or CLOSED, or with
// NORMAL on an account on closing hold (the hold lifted):
//
//   - CLOSING_HOLD: the adapter's side first (OPEN → CLOSING_HOLD,
//     guarded), so no credit is queued from then on; then ACMQ H.
//   - CLOSED: the adapter's side first (CLOSING_HOLD → CLOSED, guarded, in
//     the transaction that checks the shadow holds nothing: balance 0, no
//     pending posting, no hold, no held credit), so nothing is queued from
//     then on; then ACMQ C. The core refusing (its balance is not 0: a
//     change the shadow does not know) puts the account back on hold.
//   - lift (NORMAL): ACMQ N first, then CLOSING_HOLD → OPEN, so the
//     adapter never queues a credit the core would still refuse.
//
// A PENDING op of the same action is sent again (the retry after a lost
// answer); an applied one answers the account as it is.
func (a *Adapter) setLifecycle(ctx context.Context, hash, action, tellerID string) (Shadow, error) {
	var o accountOp
	var s Shadow
	err := a.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		if s, err = readShadow(ctx, tx, hash); err != nil {
			return err
		}
		if prev, found, err := readOpTx(ctx, tx, "account_hash = ? AND status = 'PENDING'", hash); err != nil {
			return err
		} else if found {
			if prev.action != action {
				return domainerr.New("STATE_GUARD", "another lifecycle action of this account waits for the core's answer: repeat it first",
					map[string]any{"account_id": s.CoreAccount, "pending_action": prev.action, "op_ref": prev.ref})
			}
			o = prev
			return nil
		}
		from, to := map[string]string{opHold: LifecycleOpen, opClose: LifecycleClosingHold, opLift: LifecycleClosingHold}[action],
			map[string]string{opHold: LifecycleClosingHold, opClose: LifecycleClosed, opLift: LifecycleOpen}[action]
		if s.Lifecycle == to {
			return nil // already so: nothing to ask
		}
		if s.Lifecycle != from {
			return domainerr.New("STATE_GUARD", fmt.Sprintf("the account is %s: %s needs %s", statusView(s), lifecycleView(to), lifecycleView(from)),
				map[string]any{"account_id": s.CoreAccount, "account_status": statusView(s), "requested": lifecycleView(to)})
		}
		if action == opClose {
			if err := a.closableTx(ctx, tx, s); err != nil {
				return err
			}
		}
		if action != opLift {
			if err := a.casLifecycleTx(ctx, tx, hash, from, to); err != nil {
				return err
			}
		}
		o = accountOp{ref: newOpRef(), hash: hash, account: s.CoreAccount, action: action, status: opPending,
			request: fmt.Sprintf(`{"status":%q}`, to)}
		return a.insertOpTx(ctx, tx, o, "TELLER:"+tellerID)
	})
	if err != nil || o.ref == "" {
		return s, err
	}
	if action == opHold {
		// Credits queued before the hold must reach the core before it
		// refuses credits: the adapter queues no new one from now on, so
		// the pending ones only drain.
		if err := a.waitCreditsApplied(ctx, hash, o); err != nil {
			return s, err
		}
	}
	r, err := a.sendOp(ctx, o, "")
	if err != nil {
		return s, err
	}
	err = a.db.Write(ctx, func(tx *store.Tx) error {
		status, reason := opApplied, ""
		if !r.Applied {
			status, reason = opRefused, r.ReasonCode
		}
		won, err := a.finishOpTx(ctx, tx, o.ref, status, reason, r.CoreReason)
		if err != nil || !won {
			return err
		}
		switch {
		case r.Applied && action == opLift:
			err = a.casLifecycleTx(ctx, tx, hash, LifecycleClosingHold, LifecycleOpen)
		case !r.Applied && action == opHold:
			err = a.casLifecycleTx(ctx, tx, hash, LifecycleClosingHold, LifecycleOpen)
		case !r.Applied && action == opClose:
			err = a.casLifecycleTx(ctx, tx, hash, LifecycleClosed, LifecycleClosingHold)
		}
		if err != nil {
			return err
		}
		payload, _ := json.Marshal(map[string]any{"account_id": o.account, "action": action, "applied": r.Applied,
			"duplicate_at_core": r.Duplicate, "core_reason": r.CoreReason, "core_ledger": r.Ledger, "teller_id": tellerID})
		return a.audit(ctx, tx, "ACCOUNT_"+action, "", o.ref, string(payload))
	})
	if err != nil {
		return s, err
	}
	if !r.Applied {
		o.coreReason, o.reason = r.CoreReason, r.ReasonCode
		e := opRefusal(o)
		if de, ok := domainerr.As(e); ok {
			de.Details["core_ledger"], de.Details["core_held"] = r.Ledger, r.Held
		}
		return s, e
	}
	return a.Shadow(ctx, hash)
}

// waitCreditsApplied waits (up to the inquiry timeout) until the account
// has no credit the core has not applied; BANK_TIMEOUT otherwise, the
// hold staying PENDING (in force at the adapter) for the teller's retry.
func (a *Adapter) waitCreditsApplied(ctx context.Context, hash string, o accountOp) error {
	deadline := a.clk.Now().Add(a.inqWait)
	for {
		s, err := a.Shadow(ctx, hash)
		if err != nil {
			return err
		}
		if s.PendingCredits == 0 {
			return nil
		}
		if !a.clk.Now().Before(deadline) {
			return domainerr.New("BANK_TIMEOUT", "the closing hold is in force at the adapter; the core is told once the credits queued before it are applied: send the same request again",
				map[string]any{"op_ref": o.ref, "account_id": o.account, "pending_credits": s.PendingCredits})
		}
		a.ob.Wake()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// casLifecycleTx moves the account's lifecycle from → to, guarded.
func (a *Adapter) casLifecycleTx(ctx context.Context, tx *store.Tx, hash, from, to string) error {
	res, err := tx.ExecContext(ctx, `UPDATE AdapterAccounts SET lifecycle = ?, updated_at = ? WHERE account_hash = ? AND lifecycle = ?`,
		to, a.now(), hash, from)
	if err != nil {
		return fmt.Errorf("adapter: set lifecycle %s: %w", hash, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return domainerr.New("CONCURRENCY_CONFLICT", "the account's lifecycle changed concurrently", map[string]any{"account_hash": hash, "from": from, "to": to})
	}
	return nil
}

// closableTx refuses to close an account whose shadow still holds
// anything: a balance, a pending or unsettled posting, a hold, a credit
// held for approval.
func (a *Adapter) closableTx(ctx context.Context, tx *store.Tx, s Shadow) error {
	var approvals int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM AdapterApprovals WHERE account_hash = ? AND status = 'PENDING'`, s.Hash).
		Scan(&approvals); err != nil {
		return fmt.Errorf("adapter: read approvals of %s: %w", s.Hash, err)
	}
	if s.CoreBalance != 0 || s.PendingDebits != 0 || s.PendingCredits != 0 || s.Unsettled != 0 || s.Holds != 0 || approvals != 0 {
		return domainerr.New("STATE_GUARD", "the account still holds money or postings: pay it out and let them settle first",
			map[string]any{"account_id": s.CoreAccount, "balance": s.CoreBalance, "pending_debits": s.PendingDebits,
				"pending_credits": s.PendingCredits, "unsettled": s.Unsettled, "holds": s.Holds, "held_credits": approvals})
	}
	return nil
}
