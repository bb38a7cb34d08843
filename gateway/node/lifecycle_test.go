package node

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
)

// coreStatus is the account's status at bank's simulated core.
func (n *Node) coreStatus(t testing.TB, bank, acct string) coresim.BalanceOut {
	t.Helper()
	b, err := n.Banks[bank].Core.Balance(context.Background(), acct)
	if err != nil {
		t.Fatalf("core %s/%s: %v", bank, acct, err)
	}
	return b
}

// settledShadow waits until the adapter of bank has every posting of the
// account answered by the core (nothing pending or in doubt).
func (n *Node) settledShadow(t testing.TB, bank, hash string) adapter.Shadow {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := n.Banks[bank].Adapter.Shadow(context.Background(), hash)
		if err != nil {
			t.Fatal(err)
		}
		if s.PendingCredits == 0 && s.PendingDebits == 0 && s.Unsettled == 0 {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("shadow of %s never settled: %+v", hash, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// verifyAt is ZC's POST /api/account-verify of an account of bank 002.
func (n *Node) verifyAt(t testing.TB, hash string) orchestrator.AccountVerification {
	t.Helper()
	a := n.do(t, "POST", "/api/account-verify", n.Config.KeyFor("001"), nil, `{"target_bank_id":"002","target_account_id":"`+hash+`"}`)
	var v orchestrator.AccountVerification
	decodeInto(t, a, &v)
	if a.status != 201 {
		t.Fatalf("account-verify %s: %d %s", hash, a.status, a.body)
	}
	return v
}

// TestTellerAccountLifecycleThroughTheCore: a teller opens an account at
// the core (once per key), it is funded and credited through ZC, put on
// closing hold (ZC's credit refused with ACCOUNT_CLOSED, the teller's
// deposit too, close refused while the balance is not 0), paid out and
// closed; the core and ZC's account-verify follow every step.
func TestTellerAccountLifecycleThroughTheCore(t *testing.T) {
	n := start(t)
	ctx := context.Background()
	create := `{"idempotency_key":"open-1","holder_name":"ｽｽﾞｷ ｲﾁﾛｳ","customer_id":"cust-new","initial_deposit":5000}`
	a := n.bankCall(t, "POST", "002", "/teller/accounts", "teller", "T-1", create)
	var made adapter.CreateAccountResponse
	decodeInto(t, a, &made)
	acct, hash := made.Account.AccountID, made.Account.AccountHash
	if a.status != 201 || acct == "" || hash == "" || made.Account.Status != adapter.StatusNormal || made.InitialDeposit == nil ||
		made.InitialDeposit.Amount != 5000 || made.OpRef == "" {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	// The core opened it; the deposit reaches it exactly once, a replay
	// answers the same account and posts nothing more.
	if b := n.coreStatus(t, "002", acct); !b.Found || b.Status != coresim.StatusOpen || b.Name != "ｽｽﾞｷ ｲﾁﾛｳ" {
		t.Fatalf("core after open: %+v", b)
	}
	var again adapter.CreateAccountResponse
	decodeInto(t, n.bankCall(t, "POST", "002", "/teller/accounts", "teller", "T-2", create), &again)
	if again.OpRef != made.OpRef || again.Account.AccountID != acct {
		t.Fatalf("replay opened another account: %+v vs %+v", again, made)
	}
	errorBody(t, n.bankCall(t, "POST", "002", "/teller/accounts", "teller", "T-1",
		`{"idempotency_key":"open-1","holder_name":"ﾀﾅｶ ﾊﾅｺ"}`), 409, "IDEMPOTENCY_KEY_CONFLICT")
	errorBody(t, n.bankCall(t, "POST", "002", "/teller/accounts", "teller", "T-1", `{"idempotency_key":"open-x"}`), 400, "MISSING_FIELD")
	n.waitBalances(t, map[[2]string]int64{{"002", acct}: 5000})
	// The customer sees it; ZC's account-verify finds it.
	var mine adapter.AccountsResponse
	decodeInto(t, n.bankCall(t, "GET", "002", "/me/accounts", "customer", "cust-new", ""), &mine)
	if len(mine.Accounts) != 1 || mine.Accounts[0].AccountID != acct {
		t.Fatalf("customer's accounts %+v", mine)
	}
	if v := n.verifyAt(t, hash); v.Result != "MATCHED" {
		t.Fatalf("verify open account: %+v", v)
	}

	// The batch form: each item on its own.
	var batch adapter.BatchAccountsResponse
	a = n.bankCall(t, "POST", "002", "/teller/accounts/batch", "teller", "T-1",
		`{"accounts":[{"idempotency_key":"b-1","holder_name":"ｶﾄｳ ｼﾞﾛｳ"},{"idempotency_key":"b-2"},{"idempotency_key":"b-3","holder_name":"ｷﾑﾗ ｻﾌﾞﾛｳ","account_id":"`+acct+`"}]}`)
	decodeInto(t, a, &batch)
	if a.status != 200 || batch.Created != 1 || batch.Failed != 2 || batch.Results[0].Created == nil ||
		batch.Results[1].Error == nil || batch.Results[1].Error.ReasonCode != "MISSING_FIELD" ||
		batch.Results[2].Error == nil || batch.Results[2].Error.ReasonCode != "STATE_GUARD" {
		t.Fatalf("batch: %d %s", a.status, a.body)
	}
	if b := n.coreStatus(t, "002", batch.Results[0].Created.Account.AccountID); b.Status != coresim.StatusOpen || b.Balance != 0 {
		t.Fatalf("batch account at the core: %+v", b)
	}

	// A transfer through ZC credits the new account.
	in := n.submit(t, transfer("h:001-0001", hash, "lc-in", 3000))
	n.waitState(t, in, "SETTLED", 20*time.Second)
	n.waitBalances(t, map[[2]string]int64{{"002", acct}: 8000})

	// Closing needs the hold first.
	if b := errorBody(t, n.bankCall(t, "PATCH", "002", "/teller/accounts/"+acct+"/status", "teller", "T-1", `{"status":"CLOSED"}`), 409, "STATE_GUARD"); b.Error != "the account is NORMAL: CLOSED needs CLOSING_HOLD" || b.Details["account_status"] != "NORMAL" {
		t.Fatalf("close before the hold: %q %v (the teller API's own status names)", b.Error, b.Details)
	}
	if a := n.bankCall(t, "PATCH", "002", "/teller/accounts/"+acct+"/status", "teller", "T-1", `{"status":"CLOSING_HOLD"}`); a.status != 200 ||
		a.field("status") != adapter.StatusClosingHold {
		t.Fatalf("hold: %d %s", a.status, a.body)
	}
	if b := n.coreStatus(t, "002", acct); b.Status != coresim.StatusClosingHold {
		t.Fatalf("core after hold: %+v", b)
	}
	if v := n.verifyAt(t, hash); v.Result != "NOT_FOUND" {
		t.Fatalf("verify account on closing hold: %+v", v)
	}
	// A credit through ZC is refused with the spec's reason; so is a cash
	// deposit. The close is refused while the balance is not 0.
	refused := n.submit(t, transfer("h:001-0001", hash, "lc-refused", 1000))
	n.waitState(t, refused, "SUSPENDED", 20*time.Second)
	if _, reasons, causes := n.chain(t, refused); reasons["Suspended"] != orchestrator.ReasonExecCreditFailed || causes["Suspended"] != adapter.CauseAccountClosed {
		t.Fatalf("credit to a closing account: %v %v", reasons, causes)
	}
	b := errorBody(t, n.bankCall(t, "POST", "002", "/teller/cash/deposit", "teller", "T-1",
		`{"account_id":"`+acct+`","amount":100,"idempotency_key":"lc-dep"}`), 409, "STATE_GUARD")
	if b.Details["cause"] != adapter.CauseAccountClosed || b.Details["account_status"] != adapter.LifecycleClosingHold {
		t.Fatalf("deposit on hold: %+v", b)
	}
	b = errorBody(t, n.bankCall(t, "PATCH", "002", "/teller/accounts/"+acct+"/status", "teller", "T-1", `{"status":"CLOSED"}`), 409, "STATE_GUARD")
	if b.Details["balance"] != float64(8000) {
		t.Fatalf("close with a balance: %+v", b)
	}
	if st := n.coreStatus(t, "002", acct); st.Status != coresim.StatusClosingHold || st.Balance != 8000 {
		t.Fatalf("core after a refused close: %+v", st)
	}
	// Paid out in cash, then closed.
	if a := n.bankCall(t, "POST", "002", "/teller/cash/withdrawal", "teller", "T-1",
		`{"account_id":"`+acct+`","amount":8000,"idempotency_key":"lc-out"}`); a.status != 201 {
		t.Fatalf("payout: %d %s", a.status, a.body)
	}
	n.waitBalances(t, map[[2]string]int64{{"002", acct}: 0})
	n.settledShadow(t, "002", hash)
	if a := n.bankCall(t, "PATCH", "002", "/teller/accounts/"+acct+"/status", "teller", "T-1", `{"status":"CLOSED"}`); a.status != 200 ||
		a.field("status") != adapter.StatusClosed {
		t.Fatalf("close: %d %s", a.status, a.body)
	}
	if st := n.coreStatus(t, "002", acct); st.Status != coresim.StatusClosed || st.Balance != 0 {
		t.Fatalf("core after close: %+v", st)
	}
	if a := n.bankCall(t, "PATCH", "002", "/teller/accounts/"+acct+"/status", "teller", "T-1", `{"status":"CLOSED"}`); a.status != 200 {
		t.Fatalf("close again: %d %s", a.status, a.body)
	}
	errorBody(t, n.bankCall(t, "PATCH", "002", "/teller/accounts/"+acct+"/status", "teller", "T-1", `{"status":"NORMAL"}`), 409, "STATE_GUARD")
	if v := n.verifyAt(t, hash); v.Result != "NOT_FOUND" {
		t.Fatalf("verify closed account: %+v", v)
	}
	// Every lifecycle action was answered by the core and audited.
	var ops map[string]int
	db := n.Banks["002"].Adapter.DB()
	if err := db.Read(ctx, func(tx *store.Tx) error {
		ops = map[string]int{}
		rows, err := tx.QueryContext(ctx, `SELECT action || '/' || status, COUNT(*) FROM AdapterAccountOps WHERE core_account = ? GROUP BY 1`, acct)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			var c int
			if err := rows.Scan(&k, &c); err != nil {
				return err
			}
			ops[k] = c
		}
		return rows.Err()
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ops) != "map[CLOSE/APPLIED:1 HOLD/APPLIED:1 OPEN/APPLIED:1]" {
		t.Fatalf("account ops %v", ops)
	}
	var audit adapter.AuditLogResponse
	decodeInto(t, n.bankCall(t, "GET", "002", "/teller/audit-log?limit=50", "teller", "T-1", ""), &audit)
	events := map[string]bool{}
	for _, e := range audit.Entries {
		events[e.Event] = true
	}
	for _, e := range []string{"ACCOUNT_OPENED", "ACCOUNT_HOLD", "ACCOUNT_CLOSE"} {
		if !events[e] {
			t.Errorf("audit log lacks %s: %v", e, events)
		}
	}
}

// withEDI adds edi_ref to a transfer body.
func withEDI(body, edi string) string {
	return strings.Replace(body, `"idempotency_key"`, `"edi_ref":"`+edi+`","idempotency_key"`, 1)
}

// TestEDIPatternFilterThroughTheCores: the transfer's edi_ref reaches the
// payee bank's execute-credit; an EDI_PATTERN REJECT filter refuses a
// matching credit and lets the others through, a HOLD_MANUAL one holds a
// matching credit until a teller approves; bad patterns and bad edi_ref
// are refused saying where.
func TestEDIPatternFilterThroughTheCores(t *testing.T) {
	n := start(t)
	core := func(bank string, i int) string {
		return n.Config.Banks[map[string]int{"001": 0, "002": 1}[bank]].Accounts[i].CoreAccount
	}
	filter := func(body string) {
		t.Helper()
		if a := n.bankCall(t, "POST", "002", "/filters", "teller", "T-1", body); a.status != 201 {
			t.Fatalf("create filter: %d %s", a.status, a.body)
		}
	}
	filter(`{"account_id":"` + core("002", 0) + `","filter_type":"EDI_PATTERN","condition":{"edi_pattern":"^INV-\\d{4}"},"action":"REJECT"}`)
	filter(`{"account_id":"` + core("002", 1) + `","filter_type":"EDI_PATTERN","condition":{"edi_pattern":"ﾀﾞｲｷﾝ"},"action":"HOLD_MANUAL"}`)
	b := errorBody(t, n.bankCall(t, "POST", "002", "/filters", "teller", "T-1",
		`{"account_id":"`+core("002", 0)+`","filter_type":"EDI_PATTERN","condition":{"edi_pattern":"INV-[0-9"}}`), 400, "INVALID_REQUEST")
	if b.Details["field"] != "condition.edi_pattern" || b.Details["byte_offset"] != float64(4) {
		t.Fatalf("bad pattern: %+v", b)
	}
	b = errorBody(t, n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil,
		withEDI(transfer("h:001-0001", "h:002-0001", "edi-bad", 100), `INV\u0007`)), 400, "INVALID_REQUEST")
	if b.Details["field"] != "edi_ref" || b.Details["byte_offset"] != float64(3) {
		t.Fatalf("bad edi_ref: %+v", b)
	}
	p0, p1, p2 := n.coreBalance(t, "001", core("001", 0)), n.coreBalance(t, "002", core("002", 0)), n.coreBalance(t, "002", core("002", 1))

	refused := n.submit(t, withEDI(transfer("h:001-0001", "h:002-0001", "edi-inv", 1000), "INV-2026 ｾｲｷﾕｳ"))
	n.waitState(t, refused, "SUSPENDED", 20*time.Second)
	if _, reasons, causes := n.chain(t, refused); reasons["Suspended"] != orchestrator.ReasonExecCreditFailed || causes["Suspended"] != adapter.CauseFilterRejected {
		t.Fatalf("matching credit: %v %v", reasons, causes)
	}
	if h := n.heldH(t, refused); h != 1000 {
		t.Fatalf("refused: H %d, want 1000", h)
	}
	other := n.submit(t, withEDI(transfer("h:001-0001", "h:002-0001", "edi-order", 700), "ORDER INV-2026"))
	none := n.submit(t, transfer("h:001-0001", "h:002-0001", "edi-none", 300))
	n.waitState(t, other, "SETTLED", 20*time.Second)
	n.waitState(t, none, "SETTLED", 20*time.Second)

	held := n.submit(t, withEDI(transfer("h:001-0001", "h:002-0002", "edi-held", 2000), "ﾃﾞﾝｷ ﾀﾞｲｷﾝ 12"))
	n.waitState(t, held, "SUSPENDED", 20*time.Second)
	if _, reasons, _ := n.chain(t, held); reasons["Suspended"] != orchestrator.ReasonSuspendCreditApproval {
		t.Fatalf("held chain %v", reasons)
	}
	var aps adapter.ApprovalsResponse
	decodeInto(t, n.bankCall(t, "GET", "002", "/teller/approvals?status=PENDING", "teller", "T-1", ""), &aps)
	if len(aps.Approvals) != 1 || aps.Approvals[0].TxID != held {
		t.Fatalf("approvals %+v", aps)
	}
	if a := n.bankCall(t, "POST", "002", "/teller/approvals/"+aps.Approvals[0].ApprovalID+"/respond", "teller", "T-1", `{"approved":true}`); a.status != 200 {
		t.Fatalf("approve: %d %s", a.status, a.body)
	}
	n.waitState(t, held, "SETTLED", 20*time.Second)
	n.waitBalances(t, map[[2]string]int64{
		{"001", core("001", 0)}: p0 - 1000 - 700 - 300 - 2000,
		{"002", core("002", 0)}: p1 + 700 + 300,
		{"002", core("002", 1)}: p2 + 2000,
	})
	// ZC kept the remittance information with the transfer.
	var edi string
	if err := n.DB.Read(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), `SELECT COALESCE(edi_ref, '') FROM Transactions WHERE txid = ?`, held).Scan(&edi)
	}); err != nil || edi != "ﾃﾞﾝｷ ﾀﾞｲｷﾝ 12" {
		t.Fatalf("Transactions.edi_ref %q %v", edi, err)
	}
}

