package node

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
)

// bankCall is a bank-side API call with bank's own key and an identity
// header ("customer" or "teller").
func (n *Node) bankCall(t testing.TB, method, bank, path, role, who, body string) answer {
	t.Helper()
	hdr := map[string]string{}
	switch role {
	case "customer":
		hdr[adapter.HeaderCustomerID] = who
	case "teller":
		hdr[adapter.HeaderTellerID] = who
	}
	return n.do(t, method, "/bank/"+bank+"/v1"+path, n.Config.KeyFor(bank), hdr, body)
}

func decodeInto(t testing.TB, a answer, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("decode %s: %v", a.body, err)
	}
}

// errorBody asserts a catalog error body with the status and reason code.
func errorBody(t testing.TB, a answer, status int, code string) domainerr.Body {
	t.Helper()
	var b domainerr.Body
	if err := json.Unmarshal(a.body, &b); err != nil || a.status != status || b.ReasonCode != code || b.Category == "" || b.RequestID == "" ||
		b.RequestID != a.header.Get("X-Request-Id") {
		t.Fatalf("want %d %s in the catalog shape, got %d %s", status, code, a.status, a.body)
	}
	return b
}

// chain is the FinalityLog of txid without the core posting reports:
// event types, and each entry's reason_code and bank_cause (payload).
func (n *Node) chain(t testing.TB, txid string) (types []string, reasons map[string]string, causes map[string]string) {
	t.Helper()
	ctx := context.Background()
	reasons, causes = map[string]string{}, map[string]string{}
	err := n.DB.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT event_type, COALESCE(json_extract(payload_json, '$.reason_code'), ''),
			COALESCE(json_extract(payload_json, '$.bank_cause'), '') FROM FinalityLog WHERE txid = ? ORDER BY event_seq`, txid)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e, r, c string
			if err := rows.Scan(&e, &r, &c); err != nil {
				return err
			}
			if strings.HasPrefix(e, "CorePosting") {
				continue // the cores' posting reports land in between
			}
			types = append(types, e)
			if r != "" {
				reasons[e] = r
			}
			if c != "" {
				causes[e] = c
			}
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return types, reasons, causes
}

// heldH is the amount of txid's H reservations not released.
func (n *Node) heldH(t testing.TB, txid string) int64 {
	t.Helper()
	ctx := context.Background()
	var v int64
	if err := n.DB.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(amount), 0) FROM HReservations WHERE txid = ? AND is_released = 0`, txid).Scan(&v)
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

func transfer(payer, payee string, key string, amount int64) string {
	return fmt.Sprintf(`{"lane":"EXPRESS","amount":{"value":%d,"currency":"JPY"},"payer":{"bank_id":"001","account_hash":"%s"},`+
		`"payee":{"bank_id":"002","account_hash":"%s"},"purpose":"P2P","participant_ref":"ref-%s","schema_version":"1.1","idempotency_key":"%s"}`,
		amount, payer, payee, key, key)
}

func (n *Node) submit(t testing.TB, body string) string {
	t.Helper()
	a := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, body)
	if a.status != 201 {
		t.Fatalf("POST /api/transfers: %d %s", a.status, a.body)
	}
	return a.field("txid")
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestBankSideAuthentication: the bank-side routes take the path bank's
// own API key only; everything else is refused in the catalog shape.
func TestBankSideAuthentication(t *testing.T) {
	n := start(t)
	path := "/bank/001/v1/me/accounts"
	cust := map[string]string{adapter.HeaderCustomerID: "cust-001-1"}
	errorBody(t, n.do(t, "GET", path, "", cust, ""), 401, "UNAUTHORIZED")
	errorBody(t, n.do(t, "GET", path, "not-a-key", cust, ""), 401, "UNAUTHORIZED")
	errorBody(t, n.do(t, "GET", path, n.Config.KeyFor("002"), cust, ""), 403, "CROSS_PARTICIPANT_SCOPE")
	errorBody(t, n.do(t, "GET", path, "", map[string]string{"X-Cron-Secret": n.Config.CronSecret, adapter.HeaderCustomerID: "cust-001-1"}, ""),
		403, "CROSS_PARTICIPANT_SCOPE")
	errorBody(t, n.do(t, "GET", path, n.Config.KeyFor("001"), nil, ""), 401, "UNAUTHORIZED") // no X-Customer-Id
	errorBody(t, n.do(t, "GET", path, n.Config.KeyFor("001"), map[string]string{adapter.HeaderCustomerID: "cust-001-1", adapter.HeaderBankID: "002"}, ""),
		403, "CROSS_PARTICIPANT_SCOPE")
	errorBody(t, n.bankCall(t, "GET", "001", "/teller/accounts", "customer", "cust-001-1", ""), 401, "UNAUTHORIZED") // a teller route
	// Another customer's account is not found, exactly as a missing one.
	errorBody(t, n.bankCall(t, "GET", "001", "/me/accounts/100-1-0000001/balance", "customer", "cust-001-2", ""), 404, "ACCOUNT_NOT_FOUND")
	errorBody(t, n.bankCall(t, "GET", "001", "/me/accounts/100-1-9999999/balance", "customer", "cust-001-2", ""), 404, "ACCOUNT_NOT_FOUND")
	// resume-credit is internal: no cron secret, 403.
	errorBody(t, n.do(t, "POST", "/internal/transfers/TX-1/resume-credit", n.Config.KeyFor("002"), nil,
		`{"bank_id":"002","approval_id":"APR-1","approved":true,"decided_by":"x"}`), 403, "UNAUTHORIZED")
	if a := n.bankCall(t, "GET", "001", "/me/accounts", "customer", "cust-001-1", ""); a.status != 200 {
		t.Fatalf("own key: %d %s", a.status, a.body)
	}
}

