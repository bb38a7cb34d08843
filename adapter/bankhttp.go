package adapter

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/strictjson"
	"github.com/zcgw/zcgw/coordinator/zclog"
)

// The bank-side APIs' HTTP surface (spec 004 Bank 顧客API, 行員API, 着金フィルタ
// API; docs/bank-api.md). BankRoutes is the one list of these routes: the
// adapter's handler (BankAPI) and the gateway, which mounts them behind
// the bank's own credentials and documents them in its OpenAPI document,
// are both built from it.

// Identity headers of the bank-side APIs (spec 004 共通ヘッダー). The bank's
// channel has authenticated its customer or teller; the gateway has
// authenticated the bank (its participant API key) before these are read.
const (
	HeaderBankID     = "X-Bank-Id"
	HeaderCustomerID = "X-Customer-Id"
	HeaderTellerID   = "X-Teller-Id"
)

// Who a bank-side route serves.
const (
	RoleCustomer = "CUSTOMER" // X-Customer-Id required; only the customer's own accounts
	RoleTeller   = "TELLER"   // X-Teller-Id required; every account of the bank
	RoleFilter   = "FILTER"   // X-Teller-Id, or X-Customer-Id for the customer's own accounts
)

// BankRoute is one bank-side route.
type BankRoute struct {
	Method, Path string // Path under /bank/{bank_id}/v1
	Summary      string
	Role         string
	Query        []string // query parameters
	Request      any      // a value of the JSON body's type; nil: no body
	Response     any      // a value of the success body's type
	Status       int      // the success status
	// ZCQuery: the success body is ZC's QueryResponse for this bank,
	// relayed as ZC wrote it (Response is then nil).
	ZCQuery bool
	serve   func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error)
}

// Pattern is the route's http.ServeMux pattern.
func (r BankRoute) Pattern() string { return r.Method + " " + r.Path }

// identity is the caller as the identity headers name it.
type identity struct{ customer, teller string }

func (i identity) actor() string { return Decider{CustomerID: i.customer, TellerID: i.teller}.name() }

// Named list bodies of the bank-side routes.
type (
	// AccountsResponse lists accounts.
	AccountsResponse struct {
		Accounts []AccountView `json:"accounts"`
	}
	// JournalsResponse lists postings.
	JournalsResponse struct {
		Journals []Journal `json:"journals"`
	}
	// SuspenseResponse lists the custody account's credits.
	SuspenseResponse struct {
		Suspense []SuspenseItem `json:"suspense"`
	}
	// ApprovalsResponse lists approval requests.
	ApprovalsResponse struct {
		Approvals []Approval `json:"approvals"`
	}
	// FiltersResponse lists filters.
	FiltersResponse struct {
		Filters []Filter `json:"filters"`
	}
	// AuditLogResponse lists audit entries.
	AuditLogResponse struct {
		Entries []AuditEntry `json:"entries"`
	}
	// AccountStatusRequest is PATCH .../teller/accounts/{account_id}/status.
	AccountStatusRequest struct {
		Status string `json:"status"`
	}
	// Deleted answers DELETE .../filters/{filter_id}.
	Deleted struct {
		FilterID string `json:"filter_id"`
		Deleted  bool   `json:"deleted"`
	}
)

const bankPrefix = "/bank/{bank_id}/v1"

