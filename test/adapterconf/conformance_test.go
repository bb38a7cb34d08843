package adapterconf

import (
	"errors"
	"fmt"
	"github.com/zcgw/zcgw/formats/coreacct"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox"
)

// conformanceCase is one named behaviour of spec §18.2 (or of a
// physically separate core). Every case ends with env.checkConsistent.
type conformanceCase struct {
	name string
	spec string // the §18.2 item it fixes
	opts func(*options)
	run  func(t *testing.T, e *env)
}

func TestConformance(t *testing.T) { runConformance(t, false) }

// TestConformanceRabbitMQ runs the cases whose outcome depends on the
// transport (everything that crosses MQ under faults, offline windows,
// timeouts, races and crashes) over RabbitMQ (127.0.0.1:5672, guest/guest)
// instead of the embedded transport; the adapter-local cases (name-check
// deferral, account-verify, notifications, reconciliation bookkeeping)
// would only repeat themselves. It skips when the broker is not reachable,
// except under CI=true where that is a failure.
func TestConformanceRabbitMQ(t *testing.T) {
	needRabbit(t)
	runConformance(t, true)
}

// overRabbit lists the case-name prefixes run over RabbitMQ.
var overRabbit = []string{"baseline/", "offline/", "idempotency/duplicate_", "compensation/reserve_", "recon/clean_",
	"overdraft/drain_time_", "timeout/", "concurrency/", "stale_claim/", "two_banks/", "separate/"}