// TestBankCustomerAndTellerThroughTheCore: a customer's balance and
// postings match the core after a transfer; a teller's cash deposit and
// withdrawal move the core balance once per idempotency key and reconcile
// at EOD as in-band postings (no drift Case), while an out-of-band change
// of another account at the core is a drift.
func TestBankCustomerAndTellerThroughTheCore(t *testing.T) {
	n := start(t)
	ctx := context.Background()
	payerCore := n.Config.Banks[0].Accounts[0].CoreAccount // 100-1-0000001 of cust-001-1
	txid := n.submit(t, transfer("h:001-0001", "h:002-0001", "cust-1", 900))
	n.waitState(t, txid, "SETTLED", 20*time.Second)
	p0 := n.Config.Banks[0].Accounts[0].Balance
	n.waitBalances(t, map[[2]string]int64{{"001", payerCore}: p0 - 900})

	var accts adapter.AccountsResponse
	a := n.bankCall(t, "GET", "001", "/me/accounts", "customer", "cust-001-1", "")
	decodeInto(t, a, &accts)
	if a.status != 200 || len(accts.Accounts) != 1 || accts.Accounts[0].AccountID != payerCore || accts.Accounts[0].AccountHash != "h:001-0001" {
		t.Fatalf("accounts: %d %s", a.status, a.body)
	}
	var bal adapter.Balance
	a = n.bankCall(t, "GET", "001", "/me/accounts/"+payerCore+"/balance", "customer", "cust-001-1", "")
	decodeInto(t, a, &bal)
	if a.status != 200 || bal.Source != adapter.SourceCore || bal.Balance != n.coreBalance(t, "001", payerCore) || bal.Currency != "JPY" {
		t.Fatalf("balance: %d %s (core %d)", a.status, a.body, n.coreBalance(t, "001", payerCore))
	}
	var js adapter.JournalsResponse
	deadline := time.Now().Add(10 * time.Second)
	for {
		a = n.bankCall(t, "GET", "001", "/me/accounts/"+payerCore+"/transactions", "customer", "cust-001-1", "")
		decodeInto(t, a, &js)
		if len(js.Journals) == 1 && js.Journals[0].Status == "APPLIED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("transactions: %d %s", a.status, a.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if j := js.Journals[0]; j.TxID != txid || j.Kind != "DEBIT" || j.Direction != -1 || j.Amount != 900 {
		t.Fatalf("journal %+v", j)
	}

	// Teller cash on account 2, once per idempotency key.
	acct2 := n.Config.Banks[0].Accounts[1].CoreAccount
	q0 := n.coreBalance(t, "001", acct2)
	dep := `{"account_id":"` + acct2 + `","amount":5000,"idempotency_key":"cash-1","memo":"counter 3"}`
	var c1, c2 adapter.CashResponse
	a = n.bankCall(t, "POST", "001", "/teller/cash/deposit", "teller", "T-7", dep)
	decodeInto(t, a, &c1)
	if a.status != 201 || c1.Journal.Kind != "CREDIT" || c1.ProjectedBalance != q0+5000 {
		t.Fatalf("deposit: %d %s", a.status, a.body)
	}
	a = n.bankCall(t, "POST", "001", "/teller/cash/deposit", "teller", "T-7", dep)
	decodeInto(t, a, &c2)
	if a.status != 201 || c2.Journal.JournalID != c1.Journal.JournalID {
		t.Fatalf("deposit again: %d %s, want journal %s", a.status, a.body, c1.Journal.JournalID)
	}
	errorBody(t, n.bankCall(t, "POST", "001", "/teller/cash/deposit", "teller", "T-7",
		`{"account_id":"`+acct2+`","amount":6000,"idempotency_key":"cash-1"}`), 409, "IDEMPOTENCY_KEY_CONFLICT")
	n.waitBalances(t, map[[2]string]int64{{"001", acct2}: q0 + 5000})
	a = n.bankCall(t, "POST", "001", "/teller/cash/withdrawal", "teller", "T-7", `{"account_id":"`+acct2+`","amount":2000,"idempotency_key":"cash-2"}`)
	if a.status != 201 {
		t.Fatalf("withdrawal: %d %s", a.status, a.body)
	}
	errorBody(t, n.bankCall(t, "POST", "001", "/teller/cash/withdrawal", "teller", "T-7",
		fmt.Sprintf(`{"account_id":"%s","amount":%d,"idempotency_key":"cash-3"}`, acct2, q0+3001)), 409, "RESERVE_FAILED")
	errorBody(t, n.bankCall(t, "POST", "001", "/teller/cash/deposit", "teller", "T-7",
		`{"account_id":"`+acct2+`","amount":0,"idempotency_key":"cash-4"}`), 400, "INVALID_AMOUNT")
	n.waitBalances(t, map[[2]string]int64{{"001", acct2}: q0 + 3000})
	time.Sleep(50 * time.Millisecond)
	if got := n.coreBalance(t, "001", acct2); got != q0+3000 {
		t.Fatalf("core after the cash postings %d, want %d", got, q0+3000)
	}
	var audit adapter.AuditLogResponse
	decodeInto(t, n.bankCall(t, "GET", "001", "/teller/audit-log?txid="+c1.Journal.TxID, "teller", "T-7", ""), &audit)
	if len(audit.Entries) != 1 || audit.Entries[0].Event != "TELLER_CASH" {
		t.Fatalf("audit log of the deposit: %+v", audit)
	}

	// An out-of-band change at the core on account 3 (control).
	acct3 := n.Config.Banks[0].Accounts[2].CoreAccount
	if err := n.Banks["001"].Core.AdjustBalanceOutOfBand(ctx, acct3, 777); err != nil {
		t.Fatal(err)
	}
	// The balance file's cutoff has a resolution of one second and an
	// account that moved in the cutoff's second is not compared: let the
	// second pass, so every account is compared.
	time.Sleep(1100 * time.Millisecond)
	secret := map[string]string{"X-Cron-Secret": n.Config.CronSecret}
	for _, job := range []string{"outbox-drain", "eod"} {
		if r := n.do(t, "POST", "/internal/cron/"+job, "", secret, ""); r.status != 200 {
			t.Fatalf("%s: %d %s", job, r.status, r.body)
		}
	}
	var drifted []string
	db := n.Banks["001"].Adapter.DB()
	if err := db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT account_hash FROM AdapterReconDrift WHERE bank_id = '001' ORDER BY account_hash`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var h string
			rows.Scan(&h)
			drifted = append(drifted, h)
		}
		return rows.Err()
	}); err != nil {
		t.Fatal(err)
	}
	if !equal(drifted, []string{"h:001-0003"}) {
		t.Fatalf("drifts %v, want only the out-of-band account h:001-0003 (the teller's postings are in-band)", drifted)
	}
	var status adapter.BatchStatus
	decodeInto(t, n.bankCall(t, "GET", "001", "/teller/batch/status", "teller", "T-7", ""), &status)
	if status.Outbox["APPLIED"] < 3 || status.OpenDrifts != 1 {
		t.Fatalf("batch status %+v", status)
	}
}

// TestIncomingFiltersThroughTheCores: each filter rule, end to end through
// both adapters and cores, with the FinalityLog, the core balances and H.
func TestIncomingFiltersThroughTheCores(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	n, err := Start(context.Background(), Options{DataDir: scratch(t), Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	core := func(bank string, i int) string {
		return n.Config.Banks[map[string]int{"001": 0, "002": 1}[bank]].Accounts[i].CoreAccount
	}
	filter := func(role, who, body string) adapter.Filter {
		t.Helper()
		var f adapter.Filter
		a := n.bankCall(t, "POST", "002", "/filters", role, who, body)
		decodeInto(t, a, &f)
		if a.status != 201 || f.FilterID == "" || !f.IsActive {
			t.Fatalf("create filter: %d %s", a.status, a.body)
		}
		return f
	}
	// h:002-0001: AMOUNT_LIMIT 1000, REJECT (teller).
	filter("teller", "T-1", `{"scope":"ACCOUNT","account_id":"`+core("002", 0)+`","filter_type":"AMOUNT_LIMIT","condition":{"max_amount":1000},"action":"REJECT"}`)
	// h:002-0002: SENDER_BLOCK of h:001-0002 (its customer), and
	// REQUIRE_APPROVAL HOLD_MANUAL from 5000 (teller).
	filter("customer", "cust-002-2", `{"account_id":"`+core("002", 1)+`","filter_type":"SENDER_BLOCK","condition":{"payer_account_hash":"h:001-0002"}}`)
	filter("teller", "T-1", `{"account_id":"`+core("002", 1)+`","filter_type":"REQUIRE_APPROVAL","condition":{"min_amount":5000},"action":"HOLD_MANUAL"}`)
	// h:002-0003: REQUIRE_APPROVAL, HOLD_CONFIRM (its customer).
	filter("customer", "cust-002-3", `{"account_id":"`+core("002", 2)+`","filter_type":"REQUIRE_APPROVAL","condition":{}}`)
	// Refusals of the filter API itself.
	errorBody(t, n.bankCall(t, "POST", "002", "/filters", "customer", "cust-002-3",
		`{"account_id":"`+core("002", 0)+`","filter_type":"AMOUNT_LIMIT","condition":{"max_amount":1}}`), 404, "ACCOUNT_NOT_FOUND")
	errorBody(t, n.bankCall(t, "POST", "002", "/filters", "teller", "T-1",
		`{"account_id":"`+core("002", 0)+`","filter_type":"EDI_PATTERN","condition":{}}`), 400, "INVALID_REQUEST")
	var fl adapter.FiltersResponse
	decodeInto(t, n.bankCall(t, "GET", "002", "/filters?account_id="+core("002", 1), "customer", "cust-002-2", ""), &fl)
	if len(fl.Filters) != 2 {
		t.Fatalf("filters of account 2: %+v", fl)
	}

	p := map[string]int64{}
	for i := 0; i < 3; i++ {
		p["001/"+core("001", i)] = n.coreBalance(t, "001", core("001", i))
		p["002/"+core("002", i)] = n.coreBalance(t, "002", core("002", i))
	}
	bal := func(bank string, i int) int64 { return p[bank+"/"+core(bank, i)] }

	// AMOUNT_LIMIT: 1500 > 1000 is refused, 800 goes through.
	refused := n.submit(t, transfer("h:001-0001", "h:002-0001", "f-amount", 1500))
	n.waitState(t, refused, "SUSPENDED", 20*time.Second)
	passed := n.submit(t, transfer("h:001-0001", "h:002-0001", "f-amount-ok", 800))
	n.waitState(t, passed, "SETTLED", 20*time.Second)
	types, reasons, causes := n.chain(t, refused)
	if types[len(types)-1] != "Suspended" || reasons["Suspended"] != orchestrator.ReasonExecCreditFailed || causes["Suspended"] != adapter.CauseFilterRejected {
		t.Fatalf("AMOUNT_LIMIT chain %v %v %v", types, reasons, causes)
	}
	if h := n.heldH(t, refused); h != 1500 {
		t.Fatalf("AMOUNT_LIMIT: H %d, want 1500 still reserved while SUSPENDED", h)
	}

	// SENDER_BLOCK: from h:001-0002 refused; from h:001-0001 (6000 would be
	// held by the HOLD_MANUAL filter, so 700) goes through.
	blocked := n.submit(t, transfer("h:001-0002", "h:002-0002", "f-sender", 700))
	n.waitState(t, blocked, "SUSPENDED", 20*time.Second)
	other := n.submit(t, transfer("h:001-0001", "h:002-0002", "f-sender-ok", 700))
	n.waitState(t, other, "SETTLED", 20*time.Second)
	if _, reasons, causes := n.chain(t, blocked); reasons["Suspended"] != orchestrator.ReasonExecCreditFailed || causes["Suspended"] != adapter.CauseFilterRejected {
		t.Fatalf("SENDER_BLOCK chain %v %v", reasons, causes)
	}

	// REQUIRE_APPROVAL, HOLD_CONFIRM, approved by the customer.
	held := n.submit(t, transfer("h:001-0003", "h:002-0003", "f-confirm", 2000))
	n.waitState(t, held, "SUSPENDED", 20*time.Second)
	if _, reasons, _ := n.chain(t, held); reasons["Suspended"] != orchestrator.ReasonSuspendCreditApproval {
		t.Fatalf("held chain %v", reasons)
	}
	if h := n.heldH(t, held); h != 2000 {
		t.Fatalf("held: H %d, want 2000", h)
	}
	var aps adapter.ApprovalsResponse
	decodeInto(t, n.bankCall(t, "GET", "002", "/me/approvals?status=PENDING", "customer", "cust-002-3", ""), &aps)
	if len(aps.Approvals) != 1 || aps.Approvals[0].TxID != held || aps.Approvals[0].Amount != 2000 || aps.Approvals[0].AccountID != core("002", 2) {
		t.Fatalf("approvals of cust-002-3: %+v", aps)
	}
	apr := aps.Approvals[0].ApprovalID
	decodeInto(t, n.bankCall(t, "GET", "002", "/me/approvals", "customer", "cust-002-1", ""), &aps)
	if len(aps.Approvals) != 0 {
		t.Fatalf("another customer sees %+v", aps)
	}
	errorBody(t, n.bankCall(t, "POST", "002", "/teller/approvals/"+apr+"/respond", "teller", "T-1", `{"approved":true}`), 403, "CROSS_PARTICIPANT_SCOPE")
	errorBody(t, n.bankCall(t, "POST", "002", "/me/approvals/"+apr+"/respond", "customer", "cust-002-1", `{"approved":true}`), 404, "NOT_FOUND")
	var decided adapter.Approval
	a := n.bankCall(t, "POST", "002", "/me/approvals/"+apr+"/respond", "customer", "cust-002-3", `{"approved":true}`)
	decodeInto(t, a, &decided)
	if a.status != 200 || decided.Status != adapter.ApprovalApproved || !decided.ResumeNotified {
		t.Fatalf("approve: %d %s", a.status, a.body)
	}
	n.waitState(t, held, "SETTLED", 20*time.Second)
	errorBody(t, n.bankCall(t, "POST", "002", "/me/approvals/"+apr+"/respond", "customer", "cust-002-3", `{"approved":false}`), 409, "STATE_GUARD")
	if types, _, _ := n.chain(t, held); !equal(types[len(types)-3:], []string{"Suspended", "PayeeExecConfirmed", "Settled"}) {
		t.Fatalf("approved chain %v", types)
	}
	if h := n.heldH(t, held); h != 0 {
		t.Fatalf("approved: H %d still reserved", h)
	}

	// REQUIRE_APPROVAL, HOLD_MANUAL, rejected by a teller: FAILED_EXECUTION
	// and the payer refunded through the reversal path.
	rejected := n.submit(t, transfer("h:001-0003", "h:002-0002", "f-manual", 6000))
	n.waitState(t, rejected, "SUSPENDED", 20*time.Second)
	decodeInto(t, n.bankCall(t, "GET", "002", "/teller/approvals?status=PENDING", "teller", "T-1", ""), &aps)
	if len(aps.Approvals) != 1 || aps.Approvals[0].TxID != rejected || aps.Approvals[0].Action != adapter.ActionHoldManual {
		t.Fatalf("teller approvals %+v", aps)
	}
	errorBody(t, n.bankCall(t, "POST", "002", "/me/approvals/"+aps.Approvals[0].ApprovalID+"/respond", "customer", "cust-002-2", `{"approved":true}`),
		403, "CROSS_PARTICIPANT_SCOPE")
	a = n.bankCall(t, "POST", "002", "/teller/approvals/"+aps.Approvals[0].ApprovalID+"/respond", "teller", "T-1", `{"approved":false}`)
	decodeInto(t, a, &decided)
	if a.status != 200 || decided.Status != adapter.ApprovalRejected || !decided.ResumeNotified {
		t.Fatalf("reject: %d %s", a.status, a.body)
	}
	v := n.waitState(t, rejected, "FAILED_EXECUTION", 20*time.Second)
	if v.field("reason_code") != orchestrator.ReasonCreditApprovalRejected {
		t.Fatalf("rejected view %s", v.body)
	}
	types, _, _ = n.chain(t, rejected)
	if !equal(types[len(types)-4:], []string{"Suspended", "FailedExecution", "CreditFailedProofSubmitted", "ReversalCompleted"}) {
		t.Fatalf("rejected chain %v", types)
	}
	if h := n.heldH(t, rejected); h != 0 {
		t.Fatalf("rejected: H %d still reserved", h)
	}

	// The cores: refused credits debited the payer and not the payee
	// (their refund is the operator's, after the SUSPENDED limit); the
	// approved ones moved; the rejected one was refunded.
	n.waitBalances(t, map[[2]string]int64{
		{"001", core("001", 0)}: bal("001", 0) - 1500 - 800 - 700,
		{"001", core("001", 1)}: bal("001", 1) - 700,
		{"001", core("001", 2)}: bal("001", 2) - 2000,
		{"002", core("002", 0)}: bal("002", 0) + 800,
		{"002", core("002", 1)}: bal("002", 1) + 700,
		{"002", core("002", 2)}: bal("002", 2) + 2000,
	})
	// The held credit is posted exactly once at the payee core.
	time.Sleep(100 * time.Millisecond)
	if got := n.coreBalance(t, "002", core("002", 2)); got != bal("002", 2)+2000 {
		t.Fatalf("payee of the approved credit %d, want %d", got, bal("002", 2)+2000)
	}
	// Switching a filter off lets the next credit through.
	decodeInto(t, n.bankCall(t, "GET", "002", "/filters?account_id="+core("002", 0), "teller", "T-1", ""), &fl)
	if a := n.bankCall(t, "PATCH", "002", "/filters/"+fl.Filters[0].FilterID, "teller", "T-1", `{"is_active":false}`); a.status != 200 {
		t.Fatalf("patch: %d %s", a.status, a.body)
	}
	n.waitState(t, n.submit(t, transfer("h:001-0001", "h:002-0001", "f-off", 1500)), "SETTLED", 20*time.Second)

	// SENDER_BANK_BLOCK: naming bank 009 it lets bank 001's credit through;
	// naming bank 001 it refuses the next one (the payer is debited, the
	// payee is not, H stays reserved while SUSPENDED).
	payer0, payee0 := n.coreBalance(t, "001", core("001", 0)), n.coreBalance(t, "002", core("002", 0))
	filter("teller", "T-1", `{"account_id":"`+core("002", 0)+`","filter_type":"SENDER_BANK_BLOCK","condition":{"payer_bank_id":"009"}}`)
	n.waitState(t, n.submit(t, transfer("h:001-0001", "h:002-0001", "f-bank-other", 300)), "SETTLED", 20*time.Second)
	filter("teller", "T-1", `{"account_id":"`+core("002", 0)+`","filter_type":"SENDER_BANK_BLOCK","condition":{"payer_bank_id":"001"}}`)
	bankBlocked := n.submit(t, transfer("h:001-0001", "h:002-0001", "f-bank-blocked", 400))
	n.waitState(t, bankBlocked, "SUSPENDED", 20*time.Second)
	if _, reasons, causes := n.chain(t, bankBlocked); reasons["Suspended"] != orchestrator.ReasonExecCreditFailed || causes["Suspended"] != adapter.CauseFilterRejected {
		t.Fatalf("SENDER_BANK_BLOCK chain %v %v", reasons, causes)
	}
	if h := n.heldH(t, bankBlocked); h != 400 {
		t.Fatalf("SENDER_BANK_BLOCK: H %d, want 400 still reserved while SUSPENDED", h)
	}
	n.waitBalances(t, map[[2]string]int64{
		{"001", core("001", 0)}: payer0 - 300 - 400,
		{"002", core("002", 0)}: payee0 + 300,
	})
}

// TestApprovalDecisionRace: N goroutines decide one held credit, half
// approving and half rejecting; exactly one decision is recorded (the
// guarded UPDATE from PENDING), ZC applies that one, and the transfer ends
// accordingly.
func TestApprovalDecisionRace(t *testing.T) {
	n := start(t)
	payee := n.Config.Banks[1].Accounts[2].CoreAccount
	if a := n.bankCall(t, "POST", "002", "/filters", "teller", "T-1",
		`{"account_id":"`+payee+`","filter_type":"REQUIRE_APPROVAL","condition":{},"action":"HOLD_MANUAL"}`); a.status != 201 {
		t.Fatalf("filter: %d %s", a.status, a.body)
	}
	txid := n.submit(t, transfer("h:001-0001", "h:002-0003", "race-1", 4000))
	n.waitState(t, txid, "SUSPENDED", 20*time.Second)
	var aps adapter.ApprovalsResponse
	decodeInto(t, n.bankCall(t, "GET", "002", "/teller/approvals?status=PENDING", "teller", "T-1", ""), &aps)
	if len(aps.Approvals) != 1 {
		t.Fatalf("approvals %+v", aps)
	}
	id := aps.Approvals[0].ApprovalID
	ctx := context.Background()
	a := n.Banks["002"].Adapter
	const N = 16
	var wg sync.WaitGroup
	results := make([]error, N)
	decisions := make([]adapter.Approval, N)
	for i := 0; i < N; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			decisions[i], results[i] = a.RespondApproval(ctx, id, i%2 == 0, adapter.Decider{TellerID: fmt.Sprintf("T-%d", i)})
		}(i)
	}
	wg.Wait()
	var won string
	for i, err := range results {
		if err == nil {
			if won != "" && decisions[i].Status != won {
				t.Fatalf("two decisions recorded: %s and %s", won, decisions[i].Status)
			}
			won = decisions[i].Status
			continue
		}
		if c := domainerr.Code(err); c != "STATE_GUARD" && c != "CONCURRENCY_CONFLICT" {
			t.Fatalf("racer %d: %v", i, err)
		}
	}
	ap, err := a.Approvals(ctx, adapter.ApprovalQuery{})
	if err != nil || len(ap) != 1 || ap[0].Status != won {
		t.Fatalf("recorded %+v %v, winners said %s", ap, err, won)
	}
	want := map[string]string{adapter.ApprovalApproved: "SETTLED", adapter.ApprovalRejected: "FAILED_EXECUTION"}[won]
	n.waitState(t, txid, want, 20*time.Second)
}

// TestAccountVerifyThroughTheAdapter: POST /api/account-verify sends
// account-verify through the signed bank client, the gateway's ingress and
// the payee bank's adapter, records the answer, and never returns the
// holder's stored name.
func TestAccountVerifyThroughTheAdapter(t *testing.T) {
	n := start(t)
	ctx := context.Background()
	key := n.Config.KeyFor("001")
	verify := func(account, name string) orchestrator.AccountVerification {
		t.Helper()
		body := `{"target_bank_id":"002","target_account_id":"` + account + `"`
		if name != "" {
			body += `,"name_to_verify":"` + name + `"`
		}
		a := n.do(t, "POST", "/api/account-verify", key, nil, body+"}")
		var v orchestrator.AccountVerification
		decodeInto(t, a, &v)
		if a.status != 201 || v.VerificationID == "" {
			t.Fatalf("verify %s %q: %d %s", account, name, a.status, a.body)
		}
		if strings.Contains(string(a.body), "CUSTOMER B") && !strings.Contains(name, "CUSTOMER B") {
			t.Fatalf("the answer reveals the stored name: %s", a.body)
		}
		return v
	}
	if v := verify("h:002-0001", "CUSTOMER B1"); v.Result != "MATCHED" || v.MatchScore != 1.0 || v.NameProvided == nil || *v.NameProvided != "CUSTOMER B1" {
		t.Fatalf("exact name: %+v", v)
	}
	if v := verify("h:002-0001", "CUSTOMER B7"); v.Result != "MATCHED" || v.MatchScore != 0.8 {
		t.Fatalf("one edit away: %+v", v)
	}
	if v := verify("h:002-0001", "SOMEONE ELSE"); v.Result != "MISMATCHED" || v.MatchScore != 0 {
		t.Fatalf("another name: %+v", v)
	}
	if v := verify("h:002-0404", ""); v.Result != "NOT_FOUND" {
		t.Fatalf("unknown account: %+v", v)
	}
	// A frozen account (the bank's teller froze it) carries a fraud warning.
	if a := n.bankCall(t, "PATCH", "002", "/teller/accounts/"+n.Config.Banks[1].Accounts[1].CoreAccount+"/status", "teller", "T-1",
		`{"status":"FROZEN"}`); a.status != 200 || a.field("status") != "FROZEN" {
		t.Fatalf("freeze: %d %s", a.status, a.body)
	}
	last := verify("h:002-0002", "")
	if last.Result != "MATCHED" || !last.FraudWarning || last.NameProvided != nil {
		t.Fatalf("frozen account: %+v", last)
	}
	var rows int
	if err := n.DB.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM AccountVerifications WHERE requester_bank_id = '001' AND target_bank_id = '002'`).Scan(&rows)
	}); err != nil || rows != 5 {
		t.Fatalf("AccountVerifications rows %d %v, want 5", rows, err)
	}
	// The payee bank's adapter answered each (its idempotency records).
	var seen int
	db := n.Banks["002"].Adapter.DB()
	if err := db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM IdempotencyKeys WHERE key LIKE 'ZCREQ:002:%' AND response_body LIKE '%match_score%'`).Scan(&seen)
	}); err != nil || seen != 5 {
		t.Fatalf("adapter answered %d account-verify requests %v, want 5", seen, err)
	}
	if a := n.do(t, "GET", "/api/account-verify/"+last.VerificationID, key, map[string]string{"X-Purpose-Code": "P01"}, ""); a.status != 200 || a.field("verification_id") != last.VerificationID {
		t.Fatalf("get own: %d %s", a.status, a.body)
	}
	errorBody(t, n.do(t, "GET", "/api/account-verify/"+last.VerificationID, n.Config.KeyFor("002"), map[string]string{"X-Purpose-Code": "P01"}, ""), 404, "NOT_FOUND")
	errorBody(t, n.do(t, "POST", "/api/account-verify", key, nil, `{"target_bank_id":"009","target_account_id":"h:x"}`), 404, "PARTICIPANT_NOT_FOUND")
	errorBody(t, n.do(t, "POST", "/api/account-verify", "", nil, `{"target_bank_id":"002","target_account_id":"h:x"}`), 401, "UNAUTHORIZED")
}

// TestCleanupBankThroughTheAdapter: a participant that left is cleaned up
// at its bank through cleanup-bank, only once it is inactive and none of
// its transfers moves.
func TestCleanupBankThroughTheAdapter(t *testing.T) {
	n := start(t)
	ctx := context.Background()
	ops := map[string]string{"X-Cron-Secret": n.Config.CronSecret}
	payee := n.Config.Banks[1].Accounts[0].CoreAccount
	if a := n.bankCall(t, "POST", "002", "/filters", "teller", "T-1",
		`{"account_id":"`+payee+`","filter_type":"REQUIRE_APPROVAL","condition":{},"action":"HOLD_MANUAL"}`); a.status != 201 {
		t.Fatalf("filter: %d %s", a.status, a.body)
	}
	txid := n.submit(t, transfer("h:001-0001", "h:002-0001", "leave-1", 1200))
	n.waitState(t, txid, "SUSPENDED", 20*time.Second)
	cleanup := func() answer {
		return n.do(t, "POST", "/api/participants/002/cleanup", "", ops, `{"requested_by":"ops-1"}`)
	}
	errorBody(t, cleanup(), 409, "STATE_GUARD") // still active
	errorBody(t, n.do(t, "POST", "/api/participants/002/cleanup", n.Config.KeyFor("002"), nil, `{"requested_by":"x"}`), 403, "CROSS_PARTICIPANT_SCOPE")
	g := n.do(t, "GET", "/api/participants/002", "", map[string]string{"X-Cron-Secret": n.Config.CronSecret, "X-Purpose-Code": "P01"}, "")
	var p participants.Participant
	decodeInto(t, g, &p)
	p.IsActive = false
	body, _ := json.Marshal(p)
	if a := n.do(t, "PUT", "/api/participants/002", "", ops, string(body)); a.status != 200 {
		t.Fatalf("deactivate: %d %s", a.status, a.body)
	}
	b := errorBody(t, cleanup(), 409, "STATE_GUARD") // the held transfer moves
	if b.Details["open_transfers"] != float64(1) {
		t.Fatalf("details %v", b.Details)
	}
	var aps adapter.ApprovalsResponse
	decodeInto(t, n.bankCall(t, "GET", "002", "/teller/approvals", "teller", "T-1", ""), &aps)
	if a := n.bankCall(t, "POST", "002", "/teller/approvals/"+aps.Approvals[0].ApprovalID+"/respond", "teller", "T-1", `{"approved":false}`); a.status != 200 {
		t.Fatalf("reject: %d %s", a.status, a.body)
	}
	n.waitState(t, txid, "FAILED_EXECUTION", 20*time.Second)
	a := cleanup()
	if a.status != 200 || a.field("result") != "CLEANED_UP" || a.field("bank_id") != "002" {
		t.Fatalf("cleanup: %d %s", a.status, a.body)
	}
	var accounts, banks int
	if err := n.Banks["002"].Adapter.DB().Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM AdapterAccounts), (SELECT COUNT(*) FROM AdapterBank)`).Scan(&accounts, &banks)
	}); err != nil || accounts != 0 || banks != 0 {
		t.Fatalf("after cleanup: %d accounts, %d bank rows %v", accounts, banks, err)
	}
	// ZC keeps its record; the bank is gone from the bank side.
	if v := n.waitState(t, txid, "FAILED_EXECUTION", time.Second); v.field("txid") != txid {
		t.Fatalf("transfer after cleanup: %s", v.body)
	}
	errorBody(t, n.bankCall(t, "GET", "002", "/me/accounts/"+payee+"/balance", "customer", "cust-002-1", ""), 404, "ACCOUNT_NOT_FOUND")
}