// BankRoutes returns the bank-side routes.
func BankRoutes() []BankRoute {
	return []BankRoute{
		{Method: "GET", Path: bankPrefix + "/me/accounts", Summary: "The customer's accounts", Role: RoleCustomer,
			Response: AccountsResponse{}, Status: 200, serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				l, err := a.Accounts(r.Context(), who.customer)
				return AccountsResponse{Accounts: l}, err
			}},
		{Method: "GET", Path: bankPrefix + "/me/accounts/{account_id}/balance", Summary: "An account's balance, asked of the core (source CORE) or the shadow's last known one (SHADOW)",
			Role: RoleCustomer, Response: Balance{}, Status: 200, serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				return a.AccountBalance(r.Context(), who.customer, r.PathValue("account_id"))
			}},
		{Method: "GET", Path: bankPrefix + "/me/accounts/{account_id}/transactions", Summary: "An account's postings, newest first, with their status at the core",
			Role: RoleCustomer, Query: []string{"limit"}, Response: JournalsResponse{}, Status: 200,
			serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				limit, err := limitParam(r)
				if err != nil {
					return nil, err
				}
				l, err := a.Journals(r.Context(), who.customer, r.PathValue("account_id"), "", limit)
				return JournalsResponse{Journals: l}, err
			}},
		{Method: "POST", Path: bankPrefix + "/me/transfers", Summary: "Send a transfer from one of the customer's accounts through ZC (POST /api/transfers with the bank's credentials)",
			Role: RoleCustomer, Request: CustomerTransferRequest{}, Response: orchestrator.SubmitResult{}, Status: 201,
			serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				var b CustomerTransferRequest
				if err := decodeBody(r, &b); err != nil {
					return nil, err
				}
				return a.SubmitCustomerTransfer(r.Context(), who.customer, b)
			}},
		{Method: "GET", Path: bankPrefix + "/me/transfers/{txid}", Summary: "A transfer the customer sent: ZC's QueryResponse for the bank",
			Role: RoleCustomer, ZCQuery: true, Status: 200,
			serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				return a.CustomerTransfer(r.Context(), who.customer, r.PathValue("txid"))
			}},
		{Method: "GET", Path: bankPrefix + "/me/approvals", Summary: "The customer's incoming credits held for approval", Role: RoleCustomer,
			Query: []string{"account_id", "status"}, Response: ApprovalsResponse{}, Status: 200,
			serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				hashes, err := a.CustomerAccountHashes(r.Context(), who.customer)
				if err != nil {
					return nil, err
				}
				l, err := a.Approvals(r.Context(), ApprovalQuery{Accounts: hashes, AccountID: r.URL.Query().Get("account_id"), Status: r.URL.Query().Get("status")})
				return ApprovalsResponse{Approvals: l}, err
			}},
		{Method: "POST", Path: bankPrefix + "/me/approvals/{approval_id}/respond", Summary: "Approve or reject a held credit (HOLD_CONFIRM); ZC is told through resume-credit",
			Role: RoleCustomer, Request: ApprovalDecision{}, Response: Approval{}, Status: 200, serve: respond},

		{Method: "POST", Path: bankPrefix + "/teller/cash/deposit", Summary: "Cash deposit: a credit posting to the core through the outbox, once per idempotency_key",
			Role: RoleTeller, Request: CashRequest{}, Response: CashResponse{}, Status: 201, serve: cash(+1)},
		{Method: "POST", Path: bankPrefix + "/teller/cash/withdrawal", Summary: "Cash withdrawal: a debit posting to the core through the outbox, once per idempotency_key",
			Role: RoleTeller, Request: CashRequest{}, Response: CashResponse{}, Status: 201, serve: cash(-1)},
		{Method: "GET", Path: bankPrefix + "/teller/accounts", Summary: "Every account of the bank with its shadow balances", Role: RoleTeller,
			Response: AccountsResponse{}, Status: 200, serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				l, err := a.Accounts(r.Context(), "")
				return AccountsResponse{Accounts: l}, err
			}},
		{Method: "POST", Path: bankPrefix + "/teller/accounts", Summary: "Open an account at the core (ACMQ over the core link) and register it, once per idempotency_key; initial_deposit is queued as a cash deposit",
			Role: RoleTeller, Request: CreateAccountRequest{}, Response: CreateAccountResponse{}, Status: 201,
			serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				var b CreateAccountRequest
				if err := decodeBody(r, &b); err != nil {
					return nil, err
				}
				return a.CreateAccount(r.Context(), b, who.teller)
			}},
		{Method: "POST", Path: bankPrefix + "/teller/accounts/batch", Summary: "Open several accounts; each item is independent (its own idempotency_key, its own result or error)",
			Role: RoleTeller, Request: BatchAccountsRequest{}, Response: BatchAccountsResponse{}, Status: 200,
			serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				var b BatchAccountsRequest
				if err := decodeBody(r, &b); err != nil {
					return nil, err
				}
				return a.CreateAccounts(r.Context(), b, who.teller)
			}},
		{Method: "PATCH", Path: bankPrefix + "/teller/accounts/{account_id}/status", Summary: "Set an account NORMAL, FROZEN, CLOSING_HOLD or CLOSED (the last two, and NORMAL from CLOSING_HOLD, at the core)",
			Role: RoleTeller, Request: AccountStatusRequest{}, Response: AccountView{}, Status: 200,
			serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				var b AccountStatusRequest
				if err := decodeBody(r, &b); err != nil {
					return nil, err
				}
				return a.SetAccountStatusByID(r.Context(), r.PathValue("account_id"), b.Status, who.teller)
			}},
		{Method: "GET", Path: bankPrefix + "/teller/accounts/{account_id}/journals", Summary: "An account's postings, newest first",
			Role: RoleTeller, Query: []string{"limit"}, Response: JournalsResponse{}, Status: 200,
			serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				limit, err := limitParam(r)
				if err != nil {
					return nil, err
				}
				l, err := a.Journals(r.Context(), "", r.PathValue("account_id"), "", limit)
				return JournalsResponse{Journals: l}, err
			}},
		{Method: "GET", Path: bankPrefix + "/teller/journals", Summary: "The bank's postings, newest first (of one txid with ?txid=)",
			Role: RoleTeller, Query: []string{"txid", "limit"}, Response: JournalsResponse{}, Status: 200,
			serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				limit, err := limitParam(r)
				if err != nil {
					return nil, err
				}
				l, err := a.Journals(r.Context(), "", "", r.URL.Query().Get("txid"), limit)
				return JournalsResponse{Journals: l}, err
			}},
		{Method: "GET", Path: bankPrefix + "/teller/suspense", Summary: "Credits kept in the bank's custody (別段預金) account, with their resolution",
			Role: RoleTeller, Response: SuspenseResponse{}, Status: 200,
			serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				l, err := a.Suspense(r.Context())
				return SuspenseResponse{Suspense: l}, err
			}},
		{Method: "POST", Path: bankPrefix + "/teller/suspense/{suspense_id}/resolve", Summary: "Move a custody credit to an account: a debit of the custody account and a credit of the account, once",
			Role: RoleTeller, Request: SuspenseResolveRequest{}, Response: SuspenseResolution{}, Status: 201,
			serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				var b SuspenseResolveRequest
				if err := decodeBody(r, &b); err != nil {
					return nil, err
				}
				return a.ResolveSuspense(r.Context(), r.PathValue("suspense_id"), b, who.teller)
			}},
		{Method: "GET", Path: bankPrefix + "/teller/approvals", Summary: "Incoming credits held for the bank's review (HOLD_MANUAL) or the customer's (HOLD_CONFIRM)",
			Role: RoleTeller, Query: []string{"account_id", "status"}, Response: ApprovalsResponse{}, Status: 200,
			serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				l, err := a.Approvals(r.Context(), ApprovalQuery{AccountID: r.URL.Query().Get("account_id"), Status: r.URL.Query().Get("status")})
				return ApprovalsResponse{Approvals: l}, err
			}},
		{Method: "POST", Path: bankPrefix + "/teller/approvals/{approval_id}/respond", Summary: "Approve or reject a held credit (HOLD_MANUAL); ZC is told through resume-credit",
			Role: RoleTeller, Request: ApprovalDecision{}, Response: Approval{}, Status: 200, serve: respond},
		{Method: "GET", Path: bankPrefix + "/teller/batch/status", Summary: "The core's batch windows, the outbox by status, open drifts",
			Role: RoleTeller, Response: BatchStatus{}, Status: 200,
			serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				return a.BatchStatus(r.Context())
			}},
		{Method: "GET", Path: bankPrefix + "/teller/audit-log", Summary: "The bank side's audit trail, newest first",
			Role: RoleTeller, Query: []string{"txid", "limit"}, Response: AuditLogResponse{}, Status: 200,
			serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				limit, err := limitParam(r)
				if err != nil {
					return nil, err
				}
				l, err := a.AuditLog(r.Context(), r.URL.Query().Get("txid"), limit)
				return AuditLogResponse{Entries: l}, err
			}},

		{Method: "GET", Path: bankPrefix + "/filters", Summary: "Incoming-transfer filters (of one account and the bank-wide ones with ?account_id=)",
			Role: RoleFilter, Query: []string{"account_id"}, Response: FiltersResponse{}, Status: 200,
			serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				acct := r.URL.Query().Get("account_id")
				if err := a.mayUseAccount(r, who, acct); err != nil {
					return nil, err
				}
				l, err := a.Filters(r.Context(), acct)
				return FiltersResponse{Filters: l}, err
			}},
		{Method: "POST", Path: bankPrefix + "/filters", Summary: "Create an incoming-transfer filter (AMOUNT_LIMIT, SENDER_BLOCK, SENDER_BANK_BLOCK, EDI_PATTERN, REQUIRE_APPROVAL)",
			Role: RoleFilter, Request: FilterRequest{}, Response: Filter{}, Status: 201,
			serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				var b FilterRequest
				if err := decodeBody(r, &b); err != nil {
					return nil, err
				}
				if who.teller == "" && (b.Scope == ScopeBank || b.AccountID == "") {
					return nil, domainerr.New("CROSS_PARTICIPANT_SCOPE", "a customer sets filters on its own accounts only", map[string]any{"scope": b.Scope})
				}
				if err := a.mayUseAccount(r, who, b.AccountID); err != nil {
					return nil, err
				}
				return a.CreateFilter(r.Context(), b, who.actor())
			}},
		{Method: "PATCH", Path: bankPrefix + "/filters/{filter_id}", Summary: "Switch a filter on or off",
			Role: RoleFilter, Request: FilterPatch{}, Response: Filter{}, Status: 200,
			serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				var b FilterPatch
				if err := decodeBody(r, &b); err != nil {
					return nil, err
				}
				if b.IsActive == nil {
					return nil, domainerr.New("MISSING_FIELD", "is_active is required", map[string]any{"field": "is_active"})
				}
				if err := a.mayUseFilter(r, who); err != nil {
					return nil, err
				}
				return a.SetFilterActive(r.Context(), r.PathValue("filter_id"), *b.IsActive, who.actor())
			}},
		{Method: "DELETE", Path: bankPrefix + "/filters/{filter_id}", Summary: "Delete a filter (approvals it created stay)",
			Role: RoleFilter, Response: Deleted{}, Status: 200,
			serve: func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
				if err := a.mayUseFilter(r, who); err != nil {
					return nil, err
				}
				id := r.PathValue("filter_id")
				return Deleted{FilterID: id, Deleted: true}, a.DeleteFilter(r.Context(), id, who.actor())
			}},
	}
}

