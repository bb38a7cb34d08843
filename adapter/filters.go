package adapter

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"
	"sync"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/uuid"
)

// Incoming-transfer filter types (spec 004 着金フィルタ).
const (
	FilterAmountLimit     = "AMOUNT_LIMIT"      // amount > condition.max_amount
	FilterSenderBlock     = "SENDER_BLOCK"      // payer_account_hash = condition.payer_account_hash
	FilterSenderBankBlock = "SENDER_BANK_BLOCK" // payer_bank_id = condition.payer_bank_id
	FilterRequireApproval = "REQUIRE_APPROVAL"  // every credit (above condition.min_amount, if set)
	FilterEDIPattern      = "EDI_PATTERN"       // the credit's edi_ref matches condition.edi_pattern
)

// MaxEDIPatternLength bounds condition.edi_pattern (bytes).
const MaxEDIPatternLength = 256

// Filter actions.
const (
	ActionReject      = "REJECT"       // execute-credit is refused
	ActionHoldConfirm = "HOLD_CONFIRM" // held until the payee (customer API) decides
	ActionHoldManual  = "HOLD_MANUAL"  // held until a teller decides
)

// Filter scopes.
const (
	ScopeAccount = "ACCOUNT"
	ScopeBank    = "BANK"
)

// Approval statuses.
const (
	ApprovalPending  = "PENDING"
	ApprovalApproved = "APPROVED"
	ApprovalRejected = "REJECTED"
)

// Refusal causes of execute-credit (details.cause of its STATE_GUARD: the
// spec's catalog names no code of its own for a filter's refusal).
const (
	CauseFilterRejected   = "FILTER_REJECTED"
	CauseApprovalRejected = "APPROVAL_REJECTED"
)

// FilterCondition is a filter's condition; each type reads its own member.
type FilterCondition struct {
	MaxAmount        *int64 `json:"max_amount,omitempty"`
	MinAmount        *int64 `json:"min_amount,omitempty"`
	PayerAccountHash string `json:"payer_account_hash,omitempty"`
	PayerBankID      string `json:"payer_bank_id,omitempty"`
	// EDIPattern is a regular expression (Go RE2 syntax: no
	// backreferences, linear time) an EDI_PATTERN filter matches against
	// the credit's edi_ref (unanchored: use ^ and $ for a whole match). A
	// credit without edi_ref never matches.
	EDIPattern string `json:"edi_pattern,omitempty"`
}

// Filter is an AdapterFilters row as the filter API shows it.
type Filter struct {
	FilterID    string          `json:"filter_id"`
	Scope       string          `json:"scope"`
	AccountID   string          `json:"account_id,omitempty"` // the core account number
	FilterType  string          `json:"filter_type"`
	Condition   FilterCondition `json:"condition"`
	Action      string          `json:"action"`
	Description string          `json:"description,omitempty"`
	IsActive    bool            `json:"is_active"`
	CreatedBy   string          `json:"created_by"`
	CreatedAt   string          `json:"created_at"`
	UpdatedAt   string          `json:"updated_at"`
	accountHash string
}

// FilterRequest is the body of POST /bank/{bank_id}/v1/filters.
type FilterRequest struct {
	Scope       string          `json:"scope"`
	AccountID   string          `json:"account_id,omitempty"`
	FilterType  string          `json:"filter_type"`
	Condition   FilterCondition `json:"condition"`
	Action      string          `json:"action,omitempty"`
	Description string          `json:"description,omitempty"`
}

// FilterPatch is the body of PATCH /bank/{bank_id}/v1/filters/{filter_id}.
type FilterPatch struct {
	IsActive *bool `json:"is_active"`
}