// TestCustomerTransferThroughZC: a customer sends a transfer on the
// customer API; the bank's channel submits it to ZC with the bank's own
// key, the transfer settles through both cores, and the customer (only
// that customer) reads it back.
func TestCustomerTransferThroughZC(t *testing.T) {
	n := start(t)
	payer, payee := n.Config.Banks[0].Accounts[0], n.Config.Banks[1].Accounts[0]
	p0, q0 := n.coreBalance(t, "001", payer.CoreAccount), n.coreBalance(t, "002", payee.CoreAccount)
	body := `{"amount":{"value":1000,"currency":"JPY"},"payee_bank_id":"002","payee_account_hash":"h:002-0001","lane":"EXPRESS","purpose":"P2P","idempotency_key":"me-1"}`
	a := n.bankCall(t, "POST", "001", "/me/transfers", "customer", "cust-001-1", body)
	var res orchestrator.SubmitResult
	decodeInto(t, a, &res)
	if a.status != 201 || res.TxID == "" || res.Lane != "EXPRESS" {
		t.Fatalf("submit: %d %s", a.status, a.body)
	}
	again := n.bankCall(t, "POST", "001", "/me/transfers", "customer", "cust-001-1", body)
	if again.status != 201 || again.field("txid") != res.TxID {
		t.Fatalf("replay: %d %s, want %s", again.status, again.body, res.TxID)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		g := n.bankCall(t, "GET", "001", "/me/transfers/"+res.TxID, "customer", "cust-001-1", "")
		if g.status == 200 && g.field("state") == "SETTLED" && g.field("payer_bank_id") == "001" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("transfer: %d %s", g.status, g.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	n.waitBalances(t, map[[2]string]int64{{"001", payer.CoreAccount}: p0 - 1000, {"002", payee.CoreAccount}: q0 + 1000})
	errorBody(t, n.bankCall(t, "GET", "001", "/me/transfers/"+res.TxID, "customer", "cust-001-2", ""), 404, "TX_NOT_FOUND")
	errorBody(t, n.bankCall(t, "POST", "001", "/me/transfers", "customer", "cust-001-1",
		`{"amount":{"value":1000,"currency":"JPY"},"payee_bank_id":"002","payee_account_id":"100-1-0000001","lane":"EXPRESS","idempotency_key":"me-2"}`),
		400, "INVALID_REQUEST")
	errorBody(t, n.bankCall(t, "POST", "001", "/me/transfers", "customer", "cust-001-1",
		`{"amount":{"value":1000,"currency":"JPY"},"payee_bank_id":"002","payee_account_hash":"h:002-0001","lane":"EXPRESS","idempotency_key":"me-3","payer_account_id":"`+
			n.Config.Banks[0].Accounts[1].CoreAccount+`"}`), 404, "ACCOUNT_NOT_FOUND")
}

// TestSuspenseResolvedByATeller: a credit for an account bank 002 does not
// hold lands in its custody account (別段預金) at the core; a teller moves
// it to an account, exactly once, and both cores agree.
func TestSuspenseResolvedByATeller(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Banks[1].Accounts = append(cfg.Banks[1].Accounts, Account{Hash: "h:002-custody", CoreAccount: "100-9-0000001", Name: "BETSUDAN YOKIN"})
	cfg.Banks[1].CustodyAccount = "h:002-custody"
	n, err := Start(context.Background(), Options{DataDir: scratch(t), Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	target := n.Config.Banks[1].Accounts[1].CoreAccount
	q0 := n.coreBalance(t, "002", target)
	txid := n.submit(t, transfer("h:001-0001", "h:002-closed", "susp-1", 1300))
	n.waitState(t, txid, "SETTLED", 20*time.Second)
	n.waitBalances(t, map[[2]string]int64{{"002", "100-9-0000001"}: 1300})
	var list adapter.SuspenseResponse
	deadline := time.Now().Add(10 * time.Second)
	for {
		decodeInto(t, n.bankCall(t, "GET", "002", "/teller/suspense", "teller", "T-1", ""), &list)
		if len(list.Suspense) == 1 && list.Suspense[0].Status == "APPLIED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("suspense %+v", list)
		}
		time.Sleep(20 * time.Millisecond)
	}
	it := list.Suspense[0]
	if it.TxID != txid || it.Amount != 1300 || it.ResolvedTo != "" {
		t.Fatalf("suspense item %+v", it)
	}
	path := "/teller/suspense/" + it.JournalID + "/resolve"
	var res adapter.SuspenseResolution
	a := n.bankCall(t, "POST", "002", path, "teller", "T-1", `{"account_id":"`+target+`","memo":"payee found"}`)
	decodeInto(t, a, &res)
	if a.status != 201 || res.Debit.AccountID != "100-9-0000001" || res.Credit.AccountID != target || res.Credit.Amount != 1300 {
		t.Fatalf("resolve: %d %s", a.status, a.body)
	}
	if b := n.bankCall(t, "POST", "002", path, "teller", "T-1", `{"account_id":"`+target+`","memo":"payee found"}`); b.status != 201 ||
		!strings.Contains(string(b.body), res.Credit.JournalID) {
		t.Fatalf("resolve again: %d %s", b.status, b.body)
	}
	errorBody(t, n.bankCall(t, "POST", "002", path, "teller", "T-1", `{"account_id":"`+n.Config.Banks[1].Accounts[2].CoreAccount+`"}`),
		409, "IDEMPOTENCY_KEY_CONFLICT")
	n.waitBalances(t, map[[2]string]int64{{"002", "100-9-0000001"}: 0, {"002", target}: q0 + 1300})
	decodeInto(t, n.bankCall(t, "GET", "002", "/teller/suspense", "teller", "T-1", ""), &list)
	if len(list.Suspense) != 1 || list.Suspense[0].ResolvedTo != target || list.Suspense[0].ResolutionTxID != res.TxID {
		t.Fatalf("after resolve %+v", list)
	}
	time.Sleep(50 * time.Millisecond)
	if got := n.coreBalance(t, "002", target); got != q0+1300 {
		t.Fatalf("target core %d, want %d (moved once)", got, q0+1300)
	}
}