func respond(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
	var b ApprovalDecision
	if err := decodeBody(r, &b); err != nil {
		return nil, err
	}
	if b.Approved == nil {
		return nil, domainerr.New("MISSING_FIELD", "approved is required", map[string]any{"field": "approved"})
	}
	return a.RespondApproval(r.Context(), r.PathValue("approval_id"), *b.Approved, Decider{CustomerID: who.customer, TellerID: who.teller})
}

func cash(direction int) func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
	return func(a *Adapter, w http.ResponseWriter, r *http.Request, who identity) (any, error) {
		var b CashRequest
		if err := decodeBody(r, &b); err != nil {
			return nil, err
		}
		return a.Cash(r.Context(), b, direction, who.teller)
	}
}

// mayUseAccount: a customer names only its own accounts (another is
// ACCOUNT_NOT_FOUND, as a missing one); a teller any.
func (a *Adapter) mayUseAccount(r *http.Request, who identity, accountID string) error {
	if who.teller != "" {
		return nil
	}
	if accountID == "" {
		return domainerr.New("MISSING_FIELD", "account_id is required for a customer", map[string]any{"field": "account_id"})
	}
	return a.db.Read(r.Context(), func(tx *store.Tx) error {
		_, err := a.customerAccountTx(r.Context(), tx, who.customer, accountID)
		return err
	})
}