// Approval is an AdapterApprovals row as the customer and teller APIs
// show it.
type Approval struct {
	ApprovalID  string `json:"approval_id"`
	TxID        string `json:"txid"`
	AccountID   string `json:"account_id"`
	FilterID    string `json:"filter_id"`
	Action      string `json:"action"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	PayerBankID string `json:"payer_bank_id,omitempty"`
	Status      string `json:"status"`
	DecidedBy   string `json:"decided_by,omitempty"`
	DecidedAt   string `json:"decided_at,omitempty"`
	// ResumeNotified: ZC has been told the decision.
	ResumeNotified bool   `json:"resume_notified"`
	CreatedAt      string `json:"created_at"`
}

// ApprovalDecision is the body of POST .../approvals/{approval_id}/respond.
type ApprovalDecision struct {
	Approved *bool `json:"approved"`
}

// CreditResumer tells ZC the decision on a held credit (POST
// /internal/transfers/{txid}/resume-credit). The node wires it to ZC's
// internal API.
type CreditResumer interface {
	ResumeCredit(ctx context.Context, txid string, req bankapi.ResumeCreditRequest) (bankapi.ResumeCreditResponse, error)
}

// accountByIDTx resolves the bank's account number (core account) to the
// account hash ZC uses; ACCOUNT_NOT_FOUND when the bank holds none.
func accountByIDTx(ctx context.Context, tx *store.Tx, accountID string) (string, error) {
	var hash string
	err := tx.QueryRowContext(ctx, `SELECT account_hash FROM AdapterAccounts WHERE core_account = ?`, accountID).Scan(&hash)
	if errors.Is(err, sql.ErrNoRows) {
		return "", domainerr.New("ACCOUNT_NOT_FOUND", "no account with this account_id at this bank", map[string]any{"account_id": accountID})
	}
	if err != nil {
		return "", fmt.Errorf("adapter: resolve account %s: %w", accountID, err)
	}
	return hash, nil
}

// validateFilter checks a filter request against its type.
func validateFilter(req *FilterRequest) error {
	bad := func(field, why string) error {
		return domainerr.New("INVALID_REQUEST", why, map[string]any{"field": field})
	}
	switch req.Scope {
	case "":
		req.Scope = ScopeAccount
	case ScopeAccount, ScopeBank:
	default:
		return bad("scope", "scope must be ACCOUNT or BANK")
	}
	if (req.Scope == ScopeAccount) != (req.AccountID != "") {
		return bad("account_id", "an ACCOUNT filter names account_id; a BANK filter does not")
	}
	c := req.Condition
	switch req.FilterType {
	case FilterAmountLimit:
		if c.MaxAmount == nil || *c.MaxAmount < 0 {
			return bad("condition.max_amount", "AMOUNT_LIMIT needs condition.max_amount >= 0")
		}
	case FilterSenderBlock:
		if c.PayerAccountHash == "" {
			return bad("condition.payer_account_hash", "SENDER_BLOCK needs condition.payer_account_hash")
		}
	case FilterSenderBankBlock:
		if c.PayerBankID == "" {
			return bad("condition.payer_bank_id", "SENDER_BANK_BLOCK needs condition.payer_bank_id")
		}
	case FilterRequireApproval:
		if c.MinAmount != nil && *c.MinAmount < 0 {
			return bad("condition.min_amount", "condition.min_amount must be >= 0")
		}
	case FilterEDIPattern:
		if _, err := compileEDIPattern(c.EDIPattern); err != nil {
			return err
		}
	default:
		return bad("filter_type", "filter_type must be AMOUNT_LIMIT, SENDER_BLOCK, SENDER_BANK_BLOCK, EDI_PATTERN or REQUIRE_APPROVAL")
	}
	switch req.Action {
	case "":
		req.Action = ActionReject
		if req.FilterType == FilterRequireApproval {
			req.Action = ActionHoldConfirm
		}
	case ActionReject, ActionHoldConfirm, ActionHoldManual:
	default:
		return bad("action", "action must be REJECT, HOLD_CONFIRM or HOLD_MANUAL")
	}
	if req.FilterType == FilterRequireApproval && req.Action == ActionReject {
		return bad("action", "REQUIRE_APPROVAL holds the credit: HOLD_CONFIRM or HOLD_MANUAL")
	}
	return nil
}

// CreateFilter adds an incoming-transfer filter; actor is the teller or
// customer creating it (a customer may name only an account of its own:
// the HTTP layer checks that).
func (a *Adapter) CreateFilter(ctx context.Context, req FilterRequest, actor string) (Filter, error) {
	if err := validateFilter(&req); err != nil {
		return Filter{}, err
	}
	cond, err := json.Marshal(req.Condition)
	if err != nil {
		return Filter{}, fmt.Errorf("adapter: encode filter condition: %w", err)
	}
	id := "FLT-" + uuid.New()
	err = a.db.Write(ctx, func(tx *store.Tx) error {
		var hash any
		if req.Scope == ScopeAccount {
			h, err := accountByIDTx(ctx, tx, req.AccountID)
			if err != nil {
				return err
			}
			hash = h
		}
		now := a.now()
		if _, err := tx.ExecContext(ctx, `INSERT INTO AdapterFilters
			(filter_id, scope, account_hash, filter_type, condition_json, action, description, is_active, created_by, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)`, id, req.Scope, hash, req.FilterType, string(cond), req.Action,
			req.Description, actor, now, now); err != nil {
			return fmt.Errorf("adapter: insert filter: %w", err)
		}
		return a.audit(ctx, tx, "FILTER_CREATED", "", "", fmt.Sprintf(`{"filter_id":%q,"filter_type":%q,"action":%q,"actor":%q}`,
			id, req.FilterType, req.Action, actor))
	})
	if err != nil {
		return Filter{}, err
	}
	a.log.InfoContext(ctx, "adapter.filter_created", "filter_id", id, "filter_type", req.FilterType, "action", req.Action, "scope", req.Scope)
	return a.Filter(ctx, id)
}

const filterCols = `f.filter_id, f.scope, COALESCE(a.core_account, ''), COALESCE(f.account_hash, ''), f.filter_type, f.condition_json,
	f.action, COALESCE(f.description, ''), f.is_active, f.created_by, f.created_at, f.updated_at`

func scanFilter(sc interface{ Scan(...any) error }) (Filter, error) {
	var f Filter
	var cond string
	var active int
	if err := sc.Scan(&f.FilterID, &f.Scope, &f.AccountID, &f.accountHash, &f.FilterType, &cond, &f.Action, &f.Description,
		&active, &f.CreatedBy, &f.CreatedAt, &f.UpdatedAt); err != nil {
		return f, err
	}
	f.IsActive = active == 1
	if err := json.Unmarshal([]byte(cond), &f.Condition); err != nil {
		return f, fmt.Errorf("adapter: filter %s condition: %w", f.FilterID, err)
	}
	return f, nil
}

// Filter returns one filter (NOT_FOUND when there is none).
func (a *Adapter) Filter(ctx context.Context, id string) (Filter, error) {
	var f Filter
	err := a.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		f, err = scanFilter(tx.QueryRowContext(ctx, `SELECT `+filterCols+` FROM AdapterFilters f
			LEFT JOIN AdapterAccounts a ON a.account_hash = f.account_hash WHERE f.filter_id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return domainerr.New("NOT_FOUND", "no filter with this filter_id", map[string]any{"filter_id": id})
		}
		return err
	})
	return f, err
}

