package adapterconf

import (
	"testing"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/outbox"
)

// Cases with two banks of one settlement: each bank has its own adapter
// and its own core database; they share the queue manager and the
// coordinator database.
var twoBankCases = []conformanceCase{
	{name: "two_banks/clean_transfer_moves_money_drift_zero", spec: "#3 clean flow", run: func(t *testing.T, e *env) {
		p := newBank(t, e.opts, "002", e)
		e.account("h:a", "SATO HANAKO", 10_000)
		p.account("h:b", "YAMADA TARO", 500)
		rsv := check[bankapi.ReserveFundsResponse](t)(e.a.ReserveFunds(e.ctx, bankapi.ReserveFundsRequest{RequestIDValue: "q1", TxID: "TX-1", Amount: jpy(1200), AccountHash: "h:a"}))
		check[bankapi.NameCheckResponse](t)(p.a.NameCheck(e.ctx, bankapi.NameCheckRequest{RequestIDValue: "n1", TxID: "TX-1", AccountHash: "h:b"}))
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteDebit(e.ctx, debitReserved("d1", "TX-1", rsv.ReservationRef, 1200)))
		check[bankapi.ExecuteResponse](t)(p.a.ExecuteCredit(e.ctx, credit("c1", "TX-1", "h:b", 1200)))
		check[bankapi.DebitSettledResponse](t)(e.a.DebitSettled(e.ctx, bankapi.DebitSettledRequest{RequestIDValue: "s1", TxID: "TX-1", Amount: jpy(1200), PayeeBankID: "002", SettledAt: "2026-12-02T01:00:01Z"}))
		check[bankapi.NotifyResponse](t)(p.a.CreditNotify(e.ctx, bankapi.CreditNotifyRequest{RequestIDValue: "cn1", TxID: "TX-1", PayeeAccountHash: "h:b", Amount: jpy(1200), PayerBankID: "001"}))
		e.settle()
		p.settle()
		if a, b := e.coreBalance("h:a"), p.coreBalance("h:b"); a != 8800 || b != 1700 {
			t.Fatalf("payer core %d, payee core %d", a, b)
		}
		e.driftZero()
		p.driftZero()
		p.checkConsistent()
	}},
	{name: "two_banks/payee_leg_fails_payer_reversed_net_zero", spec: "#4 across two cores", run: func(t *testing.T, e *env) {
		p := newBank(t, e.opts, "002", e)
		e.account("h:a", "SATO HANAKO", 10_000)
		p.account("h:b", "YAMADA TARO", 500)
		rsv := check[bankapi.ReserveFundsResponse](t)(e.a.ReserveFunds(e.ctx, bankapi.ReserveFundsRequest{RequestIDValue: "q1", TxID: "TX-1", Amount: jpy(3000), AccountHash: "h:a"}))
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteDebit(e.ctx, debitReserved("d1", "TX-1", rsv.ReservationRef, 3000)))
		e.settle()
		// The payee leg fails downstream: the payee bank has no such account.
		_, err := p.a.ExecuteCredit(e.ctx, credit("c1", "TX-1", "h:closed", 3000))
		wantCode(t, err, "ACCOUNT_NOT_FOUND")
		check[adapter.CompensateResponse](t)(e.a.Compensate(e.ctx, adapter.CompensateRequest{RequestIDValue: "comp-1", TxID: "TX-1", Reason: "EXEC_CREDIT_FAILED"}))
		e.settle()
		if a, b := e.coreBalance("h:a"), p.coreBalance("h:b"); a != 10_000 || b != 500 {
			t.Fatalf("payer core %d (want 10000), payee core %d (want 500)", a, b)
		}
		if n := len(p.rows(outbox.Filter{})); n != 0 {
			t.Fatalf("payee bank queued %d postings", n)
		}
		lines, _ := e.core.Journal(e.ctx, e.coreAcc["h:a"])
		if len(lines) != 3 || lines[1].TxID != "TX-1" || lines[2].TxID != "TX-1" || lines[2].ReversalOf != lines[1].Ref {
			t.Fatalf("payer journal: %+v", lines)
		}
		e.driftZero()
		p.driftZero()
		p.checkConsistent()
	}},
}