func transportSensitive(name string) bool {
	for _, p := range overRabbit {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func needRabbit(t *testing.T) {
	t.Helper()
	c, err := net.DialTimeout("tcp", "127.0.0.1:5672", 2*time.Second)
	if err == nil {
		c.Close()
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("RabbitMQ is not reachable at 127.0.0.1:5672 and CI=true: %v", err)
	}
	t.Skipf("RabbitMQ is not reachable at 127.0.0.1:5672 (%v); start it with `rabbitmq-server -detached`", err)
}

func runConformance(t *testing.T, rabbit bool) {
	all := append(append(append([]conformanceCase{}, specCases...), twoBankCases...), separateCoreCases...)
	if len(all) < 34 {
		t.Fatalf("only %d conformance cases; spec §18.2 needs at least 34", len(all))
	}
	seen := map[string]bool{}
	for _, c := range all {
		if seen[c.name] {
			t.Fatalf("duplicate case name %q", c.name)
		}
		seen[c.name] = true
		if rabbit && !transportSensitive(c.name) {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			o := defaultOptions()
			o.rabbit = rabbit
			if c.opts != nil {
				c.opts(&o)
			}
			e := newEnv(t, o)
			c.run(t, e)
			if t.Failed() {
				return
			}
			// After every case: the shadow equals the core, and no posting
			// reference is journalled twice.
			t.Run("shadow_equals_core", func(t *testing.T) {
				e.t = t
				e.checkConsistent()
			})
		})
	}
}

// check[T](t)(f()) returns f's value and fails the test on f's error.
func check[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if domainerr.Code(err) != code {
		t.Fatalf("error = %v, want %s", err, code)
	}
}

var specCases = []conformanceCase{
	// ---- baseline: the constraints themselves, proven on the bare core
	{name: "baseline/core_is_not_idempotent", spec: "baseline", run: func(t *testing.T, e *env) {
		core := e.core
		acct := coreacct.Format("100", 1, "0000900")
		noErr(t, core.OpenAccount(e.ctx, acct, "BASE LINE", 1000))
		p := outbox.Posting{Ref: "PBASELINE0000001", TxID: "TX-BASE", Bank: e.bank, Account: acct, Kind: outbox.Credit, Amount: 100}
		for i := 0; i < 2; i++ {
			check[outbox.ApplyResult](t)(e.link.Apply(e.ctx, p))
		}
		if n := len(e.journal(p.Ref)); n != 2 {
			t.Fatalf("same posting sent twice journalled %d times; the core is supposed to be non-idempotent", n)
		}
		if b, _ := core.Balance(e.ctx, acct); b.Balance != 1200 {
			t.Fatalf("core balance %d, want 1200 (applied twice)", b.Balance)
		}
	}},
	{name: "baseline/offline_core_answers_nothing", spec: "baseline", opts: func(o *options) { o.timeout = 100 * time.Millisecond }, run: func(t *testing.T, e *env) {
		acct := coreacct.Format("100", 1, "0000901")
		noErr(t, e.core.OpenAccount(e.ctx, acct, "BASE LINE", 1000))
		e.core.SetOffline(true)
		_, err := e.link.Apply(e.ctx, outbox.Posting{Ref: "PBASELINE0000002", TxID: "TX-BASE", Bank: e.bank, Account: acct, Kind: outbox.Credit, Amount: 5})
		var ns *outbox.NotSentError
		var id *outbox.InDoubtError
		if !errors.As(err, &ns) && !errors.As(err, &id) {
			t.Fatalf("apply to an offline core: %v", err)
		}
		if _, err := (adapter.CoreLinkInquiry{Link: e.link}).Balance(e.ctx, acct); err == nil {
			t.Fatal("an offline core answered a balance inquiry")
		}
		if b, _ := e.core.Balance(e.ctx, acct); b.Balance != 1000 {
			t.Fatalf("offline core changed: %d", b.Balance)
		}
		e.core.SetOffline(false)
	}},
	{name: "baseline/overdraft_refused_synchronously", spec: "baseline", run: func(t *testing.T, e *env) {
		acct := coreacct.Format("100", 1, "0000902")
		noErr(t, e.core.OpenAccount(e.ctx, acct, "BASE LINE", 1000))
		_, err := e.link.Apply(e.ctx, outbox.Posting{Ref: "PBASELINE0000003", TxID: "TX-BASE", Bank: e.bank, Account: acct, Kind: outbox.Debit, Amount: 1001})
		var r *outbox.RefusedError
		if !errors.As(err, &r) || r.ReasonCode != "INSUFFICIENT_FUNDS" {
			t.Fatalf("overdraft: %v", err)
		}
		if b, _ := e.core.Balance(e.ctx, acct); b.Balance != 1000 || len(e.journal("PBASELINE0000003")) != 0 {
			t.Fatalf("refused posting changed the core: %d", b.Balance)
		}
	}},

	// ---- #2 offline debit -> pending -> drained once
	{name: "offline/debit_approved_while_core_offline_stays_pending", spec: "#2", run: func(t *testing.T, e *env) {
		e.account("h:a", "SATO HANAKO", 10_000)
		e.core.SetOffline(true)
		r := check[bankapi.ExecuteResponse](t)(e.a.ExecuteDebit(e.ctx, debitHV("d1", "TX-1", "h:a", 3000)))
		if r.Result != bankapi.ResultOK || r.BankProofRef.ProofType != bankapi.ProofPayerHVIsolation {
			t.Fatalf("debit: %+v", r)
		}
		d := e.drain()
		if d.Applied != 0 || e.counts()[outbox.Pending] != 1 {
			t.Fatalf("drain with the core offline: %+v %v", d, e.counts())
		}
		if e.coreBalance("h:a") != 10_000 {
			t.Fatal("core touched while offline")
		}
		if s := e.shadow("h:a"); s.PendingDebits != 3000 || s.Available != 7000 || s.CoreBalance != 10_000 {
			t.Fatalf("shadow: %+v", s)
		}
		e.core.SetOffline(false)
		e.settle()
	}},
	{name: "offline/window_opens_drained_once_drift_zero", spec: "#2", run: func(t *testing.T, e *env) {
		e.account("h:a", "SATO HANAKO", 10_000)
		e.core.SetOffline(true)
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteDebit(e.ctx, debitHV("d1", "TX-1", "h:a", 3000)))
		e.drain()
		e.core.SetOffline(false)
		if d := e.drain(); d.Applied != 1 {
			t.Fatalf("drain after the window opened: %+v", d)
		}
		row := e.rows(outbox.Filter{TxID: "TX-1"})[0]
		if lines := e.journal(row.Posting.Ref); len(lines) != 1 || lines[0].TxID != "TX-1" || lines[0].Delta != -3000 {
			t.Fatalf("journal: %+v", lines)
		}
		if e.coreBalance("h:a") != 7000 {
			t.Fatalf("core %d", e.coreBalance("h:a"))
		}
		e.driftZero()
	}},
	{name: "offline/second_drain_is_a_noop", spec: "#2", run: func(t *testing.T, e *env) {
		e.account("h:a", "SATO HANAKO", 10_000)
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteDebit(e.ctx, debitHV("d1", "TX-1", "h:a", 3000)))
		e.drain()
		if d := e.drain(); d.Claimed != 0 || d.Applied != 0 {
			t.Fatalf("second drain: %+v", d)
		}
		row := e.rows(outbox.Filter{TxID: "TX-1"})[0]
		if len(e.journal(row.Posting.Ref)) != 1 || row.Sends != 1 {
			t.Fatalf("posting sent %d times", row.Sends)
		}
	}},
	{name: "offline/n_postings_drained_once_all_accounts_drift_zero", spec: "#6", run: func(t *testing.T, e *env) {
		for i, h := range []string{"h:a", "h:b", "h:c"} {
			e.account(h, fmt.Sprintf("HOLDER %c", 'A'+i), 5000)
		}
		e.core.SetOffline(true)
		want := map[string]int64{"h:a": 5000, "h:b": 5000, "h:c": 5000}
		for i := 0; i < 12; i++ {
			h := []string{"h:a", "h:b", "h:c"}[i%3]
			tx := fmt.Sprintf("TX-%d", i)
			if i%2 == 0 {
				check[bankapi.ExecuteResponse](t)(e.a.ExecuteCredit(e.ctx, credit("c"+tx, tx, h, int64(100+i))))
				want[h] += int64(100 + i)
			} else {
				check[bankapi.ExecuteResponse](t)(e.a.ExecuteDebit(e.ctx, debitHV("d"+tx, tx, h, int64(200+i))))
				want[h] -= int64(200 + i)
			}
		}
		e.drain()
		if e.counts()[outbox.Pending] != 12 {
			t.Fatalf("offline drain moved postings: %v", e.counts())
		}
		e.core.SetOffline(false)
		e.settle()
		if e.counts()[outbox.Applied] != 12 {
			t.Fatalf("counts %v", e.counts())
		}
		for h, w := range want {
			if got := e.coreBalance(h); got != w {
				t.Errorf("%s: core %d, want %d", h, got, w)
			}
		}
		e.driftZero()
	}},

	// ---- idempotency
	{name: "idempotency/duplicate_execute_credit_sequential", spec: "idempotency (sequential)", run: func(t *testing.T, e *env) {
		e.account("h:b", "YAMADA TARO", 0)
		r1 := check[bankapi.ExecuteResponse](t)(e.a.ExecuteCredit(e.ctx, credit("r1", "TX-1", "h:b", 1200)))
		e.drain()
		r2 := check[bankapi.ExecuteResponse](t)(e.a.ExecuteCredit(e.ctx, credit("r1", "TX-1", "h:b", 1200)))
		e.drain()
		if r1 != r2 {
			t.Fatalf("replay %+v differs from %+v", r2, r1)
		}
		if e.coreBalance("h:b") != 1200 || len(e.rows(outbox.Filter{})) != 1 {
			t.Fatalf("core %d, rows %d", e.coreBalance("h:b"), len(e.rows(outbox.Filter{})))
		}
	}},
	{name: "idempotency/duplicate_execute_credit_concurrent", spec: "concurrency: idempotency race", run: func(t *testing.T, e *env) {
		e.account("h:b", "YAMADA TARO", 0)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.a.ExecuteCredit(e.ctx, credit("r1", "TX-1", "h:b", 1200))
				if err != nil && domainerr.Code(err) != "LEGACY_ADAPTER_REQUEST_IN_FLIGHT" {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		e.settle()
		if e.coreBalance("h:b") != 1200 {
			t.Fatalf("core %d, want 1200 (applied once)", e.coreBalance("h:b"))
		}
	}},
	{name: "idempotency/duplicate_in_flight_gets_retryable_error", spec: "§18.1 IN_FLIGHT", run: func(t *testing.T, e *env) {
		e.account("h:b", "YAMADA TARO", 0)
		e.core.InjectFaultsForTest(coresim.Faults{DelayNextReply: 1, ReplyDelay: 600 * time.Millisecond})
		req := bankapi.NameCheckRequest{RequestIDValue: "n1", TxID: "TX-1", AccountHash: "h:b"}
		first := make(chan bankapi.NameCheckResponse, 1)
		go func() {
			r, err := e.a.NameCheck(e.ctx, req)
			if err != nil {
				t.Error(err)
			}
			first <- r
		}()
		waitClaimed(t, e, "n1") // the first call holds the claim while the core is slow
		_, err := e.a.NameCheck(e.ctx, req)
		de, ok := domainerr.As(err)
		if !ok || de.Code != "LEGACY_ADAPTER_REQUEST_IN_FLIGHT" || !de.Retryable() {
			t.Fatalf("duplicate while the first is in flight: %v", err)
		}
		if r := <-first; r.Result != bankapi.ResultMatch {
			t.Fatalf("first name-check: %+v", r)
		}
		e.core.InjectFaultsForTest(coresim.Faults{})
	}},
	{name: "idempotency/same_request_id_other_body_conflicts", spec: "idempotency", run: func(t *testing.T, e *env) {
		e.account("h:b", "YAMADA TARO", 0)
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteCredit(e.ctx, credit("r1", "TX-1", "h:b", 1200)))
		_, err := e.a.ExecuteCredit(e.ctx, credit("r1", "TX-1", "h:b", 9999))
		wantCode(t, err, "IDEMPOTENCY_KEY_CONFLICT")
		e.settle()
		if e.coreBalance("h:b") != 1200 {
			t.Fatal("conflicting body posted")
		}
	}},
	{name: "idempotency/retry_under_new_request_id_posts_once", spec: "idempotency (per txid)", run: func(t *testing.T, e *env) {
		e.account("h:a", "SATO HANAKO", 5000)
		r1 := check[bankapi.ExecuteResponse](t)(e.a.ExecuteDebit(e.ctx, debitHV("d1", "TX-1", "h:a", 500)))
		r2 := check[bankapi.ExecuteResponse](t)(e.a.ExecuteDebit(e.ctx, debitHV("d2", "TX-1", "h:a", 500)))
		if r1.BankProofRef.ProofID != r2.BankProofRef.ProofID {
			t.Fatalf("two proofs for one txid: %s %s", r1.BankProofRef.ProofID, r2.BankProofRef.ProofID)
		}
		e.settle()
		if e.coreBalance("h:a") != 4500 {
			t.Fatalf("core %d", e.coreBalance("h:a"))
		}
	}},

	// ---- #4 compensation
	{name: "compensation/reserve_debit_failure_reversal_net_zero", spec: "#4", run: func(t *testing.T, e *env) {
		e.account("h:a", "SATO HANAKO", 10_000)
		rsv := check[bankapi.ReserveFundsResponse](t)(e.a.ReserveFunds(e.ctx, bankapi.ReserveFundsRequest{RequestIDValue: "q1", TxID: "TX-1", Amount: jpy(4000), AccountHash: "h:a"}))
		if len(e.rows(outbox.Filter{})) != 0 || e.coreBalance("h:a") != 10_000 {
			t.Fatal("reserve-funds must act on the shadow only")
		}
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteDebit(e.ctx, debitReserved("d1", "TX-1", rsv.ReservationRef, 4000)))
		e.drain()
		if e.coreBalance("h:a") != 6000 {
			t.Fatalf("after debit: %d", e.coreBalance("h:a"))
		}
		// The payee leg failed downstream: compensate.
		c := check[adapter.CompensateResponse](t)(e.a.Compensate(e.ctx, adapter.CompensateRequest{RequestIDValue: "c1", TxID: "TX-1", Reason: "EXEC_CREDIT_FAILED"}))
		e.settle()
		if e.coreBalance("h:a") != 10_000 {
			t.Fatalf("net effect %d, want zero", e.coreBalance("h:a")-10_000)
		}
		rows := e.rows(outbox.Filter{TxID: "TX-1"})
		if len(rows) != 2 || rows[1].Posting.Kind != outbox.Reversal || rows[1].Posting.ReversalOf != rows[0].Posting.Ref || rows[1].Posting.Ref != c.Reversals[0] {
			t.Fatalf("outbox rows: %+v", rows)
		}
		rev := e.journal(c.Reversals[0])
		if len(rev) != 1 || rev[0].TxID != "TX-1" || rev[0].ReversalOf != rows[0].Posting.Ref || rev[0].Delta != 4000 {
			t.Fatalf("reversal journal: %+v", rev)
		}
		e.driftZero()
	}},
	{name: "compensation/reversal_queued_offline_keeps_order", spec: "#4", run: func(t *testing.T, e *env) {
		e.account("h:a", "SATO HANAKO", 10_000)
		e.core.SetOffline(true)
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteDebit(e.ctx, debitHV("d1", "TX-1", "h:a", 2500)))
		check[adapter.CompensateResponse](t)(e.a.Compensate(e.ctx, adapter.CompensateRequest{RequestIDValue: "c1", TxID: "TX-1", Reason: "EXEC_CREDIT_FAILED"}))
		e.drain()
		e.core.SetOffline(false)
		e.settle()
		lines, _ := e.core.Journal(e.ctx, e.coreAcc["h:a"])
		if len(lines) != 3 || lines[1].Kind != coresim.KindDebit || lines[2].Kind != coresim.KindReversal {
			t.Fatalf("journal order: %+v", lines)
		}
		if e.coreBalance("h:a") != 10_000 {
			t.Fatalf("core %d", e.coreBalance("h:a"))
		}
	}},
	{name: "compensation/blocked_debit_is_not_reversed", spec: "#4 + overdraft", run: func(t *testing.T, e *env) {
		e.account("h:a", "SATO HANAKO", 1000)
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteDebit(e.ctx, debitHV("d1", "TX-1", "h:a", 800)))
		noErr(t, e.core.AdjustBalanceOutOfBand(e.ctx, e.coreAcc["h:a"], -500))
		e.drain()
		_, err := e.a.Compensate(e.ctx, adapter.CompensateRequest{RequestIDValue: "c1", TxID: "TX-1"})
		wantCode(t, err, "STATE_GUARD")
		if n := len(e.rows(outbox.Filter{TxID: "TX-1"})); n != 1 {
			t.Fatalf("%d rows: a reversal was queued for a debit the core never applied", n)
		}
		e.adoptDrifts() // the out-of-band change is deliberate: a person accepts it
	}},

	// ---- #5 notifications
	{name: "notification/pulled_exactly_once", spec: "#5", run: func(t *testing.T, e *env) {
		check[bankapi.NotifyResponse](t)(e.a.CreditNotify(e.ctx, bankapi.CreditNotifyRequest{RequestIDValue: "n1", TxID: "TX-1", PayeeAccountHash: "h:b", Amount: jpy(1200), PayerBankID: "002"}))
		ns := check[[]adapter.Notification](t)(e.a.PullNotifications(e.ctx, 10))
		if len(ns) != 1 || ns[0].Ref != "TX-1" || ns[0].Amount != 1200 {
			t.Fatalf("first pull: %+v", ns)
		}
		if again, _ := e.a.PullNotifications(e.ctx, 10); len(again) != 0 {
			t.Fatalf("pulled twice: %+v", again)
		}
	}},
	{name: "notification/resend_is_not_duplicated", spec: "#5", run: func(t *testing.T, e *env) {
		req := bankapi.RTPNotifyRequest{RequestIDValue: "n1", RTPID: "RTP-1", PayeeBankID: "002", PayerBankID: "001", Amount: jpy(2000),
			ExpiresAt: "2026-12-03T00:00:00Z", PayeeName: "TANAKA SHOTEN"}
		for _, id := range []string{"n1", "n1", "n2"} {
			req.RequestIDValue = id
			if r, err := e.a.RTPNotify(e.ctx, req); err != nil || r.Result != bankapi.ResultNotified {
				t.Fatalf("rtp-notify %s: %+v %v", id, r, err)
			}
		}
		ns, _ := e.a.PullNotifications(e.ctx, 10)
		if len(ns) != 1 {
			t.Fatalf("pulled %d notifications, want 1", len(ns))
		}
	}},

	// ---- #3 reconciliation
	{name: "recon/clean_flow_drift_zero", spec: "#3", run: func(t *testing.T, e *env) {
		e.account("h:a", "SATO HANAKO", 10_000)
		e.account("h:b", "YAMADA TARO", 0)
		rsv, _ := e.a.ReserveFunds(e.ctx, bankapi.ReserveFundsRequest{RequestIDValue: "q1", TxID: "TX-1", Amount: jpy(1200), AccountHash: "h:a"})
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteDebit(e.ctx, debitReserved("d1", "TX-1", rsv.ReservationRef, 1200)))
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteCredit(e.ctx, credit("c1", "TX-1", "h:b", 1200)))
		e.settle()
		e.driftZero()
	}},
	{name: "recon/drift_zero_while_postings_pending", spec: "#3 (invariant holds with outbox pending)", run: func(t *testing.T, e *env) {
		e.account("h:a", "SATO HANAKO", 10_000)
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteDebit(e.ctx, debitHV("d1", "TX-1", "h:a", 700)))
		e.driftZero() // not drained yet
		if n := e.counts()[outbox.Pending]; n != 1 {
			t.Fatalf("pending %d", n)
		}
		e.settle()
		e.driftZero()
	}},
	{name: "recon/out_of_band_change_opens_drift_and_case", spec: "#3 out-of-band", run: func(t *testing.T, e *env) {
		e.account("h:a", "SATO HANAKO", 10_000)
		noErr(t, e.core.AdjustBalanceOutOfBand(e.ctx, e.coreAcc["h:a"], -300))
		rs := check[[]adapter.ReconResult](t)(e.a.ReconcileAll(e.ctx))
		if len(rs) != 1 || rs[0].Status != adapter.ReconDrift || rs[0].Drift != -300 || rs[0].CaseID == "" {
			t.Fatalf("recon: %+v", rs)
		}
		ds, _ := e.a.Drifts(e.ctx, "OPEN")
		if len(ds) != 1 || ds[0].CaseID != rs[0].CaseID || ds[0].ShadowBalance != 10_000 || ds[0].CoreBalance != 9700 {
			t.Fatalf("AdapterReconDrift: %+v", ds)
		}
		if k := e.caseRow(ds[0].CaseID); k.State != "OPEN" || k.ReasonCode != "RECON_DRIFT" || k.OpenedBy != "BANK" {
			t.Fatalf("case: %+v", k)
		}
		noErr(t, e.a.ResolveDrift(e.ctx, ds[0].DriftID, "teller correction confirmed", true))
		e.driftZero()
	}},
	{name: "recon/repeated_reconciliation_opens_one_case", spec: "#3 / audit #5", run: func(t *testing.T, e *env) {
		e.account("h:a", "SATO HANAKO", 10_000)
		noErr(t, e.core.AdjustBalanceOutOfBand(e.ctx, e.coreAcc["h:a"], 50))
		var first adapter.ReconResult
		for i := 0; i < 3; i++ {
			r := check[adapter.ReconResult](t)(e.a.ReconcileAccount(e.ctx, "h:a"))
			if i == 0 {
				first = r
			}
			if r.DriftID != first.DriftID || r.CaseID != first.CaseID {
				t.Fatalf("reconciliation %d: %+v, first %+v", i, r, first)
			}
		}
		var n int
		e.zc.Read(e.ctx, func(tx *store.Tx) error { return tx.QueryRowContext(e.ctx, `SELECT COUNT(*) FROM Cases`).Scan(&n) })
		if ds, _ := e.a.Drifts(e.ctx, ""); len(ds) != 1 || n != 1 {
			t.Fatalf("%d drifts, %d cases", len(ds), n)
		}
		e.adoptDrifts() // the out-of-band change is deliberate: a person accepts it
	}},
	{name: "recon/overnight_closing_balances", spec: "#3 (result file)", run: func(t *testing.T, e *env) {
		e.account("h:a", "SATO HANAKO", 10_000)
		e.account("h:b", "YAMADA TARO", 500)
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteCredit(e.ctx, credit("c1", "TX-1", "h:b", 250)))
		e.settle()
		closing := map[string]int64{}
		for _, h := range []string{"h:a", "h:b"} {
			closing[e.coreAcc[h]] = e.coreBalance(h)
		}
		closing[e.coreAcc["h:a"]] += 10 // the file shows a change the adapter never heard of
		rs := check[[]adapter.ReconResult](t)(e.a.ReconcileResultFile(e.ctx, closing))
		if rs[0].Status != adapter.ReconDrift || rs[0].Drift != 10 || rs[0].CaseID == "" || rs[1].Status != adapter.ReconMatched {
			t.Fatalf("recon: %+v", rs)
		}
	}},

	// ---- overdraft protection at drain time
	{name: "overdraft/drain_time_overdraft_blocked_with_case", spec: "overdraft protection", run: func(t *testing.T, e *env) {
		e.account("h:a", "SATO HANAKO", 1000)
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteDebit(e.ctx, debitHV("d1", "TX-1", "h:a", 800)))
		noErr(t, e.core.AdjustBalanceOutOfBand(e.ctx, e.coreAcc["h:a"], -500))
		if d := e.drain(); d.Blocked != 1 {
			t.Fatalf("drain: %+v", d)
		}
		row := e.rows(outbox.Filter{TxID: "TX-1"})[0]
		if row.Status != outbox.Blocked || row.ReasonCode != "INSUFFICIENT_FUNDS" || row.CaseID == "" {
			t.Fatalf("row: %+v", row)
		}
		if k := e.caseRow(row.CaseID); k.State != "OPEN" || k.RelatedTxID != "TX-1" {
			t.Fatalf("case: %+v", k)
		}
		if e.coreBalance("h:a") != 500 {
			t.Fatalf("core %d: it must never go negative nor be debited", e.coreBalance("h:a"))
		}
		e.adoptDrifts() // the out-of-band change is deliberate: a person accepts it
	}},
	{name: "overdraft/blocked_posting_is_not_retried", spec: "overdraft protection (no silent retry loop)", run: func(t *testing.T, e *env) {
		e.account("h:a", "SATO HANAKO", 1000)
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteDebit(e.ctx, debitHV("d1", "TX-1", "h:a", 800)))
		noErr(t, e.core.AdjustBalanceOutOfBand(e.ctx, e.coreAcc["h:a"], -500))
		for i := 0; i < 3; i++ {
			e.drain()
			e.resolve()
		}
		row := e.rows(outbox.Filter{TxID: "TX-1"})[0]
		if row.Status != outbox.Blocked || row.Sends != 1 {
			t.Fatalf("blocked row sent %d times (%s)", row.Sends, row.Status)
		}
		e.adoptDrifts() // the out-of-band change is deliberate: a person accepts it
	}},
	{name: "overdraft/requeue_after_resolution_applies_once", spec: "overdraft protection (operator path)", run: func(t *testing.T, e *env) {
		e.account("h:a", "SATO HANAKO", 1000)
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteDebit(e.ctx, debitHV("d1", "TX-1", "h:a", 800)))
		noErr(t, e.core.AdjustBalanceOutOfBand(e.ctx, e.coreAcc["h:a"], -500))
		e.drain()
		noErr(t, e.core.AdjustBalanceOutOfBand(e.ctx, e.coreAcc["h:a"], 500)) // the teller reverses the mistake
		row := e.rows(outbox.Filter{TxID: "TX-1"})[0]
		noErr(t, e.a.Outbox().Requeue(e.ctx, row.ID, "operator-1", "funds restored"))
		e.settle()
		if e.coreBalance("h:a") != 200 || len(e.journal(row.Posting.Ref)) != 1 {
			t.Fatalf("core %d", e.coreBalance("h:a"))
		}
		e.driftZero()
	}},

	// ---- timeouts
	{name: "timeout/no_reply_in_time_then_applied_once", spec: "timeout", opts: func(o *options) { o.timeout = 100 * time.Millisecond }, run: func(t *testing.T, e *env) {
		e.account("h:b", "YAMADA TARO", 0)
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteCredit(e.ctx, credit("c1", "TX-1", "h:b", 900)))
		e.core.InjectFaultsForTest(coresim.Faults{DelayNextReply: 1, ReplyDelay: 200 * time.Millisecond})
		e.drain()
		row := e.rows(outbox.Filter{TxID: "TX-1"})[0]
		if row.Status == outbox.Applied {
			t.Fatalf("a reply later than the timeout was taken as an answer: %+v", row)
		}
		e.core.InjectFaultsForTest(coresim.Faults{})
		e.settle()
		row = e.rows(outbox.Filter{TxID: "TX-1"})[0]
		if len(e.journal(row.Posting.Ref)) != 1 || e.coreBalance("h:b") != 900 {
			t.Fatalf("journal %d, core %d", len(e.journal(row.Posting.Ref)), e.coreBalance("h:b"))
		}
		e.driftZero()
	}},
	{name: "timeout/request_not_taken_in_time_is_resent_once", spec: "timeout (nothing lost)", opts: func(o *options) { o.timeout = 80 * time.Millisecond }, run: func(t *testing.T, e *env) {
		e.account("h:b", "YAMADA TARO", 0)
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteCredit(e.ctx, credit("c1", "TX-1", "h:b", 900)))
		e.stopCore() // the core process is down, though the link believes it online
		e.drain()
		row := e.rows(outbox.Filter{TxID: "TX-1"})[0]
		if row.Status != outbox.InDoubt && row.Status != outbox.Pending {
			t.Fatalf("row after an unanswered send: %+v", row)
		}
		time.Sleep(100 * time.Millisecond) // the request expires on the queue
		e.startCore()
		e.settle()
		row = e.rows(outbox.Filter{TxID: "TX-1"})[0]
		if row.Status != outbox.Applied || len(e.journal(row.Posting.Ref)) != 1 || e.coreBalance("h:b") != 900 {
			t.Fatalf("row %+v, core %d", row, e.coreBalance("h:b"))
		}
	}},

	// ---- concurrency
	{name: "concurrency/drain_double_post_race", spec: "concurrency: drain double-post race", run: func(t *testing.T, e *env) {
		e.account("h:b", "YAMADA TARO", 0)
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteCredit(e.ctx, credit("c1", "TX-1", "h:b", 1000)))
		var wg sync.WaitGroup
		for i := 0; i < 6; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := e.a.Outbox().Drain(e.ctx, 10); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		row := e.rows(outbox.Filter{TxID: "TX-1"})[0]
		if n := len(e.journal(row.Posting.Ref)); n != 1 || row.Sends != 1 || e.coreBalance("h:b") != 1000 {
			t.Fatalf("journalled %d times, sent %d, core %d", n, row.Sends, e.coreBalance("h:b"))
		}
	}},
	{name: "concurrency/many_drainers_keep_account_order", spec: "concurrency", run: func(t *testing.T, e *env) {
		e.account("h:a", "SATO HANAKO", 1_000_000)
		for i := 0; i < 10; i++ {
			tx := fmt.Sprintf("TX-%d", i)
			check[bankapi.ExecuteResponse](t)(e.a.ExecuteCredit(e.ctx, credit("c"+tx, tx, "h:a", 1000)))
			check[bankapi.ExecuteResponse](t)(e.a.ExecuteDebit(e.ctx, debitHV("d"+tx, tx, "h:a", 500+int64(i))))
			check[bankapi.ExecuteResponse](t)(e.a.ExecuteCredit(e.ctx, credit("x"+tx, tx+"-fee", "h:a", int64(1+i))))
		}
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := e.a.Outbox().Drain(e.ctx, 100); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		e.settle()
		if c := e.counts(); c[outbox.Applied] != 30 {
			t.Fatalf("counts %v", c)
		}
		rows := e.rows(outbox.Filter{})
		lines, _ := e.core.Journal(e.ctx, e.coreAcc["h:a"])
		for i, r := range rows {
			if lines[i+1].Ref != r.Posting.Ref {
				t.Fatalf("journal position %d is %s, outbox order says %s", i+1, lines[i+1].Ref, r.Posting.Ref)
			}
		}
	}},

	// ---- stale CLAIMED recovery
	{name: "stale_claim/unsent_claim_recovered_and_applied_once", spec: "stale CLAIMED recovery", run: func(t *testing.T, e *env) {
		e.account("h:b", "YAMADA TARO", 0)
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteCredit(e.ctx, credit("c1", "TX-1", "h:b", 400)))
		row := e.rows(outbox.Filter{TxID: "TX-1"})[0]
		if ref := e.crashDrainer(false); ref != row.Posting.Ref { // a drainer claimed it and died before sending
			t.Fatalf("crashed drainer claimed %q", ref)
		}
		if d := e.drain(); d.Claimed != 0 {
			t.Fatalf("a live claim was taken over: %+v", d)
		}
		e.clk.Advance(10 * time.Minute)
		if n := check[int](t)(e.a.Outbox().RecoverStaleClaims(e.ctx, 5*time.Minute)); n != 1 {
			t.Fatalf("recovered %d", n)
		}
		e.settle()
		if n := len(e.journal(row.Posting.Ref)); n != 1 || e.coreBalance("h:b") != 400 {
			t.Fatalf("journalled %d times, core %d", n, e.coreBalance("h:b"))
		}
		e.driftZero()
	}},
	{name: "stale_claim/applied_before_the_crash_is_not_resent", spec: "stale CLAIMED recovery (physically separate core)", run: func(t *testing.T, e *env) {
		e.account("h:b", "YAMADA TARO", 0)
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteCredit(e.ctx, credit("c1", "TX-1", "h:b", 400)))
		row := e.rows(outbox.Filter{TxID: "TX-1"})[0]
		// A drainer sent it, the core applied it, and the drainer died.
		if ref := e.crashDrainer(true); ref != row.Posting.Ref {
			t.Fatalf("crashed drainer claimed %q", ref)
		}
		if len(e.journal(row.Posting.Ref)) != 1 {
			t.Fatal("the core did not apply the crashed drainer's posting")
		}
		e.clk.Advance(10 * time.Minute)
		check[int](t)(e.a.Outbox().RecoverStaleClaims(e.ctx, 5*time.Minute))
		e.settle()
		row = e.rows(outbox.Filter{TxID: "TX-1"})[0]
		if n := len(e.journal(row.Posting.Ref)); n != 1 || row.Status != outbox.Applied {
			t.Fatalf("journalled %d times, row %+v", n, row)
		}
		e.driftZero()
	}},

	// ---- name-check deferral
	{name: "name_check/not_real_time_bank_defers", spec: "name-check", opts: func(o *options) { o.realTime = false }, run: func(t *testing.T, e *env) {
		e.account("h:b", "YAMADA TARO", 0)
		r := check[bankapi.NameCheckResponse](t)(e.a.NameCheck(e.ctx, bankapi.NameCheckRequest{RequestIDValue: "n1", TxID: "TX-1", AccountHash: "h:b"}))
		if r.Result != bankapi.ResultDeferred {
			t.Fatalf("name-check: %+v", r)
		}
	}},
	{name: "name_check/batch_window_defers_without_error", spec: "name-check", run: func(t *testing.T, e *env) {
		e.account("h:b", "YAMADA TARO", 0)
		e.clk.Set(time.Date(2026, 12, 2, 14, 30, 0, 0, time.UTC)) // 23:30 JST
		r, err := e.a.NameCheck(e.ctx, bankapi.NameCheckRequest{RequestIDValue: "n1", TxID: "TX-1", AccountHash: "h:b"})
		if err != nil || r.Result != bankapi.ResultDeferred {
			t.Fatalf("name-check in the batch window: %+v %v", r, err)
		}
		// The transfer is not dropped: after the window the same request is answered.
		e.clk.Set(start.Add(24 * time.Hour))
		if r, err := e.a.NameCheck(e.ctx, bankapi.NameCheckRequest{RequestIDValue: "n1", TxID: "TX-1", AccountHash: "h:b"}); err != nil || r.Result != bankapi.ResultMatch {
			t.Fatalf("after the window: %+v %v", r, err)
		}
	}},
	{name: "name_check/core_not_answering_defers_without_error", spec: "name-check", opts: func(o *options) { o.timeout = 80 * time.Millisecond }, run: func(t *testing.T, e *env) {
		e.account("h:b", "YAMADA TARO", 0)
		e.core.SetOffline(true)
		r, err := e.a.NameCheck(e.ctx, bankapi.NameCheckRequest{RequestIDValue: "n1", TxID: "TX-1", AccountHash: "h:b"})
		if err != nil || r.Result != bankapi.ResultDeferred {
			t.Fatalf("name-check with the core offline: %+v %v", r, err)
		}
		e.core.SetOffline(false)
	}},
	{name: "name_check/online_match_and_mismatch", spec: "name-check", run: func(t *testing.T, e *env) {
		e.account("h:b", "YAMADA TARO", 0)
		e.core.OpenAccount(e.ctx, coreacct.Format("100", 1, "0000777"), "SUZUKI ICHIRO", 0)
		noErr(t, e.a.OpenAccount(e.ctx, adapter.Account{Hash: "h:stale", CoreAccount: coreacct.Format("100", 1, "0000777"), HolderName: "SUZUKI JIRO"}, 0))
		for _, c := range []struct{ hash, result, reason string }{
			{"h:b", bankapi.ResultMatch, ""},
			{"h:stale", bankapi.ResultMismatch, bankapi.ReasonNameMismatch},
			{"h:none", bankapi.ResultMismatch, bankapi.ReasonAccountNotFound},
		} {
			r, err := e.a.NameCheck(e.ctx, bankapi.NameCheckRequest{RequestIDValue: "n-" + c.hash, TxID: "TX-1", AccountHash: c.hash})
			if err != nil || r.Result != c.result || r.ReasonCode != c.reason {
				t.Errorf("%s: %+v %v", c.hash, r, err)
			}
		}
	}},
	{name: "account_verify/scores_and_never_returns_the_stored_name", spec: "spec 004 account-verify", run: func(t *testing.T, e *env) {
		e.account("h:b", "YAMADA TARO", 0)
		for i, c := range []struct {
			name   string
			result string
			score  float64
		}{
			{"YAMADA TARO", bankapi.ResultMatched, 1.0}, {"YAMADA TAR", bankapi.ResultMatched, 0.8}, {"TANAKA JIRO", bankapi.ResultMismatched, 0},
		} {
			r := check[bankapi.AccountVerifyResponse](t)(e.a.AccountVerify(e.ctx, bankapi.AccountVerifyRequest{RequestIDValue: fmt.Sprint("v", i), VerificationID: "V", TargetAccountHash: "h:b", TargetAccountName: c.name}))
			if r.Result != c.result || r.MatchScore != c.score || r.NameProvided == nil || *r.NameProvided != c.name {
				t.Errorf("%q: %+v", c.name, r)
			}
		}
	}},
}

// waitClaimed waits until the request_id's claim is committed (PROCESSING).
func waitClaimed(t *testing.T, e *env, requestID string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		var status string
		_ = e.a.DB().Read(e.ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(e.ctx, `SELECT status FROM IdempotencyKeys WHERE key = ?`, "ZCREQ:"+e.bank+":"+requestID).Scan(&status)
		})
		if status == "PROCESSING" {
			return
		}
	}
	t.Fatalf("request %s was never claimed", requestID)
}

// TestConcurrentCasesRace reruns the cases that race goroutines, so the CI
// race-detector run (-run 'Race|Concurrent|Parallel') covers them.
func TestConcurrentCasesRace(t *testing.T) {
	for _, c := range specCases {
		if !strings.HasPrefix(c.name, "concurrency/") && c.name != "idempotency/duplicate_execute_credit_concurrent" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, defaultOptions())
			c.run(t, e)
			if !t.Failed() {
				e.checkConsistent()
			}
		})
	}
}