// Filters lists the filters, of one account (its own and the bank-wide
// ones) when accountID is set.
func (a *Adapter) Filters(ctx context.Context, accountID string) ([]Filter, error) {
	out := []Filter{}
	err := a.db.Read(ctx, func(tx *store.Tx) error {
		q := `SELECT ` + filterCols + ` FROM AdapterFilters f LEFT JOIN AdapterAccounts a ON a.account_hash = f.account_hash`
		var args []any
		if accountID != "" {
			hash, err := accountByIDTx(ctx, tx, accountID)
			if err != nil {
				return err
			}
			q += ` WHERE f.account_hash = ? OR f.scope = 'BANK'`
			args = append(args, hash)
		}
		rows, err := tx.QueryContext(ctx, q+` ORDER BY f.created_at, f.filter_id`, args...)
		if err != nil {
			return fmt.Errorf("adapter: list filters: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			f, err := scanFilter(rows)
			if err != nil {
				return err
			}
			out = append(out, f)
		}
		return rows.Err()
	})
	return out, err
}

// SetFilterActive switches a filter on or off.
func (a *Adapter) SetFilterActive(ctx context.Context, id string, active bool, actor string) (Filter, error) {
	err := a.db.Write(ctx, func(tx *store.Tx) error {
		v := 0
		if active {
			v = 1
		}
		res, err := tx.ExecContext(ctx, `UPDATE AdapterFilters SET is_active = ?, updated_at = ? WHERE filter_id = ?`, v, a.now(), id)
		if err != nil {
			return fmt.Errorf("adapter: update filter %s: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domainerr.New("NOT_FOUND", "no filter with this filter_id", map[string]any{"filter_id": id})
		}
		return a.audit(ctx, tx, "FILTER_UPDATED", "", "", fmt.Sprintf(`{"filter_id":%q,"is_active":%t,"actor":%q}`, id, active, actor))
	})
	if err != nil {
		return Filter{}, err
	}
	return a.Filter(ctx, id)
}

// DeleteFilter removes a filter. Approvals it already created stay.
func (a *Adapter) DeleteFilter(ctx context.Context, id, actor string) error {
	return a.db.Write(ctx, func(tx *store.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM AdapterFilters WHERE filter_id = ?`, id)
		if err != nil {
			return fmt.Errorf("adapter: delete filter %s: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domainerr.New("NOT_FOUND", "no filter with this filter_id", map[string]any{"filter_id": id})
		}
		return a.audit(ctx, tx, "FILTER_DELETED", "", "", fmt.Sprintf(`{"filter_id":%q,"actor":%q}`, id, actor))
	})
}

// matches reports whether f applies to a credit.
func (f Filter) matches(req bankapi.ExecuteCreditRequest) bool {
	c := f.Condition
	switch f.FilterType {
	case FilterAmountLimit:
		return c.MaxAmount != nil && req.Amount.Value > *c.MaxAmount
	case FilterSenderBlock:
		return c.PayerAccountHash != "" && c.PayerAccountHash == req.PayerAccountHash
	case FilterSenderBankBlock:
		return c.PayerBankID != "" && c.PayerBankID == req.PayerBankID
	case FilterRequireApproval:
		return c.MinAmount == nil || req.Amount.Value >= *c.MinAmount
	case FilterEDIPattern:
		if req.EdiRef == "" {
			return false
		}
		re, err := compileEDIPattern(c.EDIPattern)
		return err == nil && re.MatchString(req.EdiRef)
	}
	return false
}

// ediPatterns caches compiled EDI_PATTERN conditions by their text.
var ediPatterns sync.Map // string -> *regexp.Regexp

// compileEDIPattern compiles condition.edi_pattern, refusing an empty, too
// long or invalid one with INVALID_REQUEST naming the field, what is wrong
// and where (details.byte_offset: where the offending part starts).
func compileEDIPattern(p string) (*regexp.Regexp, error) {
	if re, ok := ediPatterns.Load(p); ok {
		return re.(*regexp.Regexp), nil
	}
	const field = "condition.edi_pattern"
	switch {
	case p == "":
		return nil, domainerr.New("INVALID_REQUEST", "EDI_PATTERN needs condition.edi_pattern", map[string]any{"field": field})
	case len(p) > MaxEDIPatternLength:
		return nil, domainerr.New("INVALID_REQUEST", fmt.Sprintf("condition.edi_pattern is %d bytes; at most %d", len(p), MaxEDIPatternLength),
			map[string]any{"field": field, "length": len(p), "max_length": MaxEDIPatternLength})
	}
	re, err := regexp.Compile(p)
	if err != nil {
		details := map[string]any{"field": field, "pattern": p}
		var se *syntax.Error
		if errors.As(err, &se) {
			details["error_code"] = string(se.Code)
			details["at"] = se.Expr
			if i := strings.Index(p, se.Expr); i >= 0 && se.Expr != "" {
				details["byte_offset"] = i
			}
		}
		return nil, domainerr.New("INVALID_REQUEST", "condition.edi_pattern is not a valid regular expression (RE2 syntax): "+err.Error(), details)
	}
	ediPatterns.Store(p, re)
	return re, nil
}

// screenCredit runs the payee account's incoming-transfer filters before
// execute-credit posts anything (in its own transaction; nothing it
// decides is cached under the request_id, so ZC's retry asks again):
//
//   - a txid already credited is not screened (its replay answers);
//   - an approval of this txid decides: APPROVED lets the credit through,
//     PENDING answers HELD again, REJECTED refuses (STATE_GUARD, cause
//     APPROVAL_REJECTED);
//   - otherwise the first matching REJECT filter refuses (STATE_GUARD,
//     cause FILTER_REJECTED; audited), and the first matching HOLD_*
//     filter records a PENDING approval (one per txid) and answers HELD.
//
// held is nil when the credit may be posted. A payee account the bank
// does not hold is not screened (execute-credit answers for it).
func (a *Adapter) screenCredit(ctx context.Context, req bankapi.ExecuteCreditRequest) (held *bankapi.ExecuteResponse, err error) {
	// The common case, no approval of this txid and no active filter that
	// could apply, costs one read and no commit.
	var candidates int
	err = a.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM AdapterApprovals WHERE txid = ?1) +
			(SELECT COUNT(*) FROM AdapterFilters WHERE is_active = 1 AND (account_hash = ?2 OR scope = 'BANK'))`,
			req.TxID, req.PayeeAccountHash).Scan(&candidates)
	})
	if err != nil {
		return nil, fmt.Errorf("adapter: screen credit %s: %w", req.TxID, err)
	}
	if candidates == 0 {
		return nil, nil
	}
	var refusal error
	err = a.db.Write(ctx, func(tx *store.Tx) error {
		// A credit already posted is answered by its replay, whatever
		// filter was added since.
		var posted int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM AdapterPostings WHERE txid = ? AND kind = 'CREDIT'`, req.TxID).Scan(&posted); err != nil {
			return fmt.Errorf("adapter: read credits of %s: %w", req.TxID, err)
		}
		if posted > 0 {
			return nil
		}
		var id, status string
		err := tx.QueryRowContext(ctx, `SELECT approval_id, status FROM AdapterApprovals WHERE txid = ?`, req.TxID).Scan(&id, &status)
		switch {
		case err == nil:
			switch status {
			case ApprovalApproved:
				return nil
			case ApprovalPending:
				held = &bankapi.ExecuteResponse{Result: bankapi.ResultHeld, ApprovalID: id}
				return nil
			}
			refusal = domainerr.New("STATE_GUARD", "the payee side rejected this credit",
				map[string]any{"cause": CauseApprovalRejected, "txid": req.TxID, "approval_id": id})
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("adapter: read approval of %s: %w", req.TxID, err)
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+filterCols+` FROM AdapterFilters f
			LEFT JOIN AdapterAccounts a ON a.account_hash = f.account_hash
			WHERE f.is_active = 1 AND (f.account_hash = ? OR f.scope = 'BANK') ORDER BY f.created_at, f.filter_id`, req.PayeeAccountHash)
		if err != nil {
			return fmt.Errorf("adapter: read filters: %w", err)
		}
		var hits []Filter
		for rows.Next() {
			f, err := scanFilter(rows)
			if err != nil {
				rows.Close()
				return err
			}
			if f.matches(req) {
				hits = append(hits, f)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(hits) == 0 {
			return nil
		}
		if _, err := readShadow(ctx, tx, req.PayeeAccountHash); err != nil {
			if domainerr.Has(err, "ACCOUNT_NOT_FOUND") {
				return nil
			}
			return err
		}
		// A refusal wins over a hold: holding a credit the bank would
		// refuse anyway only delays the payer's refund.
		sort.SliceStable(hits, func(i, j int) bool { return hits[i].Action == ActionReject && hits[j].Action != ActionReject })
		f := hits[0]
		payload, _ := json.Marshal(map[string]any{"filter_id": f.FilterID, "filter_type": f.FilterType, "action": f.Action,
			"amount": req.Amount.Value, "payer_bank_id": req.PayerBankID})
		if f.Action == ActionReject {
			refusal = domainerr.New("STATE_GUARD", "an incoming-transfer filter of the payee account refuses this credit",
				map[string]any{"cause": CauseFilterRejected, "txid": req.TxID, "filter_id": f.FilterID, "filter_type": f.FilterType})
			return a.audit(ctx, tx, "CREDIT_FILTER_REJECTED", req.TxID, req.RequestIDValue, string(payload))
		}
		id = "APR-" + uuid.New()
		now := a.now()
		if _, err := tx.ExecContext(ctx, `INSERT INTO AdapterApprovals
			(approval_id, txid, account_hash, filter_id, action, amount, payer_bank_id, status, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, 'PENDING', ?, ?)`, id, req.TxID, req.PayeeAccountHash, f.FilterID, f.Action,
			req.Amount.Value, req.PayerBankID, now, now); err != nil {
			return fmt.Errorf("adapter: record approval of %s: %w", req.TxID, err)
		}
		held = &bankapi.ExecuteResponse{Result: bankapi.ResultHeld, ApprovalID: id}
		return a.audit(ctx, tx, "CREDIT_HELD", req.TxID, req.RequestIDValue, string(payload))
	})
	if err != nil {
		return nil, err
	}
	if refusal != nil {
		a.log.InfoContext(ctx, "adapter.credit_refused", "txid", req.TxID, "reason_code", domainerr.Code(refusal))
		return nil, refusal
	}
	if held != nil {
		a.log.InfoContext(ctx, "adapter.credit_held", "txid", req.TxID, "approval_id", held.ApprovalID)
	}
	return held, nil
}

const approvalCols = `p.approval_id, p.txid, a.core_account, p.filter_id, p.action, p.amount, COALESCE(p.payer_bank_id, ''), p.status,
	COALESCE(p.decided_by, ''), COALESCE(p.decided_at, ''), p.resume_notified_at IS NOT NULL, p.created_at, p.account_hash`

func (a *Adapter) scanApproval(sc interface{ Scan(...any) error }) (Approval, string, error) {
	var p Approval
	var hash string
	err := sc.Scan(&p.ApprovalID, &p.TxID, &p.AccountID, &p.FilterID, &p.Action, &p.Amount, &p.PayerBankID, &p.Status,
		&p.DecidedBy, &p.DecidedAt, &p.ResumeNotified, &p.CreatedAt, &hash)
	p.Currency = a.currency
	return p, hash, err
}

// ApprovalQuery selects approvals: of the accounts in Accounts (hashes;
// nil means every account), of one account number, of one status.
type ApprovalQuery struct {
	Accounts  []string
	AccountID string
	Status    string
}

// Approvals lists approval requests, oldest first.
func (a *Adapter) Approvals(ctx context.Context, q ApprovalQuery) ([]Approval, error) {
	out := []Approval{}
	err := a.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+approvalCols+` FROM AdapterApprovals p JOIN AdapterAccounts a ON a.account_hash = p.account_hash
			WHERE (? = '' OR a.core_account = ?) AND (? = '' OR p.status = ?) ORDER BY p.created_at, p.approval_id`,
			q.AccountID, q.AccountID, q.Status, q.Status)
		if err != nil {
			return fmt.Errorf("adapter: list approvals: %w", err)
		}
		defer rows.Close()
		allowed := map[string]bool{}
		for _, h := range q.Accounts {
			allowed[h] = true
		}
		for rows.Next() {
			p, hash, err := a.scanApproval(rows)
			if err != nil {
				return err
			}
			if q.Accounts == nil || allowed[hash] {
				out = append(out, p)
			}
		}
		return rows.Err()
	})
	return out, err
}

// approvalTx reads one approval and its account hash.
func (a *Adapter) approvalTx(ctx context.Context, tx *store.Tx, id string) (Approval, string, error) {
	p, hash, err := a.scanApproval(tx.QueryRowContext(ctx, `SELECT `+approvalCols+` FROM AdapterApprovals p
		JOIN AdapterAccounts a ON a.account_hash = p.account_hash WHERE p.approval_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return p, "", domainerr.New("NOT_FOUND", "no approval request with this approval_id", map[string]any{"approval_id": id})
	}
	if err != nil {
		return p, "", fmt.Errorf("adapter: read approval %s: %w", id, err)
	}
	return p, hash, nil
}

// Decider is who answers an approval request: the customer holding the
// account (HOLD_CONFIRM) or a teller (HOLD_MANUAL).
type Decider struct {
	CustomerID string
	TellerID   string
}

func (d Decider) name() string {
	if d.TellerID != "" {
		return "TELLER:" + d.TellerID
	}
	return "CUSTOMER:" + d.CustomerID
}

// RespondApproval decides a held credit, then tells ZC (resume-credit).
// The decision is a guarded UPDATE from PENDING: of racing decisions
// exactly one is recorded; the others get STATE_GUARD, except the same
// decision again, which only re-sends the notification (so a decision
// whose notification failed is completed by asking again). A customer
// answers HOLD_CONFIRM requests of its own accounts, a teller HOLD_MANUAL
// ones (NOT_FOUND / CROSS_PARTICIPANT_SCOPE otherwise).
func (a *Adapter) RespondApproval(ctx context.Context, id string, approved bool, by Decider) (Approval, error) {
	want := ApprovalRejected
	if approved {
		want = ApprovalApproved
	}
	var p Approval
	err := a.db.Write(ctx, func(tx *store.Tx) error {
		var hash string
		var err error
		if p, hash, err = a.approvalTx(ctx, tx, id); err != nil {
			return err
		}
		if by.TellerID == "" {
			owns, err := a.holdsTx(ctx, tx, by.CustomerID, hash)
			if err != nil {
				return err
			}
			if !owns {
				return domainerr.New("NOT_FOUND", "no approval request with this approval_id", map[string]any{"approval_id": id})
			}
			if p.Action != ActionHoldConfirm {
				return domainerr.New("CROSS_PARTICIPANT_SCOPE", "this credit is held for the bank's manual review (HOLD_MANUAL): a teller decides",
					map[string]any{"approval_id": id, "action": p.Action})
			}
		} else if p.Action != ActionHoldManual {
			return domainerr.New("CROSS_PARTICIPANT_SCOPE", "this credit waits for the account holder's confirmation (HOLD_CONFIRM)",
				map[string]any{"approval_id": id, "action": p.Action})
		}
		if p.Status != ApprovalPending {
			if p.Status == want {
				return nil // the same decision again: re-send the notification
			}
			return domainerr.New("STATE_GUARD", "the approval request was decided already", map[string]any{"approval_id": id, "status": p.Status})
		}
		now := a.now()
		res, err := tx.ExecContext(ctx, `UPDATE AdapterApprovals SET status = ?, decided_by = ?, decided_at = ?, updated_at = ?
			WHERE approval_id = ? AND status = 'PENDING'`, want, by.name(), now, now, id)
		if err != nil {
			return fmt.Errorf("adapter: decide approval %s: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return domainerr.New("CONCURRENCY_CONFLICT", "the approval request was decided concurrently", map[string]any{"approval_id": id})
		}
		p.Status, p.DecidedBy, p.DecidedAt = want, by.name(), now
		return a.audit(ctx, tx, "APPROVAL_"+want, p.TxID, "", fmt.Sprintf(`{"approval_id":%q,"decided_by":%q}`, id, by.name()))
	})
	if err != nil {
		return Approval{}, err
	}
	a.log.InfoContext(ctx, "adapter.approval_decided", "approval_id", id, "txid", p.TxID, "status", p.Status, "decided_by", p.DecidedBy)
	if p.ResumeNotified {
		return p, nil
	}
	if a.resume == nil {
		return p, domainerr.New("BANK_ERROR", "no link to ZC's resume-credit is configured; the decision is recorded", map[string]any{"approval_id": id})
	}
	if _, err := a.resume.ResumeCredit(ctx, p.TxID, bankapi.ResumeCreditRequest{BankID: a.bank, ApprovalID: id,
		Approved: approved, DecidedBy: p.DecidedBy}); err != nil {
		a.log.WarnContext(ctx, "adapter.resume_credit_failed", "approval_id", id, "txid", p.TxID, "error", err)
		return p, fmt.Errorf("adapter: decision recorded, telling ZC failed (respond again to retry): %w", err)
	}
	err = a.db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE AdapterApprovals SET resume_notified_at = COALESCE(resume_notified_at, ?) WHERE approval_id = ?`,
			a.now(), id)
		return err
	})
	if err != nil {
		return p, fmt.Errorf("adapter: record resume notification of %s: %w", id, err)
	}
	p.ResumeNotified = true
	return p, nil
}