// mayUseFilter: a customer changes only a filter on its own account.
func (a *Adapter) mayUseFilter(r *http.Request, who identity) error {
	if who.teller != "" {
		return nil
	}
	f, err := a.Filter(r.Context(), r.PathValue("filter_id"))
	if err != nil {
		return err
	}
	if f.Scope != ScopeAccount {
		return domainerr.New("NOT_FOUND", "no filter with this filter_id", map[string]any{"filter_id": f.FilterID})
	}
	if err := a.mayUseAccount(r, who, f.AccountID); err != nil {
		return domainerr.New("NOT_FOUND", "no filter with this filter_id", map[string]any{"filter_id": f.FilterID})
	}
	return nil
}

func limitParam(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1000 {
		return 0, domainerr.New("INVALID_REQUEST", "limit must be 1..1000", map[string]any{"field": "limit", "value": v})
	}
	return n, nil
}

// decodeBody reads a JSON body with strictjson's rules, unknown members
// refused.
func decodeBody(r *http.Request, v any) error {
	if err := strictjson.CheckContentType(r.Header.Get("Content-Type")); err != nil {
		return mediaTypeError{err}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return domainerr.Wrap("INVALID_REQUEST", err, "cannot read request body", nil)
	}
	if len(body) > MaxBodyBytes {
		return domainerr.New("INVALID_REQUEST", "request body too large", map[string]any{"max_bytes": MaxBodyBytes})
	}
	return strictjson.Decode(body, v, strictjson.Options{DisallowUnknownFields: true})
}