// TestCloseAndCreditRace: tellers close an account (CLOSING_HOLD, then
// CLOSED) while others deposit cash into it, all at once. Whatever the
// interleaving, every deposit answered 201 reaches the core exactly once,
// the account is CLOSED only if no deposit got in, and the adapter and
// the core agree on its state. Each round opens a fresh account; the
// closers start after a delay that grows with the round, so the rounds
// cover the hold winning and the deposits winning.
func TestCloseAndCreditRace(t *testing.T) {
	n := start(t)
	for round, delay := range []time.Duration{0, 5 * time.Millisecond, 100 * time.Millisecond} {
		raceCloseAndCredit(t, n, round, delay)
	}
}

func raceCloseAndCredit(t *testing.T, n *Node, round int, delay time.Duration) {
	var made adapter.CreateAccountResponse
	decodeInto(t, n.bankCall(t, "POST", "002", "/teller/accounts", "teller", "T-0",
		fmt.Sprintf(`{"idempotency_key":"race-%d","holder_name":"ﾚｰｽ ﾀﾛｳ"}`, round)), &made)
	acct, hash := made.Account.AccountID, made.Account.AccountHash
	if acct == "" {
		t.Fatal("no account")
	}
	const N = 16
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		deposits int
		closed   int
		begin    = make(chan struct{})
	)
	for i := 0; i < N; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-begin
			teller := fmt.Sprintf("T-%d", i)
			if i%2 == 0 {
				a := n.bankCall(t, "POST", "002", "/teller/cash/deposit", "teller", teller,
					fmt.Sprintf(`{"account_id":"%s","amount":100,"idempotency_key":"race-%d-%d"}`, acct, round, i))
				switch {
				case a.status == 201:
					mu.Lock()
					deposits++
					mu.Unlock()
				case a.status != 409 || !strings.Contains(string(a.body), adapter.CauseAccountClosed):
					t.Errorf("deposit %d: %d %s", i, a.status, a.body)
				}
				return
			}
			time.Sleep(delay)
			for _, st := range []string{"CLOSING_HOLD", "CLOSED"} {
				a := n.bankCall(t, "PATCH", "002", "/teller/accounts/"+acct+"/status", "teller", teller, `{"status":"`+st+`"}`)
				if a.status != 200 && a.status != 409 {
					t.Errorf("%s %d: %d %s", st, i, a.status, a.body)
				}
				if a.status == 200 && st == "CLOSED" {
					mu.Lock()
					closed++
					mu.Unlock()
				}
			}
		}(i)
	}
	close(begin)
	wg.Wait()
	n.waitBalances(t, map[[2]string]int64{{"002", acct}: int64(100 * deposits)})
	s := n.settledShadow(t, "002", hash)
	if s.Lifecycle == adapter.LifecycleClosingHold {
		// A hold still waiting for the core (its credits were not applied
		// in time) is completed by the teller's retry.
		if a := n.bankCall(t, "PATCH", "002", "/teller/accounts/"+acct+"/status", "teller", "T-0", `{"status":"CLOSING_HOLD"}`); a.status != 200 {
			t.Fatalf("round %d: hold retry: %d %s", round, a.status, a.body)
		}
	}
	core := n.coreStatus(t, "002", acct)
	switch {
	case s.CoreBalance != int64(100*deposits):
		t.Fatalf("round %d: shadow %d, core %d, deposits %d", round, s.CoreBalance, core.Balance, deposits)
	case s.Lifecycle != core.Status:
		t.Fatalf("round %d: adapter %s, core %s", round, s.Lifecycle, core.Status)
	case s.Lifecycle == adapter.LifecycleClosed && (deposits != 0 || closed == 0):
		t.Fatalf("round %d: closed with %d deposits in, %d closes answered 200", round, deposits, closed)
	case s.Lifecycle == adapter.LifecycleOpen:
		t.Fatalf("round %d: no hold took effect", round)
	}
	t.Logf("round %d (closers after %s): %d deposits in, lifecycle %s", round, delay, deposits, s.Lifecycle)
}
