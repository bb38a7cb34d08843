package adapter

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// recordingResumer is a CreditResumer that records what the bank told ZC.
type recordingResumer struct {
	mu    sync.Mutex
	calls []bankapi.ResumeCreditRequest
	fail  error
}

func (r *recordingResumer) ResumeCredit(_ context.Context, txid string, req bankapi.ResumeCreditRequest) (bankapi.ResumeCreditResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return bankapi.ResumeCreditResponse{}, r.fail
	}
	r.calls = append(r.calls, req)
	return bankapi.ResumeCreditResponse{TxID: txid, Result: bankapi.ResultResumed}, nil
}

func ptr(v int64) *int64 { return &v }

func TestFilterValidation(t *testing.T) {
	for _, c := range []struct {
		name  string
		req   FilterRequest
		field string // "" = valid
	}{
		{"amount limit", FilterRequest{AccountID: "1", FilterType: FilterAmountLimit, Condition: FilterCondition{MaxAmount: ptr(10)}}, ""},
		{"amount limit without max", FilterRequest{AccountID: "1", FilterType: FilterAmountLimit}, "condition.max_amount"},
		{"sender block without sender", FilterRequest{AccountID: "1", FilterType: FilterSenderBlock}, "condition.payer_account_hash"},
		{"bank block without bank", FilterRequest{AccountID: "1", FilterType: FilterSenderBankBlock}, "condition.payer_bank_id"},
		{"approval rejects", FilterRequest{AccountID: "1", FilterType: FilterRequireApproval, Action: ActionReject}, "action"},
		{"EDI pattern", FilterRequest{AccountID: "1", FilterType: FilterEDIPattern, Condition: FilterCondition{EDIPattern: `^INV-\d{6}$`}}, ""},
		{"EDI without pattern", FilterRequest{AccountID: "1", FilterType: FilterEDIPattern}, "condition.edi_pattern"},
		{"EDI bad pattern", FilterRequest{AccountID: "1", FilterType: FilterEDIPattern, Condition: FilterCondition{EDIPattern: "INV-(\\d+"}}, "condition.edi_pattern"},
		{"EDI backreference", FilterRequest{AccountID: "1", FilterType: FilterEDIPattern, Condition: FilterCondition{EDIPattern: `(a)\1`}}, "condition.edi_pattern"},
		{"EDI pattern too long", FilterRequest{AccountID: "1", FilterType: FilterEDIPattern, Condition: FilterCondition{EDIPattern: strings.Repeat("a", MaxEDIPatternLength+1)}}, "condition.edi_pattern"},
		{"unknown type", FilterRequest{AccountID: "1", FilterType: "NAME_BLOCK"}, "filter_type"},
		{"bank scope with account", FilterRequest{Scope: ScopeBank, AccountID: "1", FilterType: FilterRequireApproval}, "account_id"},
		{"account scope without account", FilterRequest{FilterType: FilterRequireApproval}, "account_id"},
		{"bad action", FilterRequest{AccountID: "1", FilterType: FilterRequireApproval, Action: "MAYBE"}, "action"},
	} {
		err := validateFilter(&c.req)
		de, _ := domainerr.As(err)
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.field != "" && (de == nil || de.Details["field"] != c.field):
			t.Errorf("%s: %v, want a refusal naming %s", c.name, err, c.field)
		}
	}
	r := FilterRequest{AccountID: "1", FilterType: FilterRequireApproval}
	if validateFilter(&r) != nil || r.Action != ActionHoldConfirm || r.Scope != ScopeAccount {
		t.Fatalf("defaults: %+v", r)
	}
	// The refusal of a bad pattern says where it goes wrong.
	bad := FilterRequest{AccountID: "1", FilterType: FilterEDIPattern, Condition: FilterCondition{EDIPattern: "ABC[0-9"}}
	de, _ := domainerr.As(validateFilter(&bad))
	if de == nil || de.Details["byte_offset"] != 3 || de.Details["error_code"] != "missing closing ]" {
		t.Fatalf("bad pattern refusal: %+v", de)
	}
}

func TestEDIPatternMatches(t *testing.T) {
	f := Filter{FilterType: FilterEDIPattern, Condition: FilterCondition{EDIPattern: `^INV-\d{6}`}}
	for _, c := range []struct {
		edi  string
		want bool
	}{
		{"INV-202612 ﾃﾞﾝｷﾀﾞｲ", true},
		{"INV-2026", false},
		{"ﾃﾞﾝｷﾀﾞｲ INV-202612", false},
		{"", false},
	} {
		req := credit("r", "TX-1", "h:a", 100)
		req.EdiRef = c.edi
		if got := f.matches(req); got != c.want {
			t.Errorf("edi_ref %q: matches %v, want %v", c.edi, got, c.want)
		}
	}
}