// BankAPI serves BankRoutes for this bank. The caller (the gateway) has
// authenticated the bank; the handler checks the path's bank, X-Bank-Id
// when sent, and the role's identity header (401 UNAUTHORIZED without
// it), and answers errors in the catalog shape.
func (a *Adapter) BankAPI() http.Handler {
	a.bankAPIOnce.Do(func() {
		mux := http.NewServeMux()
		for _, rt := range BankRoutes() {
			rt := rt
			mux.HandleFunc(rt.Pattern(), func(w http.ResponseWriter, r *http.Request) { a.serveBank(w, r, rt) })
		}
		a.bankAPI = mux
	})
	return a.bankAPI
}

// mediaTypeError is a body sent with another Content-Type (415).
type mediaTypeError struct{ error }

func (e mediaTypeError) Unwrap() error { return e.error }

func (a *Adapter) serveBank(w http.ResponseWriter, r *http.Request, rt BankRoute) {
	rid := zclog.RequestIDFrom(r.Context())
	if bank := r.PathValue("bank_id"); bank != a.bank {
		writeError(w, rid, domainerr.New("PARTICIPANT_NOT_FOUND", "this adapter does not serve bank "+bank, map[string]any{"bank_id": bank}))
		return
	}
	if h := r.Header.Get(HeaderBankID); h != "" && h != a.bank {
		writeError(w, rid, domainerr.New("CROSS_PARTICIPANT_SCOPE", "X-Bank-Id names another bank than the path",
			map[string]any{"bank_id": a.bank, "header_bank_id": h}))
		return
	}
	who := identity{customer: r.Header.Get(HeaderCustomerID), teller: r.Header.Get(HeaderTellerID)}
	var missing string
	switch rt.Role {
	case RoleCustomer:
		if who.customer == "" {
			missing = HeaderCustomerID
		}
		who.teller = ""
	case RoleTeller:
		if who.teller == "" {
			missing = HeaderTellerID
		}
		who.customer = ""
	case RoleFilter:
		if who.teller == "" && who.customer == "" {
			missing = HeaderTellerID + " or " + HeaderCustomerID
		}
	}
	if missing != "" {
		writeError(w, rid, domainerr.New("UNAUTHORIZED", missing+" is required on this route", map[string]any{"header": missing}))
		return
	}
	out, err := rt.serve(a, w, r, who)
	if err != nil {
		if errors.As(err, new(mediaTypeError)) {
			writeErrorBody(w, rid, http.StatusUnsupportedMediaType, err)
			return
		}
		writeError(w, rid, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rt.Status)
	_ = json.NewEncoder(w).Encode(out)
}