// TestFiltersScreenExecuteCredit: a REJECT filter refuses a credit before
// anything is posted; a HOLD filter answers HELD with one approval per
// txid until it is decided; the decision is told to ZC once; an approved
// credit is then posted once; a credit posted before a filter was added
// replays as OK.
func TestFiltersScreenExecuteCredit(t *testing.T) {
	res := &recordingResumer{}
	h := newHarness(t, func(c *Config) { c.Resume = res })
	h.account("h:a", "0000001", "A", 1000)
	h.account("h:b", "0000002", "B", 1000)
	if err := h.a.LinkCustomer(h.ctx, "cust-b", "0000002"); err != nil {
		t.Fatal(err)
	}
	posted, err := h.a.ExecuteCredit(h.ctx, credit("r0", "TX-0", "h:a", 5000))
	if err != nil || posted.Result != bankapi.ResultOK {
		t.Fatalf("credit before filters: %+v %v", posted, err)
	}
	if _, err := h.a.CreateFilter(h.ctx, FilterRequest{AccountID: "0000001", FilterType: FilterAmountLimit,
		Condition: FilterCondition{MaxAmount: ptr(1000)}}, "TELLER:t"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.a.CreateFilter(h.ctx, FilterRequest{AccountID: "0000002", FilterType: FilterRequireApproval}, "CUSTOMER:cust-b"); err != nil {
		t.Fatal(err)
	}
	if r, err := h.a.ExecuteCredit(h.ctx, credit("r0b", "TX-0", "h:a", 5000)); err != nil || r.BankProofRef.ProofID != posted.BankProofRef.ProofID {
		t.Fatalf("a txid credited before the filter: %+v %v", r, err)
	}
	_, err = h.a.ExecuteCredit(h.ctx, credit("r1", "TX-1", "h:a", 1500))
	if de, ok := domainerr.As(err); !ok || de.Code != "STATE_GUARD" || de.Details["cause"] != CauseFilterRejected {
		t.Fatalf("over the limit: %v", err)
	}
	if r, err := h.a.ExecuteCredit(h.ctx, credit("r2", "TX-2", "h:a", 900)); err != nil || r.Result != bankapi.ResultOK {
		t.Fatalf("under the limit: %+v %v", r, err)
	}
	held, err := h.a.ExecuteCredit(h.ctx, credit("r3", "TX-3", "h:b", 700))
	if err != nil || held.Result != bankapi.ResultHeld || held.ApprovalID == "" {
		t.Fatalf("held: %+v %v", held, err)
	}
	again, err := h.a.ExecuteCredit(h.ctx, credit("r3", "TX-3", "h:b", 700))
	if err != nil || again != held {
		t.Fatalf("held again: %+v %v, want %+v", again, err, held)
	}
	h.drain()
	if a, b := h.core.bal("0000001"), h.core.bal("0000002"); a != 1000+5000+900 || b != 1000 {
		t.Fatalf("cores %d %d: only the credits let through are posted", a, b)
	}
	// The teller may not decide a HOLD_CONFIRM credit; another customer
	// does not see it.
	if _, err := h.a.RespondApproval(h.ctx, held.ApprovalID, true, Decider{TellerID: "t"}); domainerr.Code(err) != "CROSS_PARTICIPANT_SCOPE" {
		t.Fatalf("teller on HOLD_CONFIRM: %v", err)
	}
	if _, err := h.a.RespondApproval(h.ctx, held.ApprovalID, true, Decider{CustomerID: "cust-x"}); domainerr.Code(err) != "NOT_FOUND" {
		t.Fatalf("another customer: %v", err)
	}
	// ZC unreachable: the decision is kept; responding again tells ZC.
	res.fail = domainerr.New("BANK_ERROR", "down", nil)
	p, err := h.a.RespondApproval(h.ctx, held.ApprovalID, true, Decider{CustomerID: "cust-b"})
	if err == nil || p.Status != ApprovalApproved || p.ResumeNotified {
		t.Fatalf("decision while ZC is down: %+v %v", p, err)
	}
	res.fail = nil
	if p, err = h.a.RespondApproval(h.ctx, held.ApprovalID, true, Decider{CustomerID: "cust-b"}); err != nil || !p.ResumeNotified {
		t.Fatalf("respond again: %+v %v", p, err)
	}
	if _, err := h.a.RespondApproval(h.ctx, held.ApprovalID, false, Decider{CustomerID: "cust-b"}); domainerr.Code(err) != "STATE_GUARD" {
		t.Fatalf("another decision: %v", err)
	}
	if len(res.calls) != 1 || !res.calls[0].Approved || res.calls[0].ApprovalID != held.ApprovalID || res.calls[0].BankID != "001" ||
		res.calls[0].DecidedBy != "CUSTOMER:cust-b" {
		t.Fatalf("told ZC %+v", res.calls)
	}
	ok, err := h.a.ExecuteCredit(h.ctx, credit("r3", "TX-3", "h:b", 700))
	if err != nil || ok.Result != bankapi.ResultOK {
		t.Fatalf("approved credit: %+v %v", ok, err)
	}
	h.drain()
	if b := h.core.bal("0000002"); b != 1700 {
		t.Fatalf("payee core %d after the approved credit, want 1700", b)
	}
}

// TestFilterMatches: each type's condition, and the sender fields execute-credit carries.
func TestFilterMatches(t *testing.T) {
	req := bankapi.ExecuteCreditRequest{Amount: jpy(5000), PayerBankID: "001", PayerAccountHash: "h:p"}
	for _, c := range []struct {
		f    Filter
		want bool
	}{
		{Filter{FilterType: FilterAmountLimit, Condition: FilterCondition{MaxAmount: ptr(5000)}}, false},
		{Filter{FilterType: FilterAmountLimit, Condition: FilterCondition{MaxAmount: ptr(4999)}}, true},
		{Filter{FilterType: FilterSenderBlock, Condition: FilterCondition{PayerAccountHash: "h:p"}}, true},
		{Filter{FilterType: FilterSenderBlock, Condition: FilterCondition{PayerAccountHash: "h:q"}}, false},
		{Filter{FilterType: FilterSenderBankBlock, Condition: FilterCondition{PayerBankID: "001"}}, true},
		{Filter{FilterType: FilterSenderBankBlock, Condition: FilterCondition{PayerBankID: "002"}}, false},
		{Filter{FilterType: FilterRequireApproval}, true},
		{Filter{FilterType: FilterRequireApproval, Condition: FilterCondition{MinAmount: ptr(5001)}}, false},
	} {
		if got := c.f.matches(req); got != c.want {
			t.Errorf("%s %+v: matches = %v", c.f.FilterType, c.f.Condition, got)
		}
	}
}
