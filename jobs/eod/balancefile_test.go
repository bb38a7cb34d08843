package eod

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

// TestEODFromBalanceFileFindsEveryDrift injects the three causes of drift
// into bank 002 (clean in the fixture) and runs EOD, which reconciles from
// the core balance file the simulated core drops: an out-of-band teller
// change (-2,000), a posting the shadow holds APPLIED that the core never
// made (missing posting, -3,000) and a posting the core made that the
// shadow never sent (extra posting, +4,000). Each is found with its
// amount on its account; a posting applied after the file's cutoff is not
// a drift (UNSETTLED); the bank's drifts go to one RECON_DRIFT Case (one
// cause: CAUSE:002:RECON_DRIFT), and a forced re-run records and opens
// nothing more.
func TestEODFromBalanceFileFindsEveryDrift(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	core, a := f.cores["002"], f.banks[1]
	for i := 3; i <= 5; i++ {
		acct := fmt.Sprintf("100-1-%07d", i)
		if err := core.OpenAccount(ctx, acct, "YAMADA TARO", 100000); err != nil {
			t.Fatal(err)
		}
		if err := a.OpenAccountFromCore(ctx, adapter.Account{Hash: fmt.Sprintf("002:h%d", i), CoreAccount: acct, HolderName: "YAMADA TARO"}); err != nil {
			t.Fatal(err)
		}
	}
	// Teller change on 100-1-0000001.
	if err := core.AdjustBalanceOutOfBand(ctx, "100-1-0000001", -2000); err != nil {
		t.Fatal(err)
	}
	// Missing posting on 100-1-0000002: the shadow has it APPLIED, the core never made it.
	now := clock.Stamp(f.clk.Now())
	mustExec(t, a.DB(), `INSERT INTO AdapterOutbox (ref, txid, bank, account, kind, amount, status, sends, created_at, updated_at, applied_at)
		VALUES ('MISSING-REF', 'TX-MISSING', '002', '100-1-0000002', 'CREDIT', 3000, 'APPLIED', 1, ?, ?, ?)`, now, now, now)
	mustExec(t, a.DB(), `INSERT INTO AdapterPostings (ref, outbox_id, txid, account_hash, kind, direction, amount, request_id, created_at)
		VALUES ('MISSING-REF', (SELECT id FROM AdapterOutbox WHERE ref = 'MISSING-REF'), 'TX-MISSING', '002:h2', 'CREDIT', 1, 3000, 'RQ-MISSING', ?)`, now)
	// Extra posting on 100-1-0000003: the core made it, the shadow never sent it.
	if out, err := core.Post(ctx, coresim.PostIn{Ref: "EXTRA-REF", TxID: "TX-EXTRA", Account: "100-1-0000003", Kind: coresim.KindCredit, Amount: 4000}); err != nil || !out.Applied {
		t.Fatalf("extra posting: %+v %v", out, err)
	}
	// 100-1-0000004 gets a credit applied after the core cut its file.
	cfg := f.cfg
	late := false
	cfg.BalanceFile = func(ctx context.Context, bank, date string) (string, error) {
		path, err := f.dropBalanceFile(ctx, bank, date)
		if err != nil || bank != "002" || late {
			return path, err
		}
		late = true
		f.clk.Advance(2 * time.Second)
		if _, err := a.ExecuteCredit(ctx, bankapi.ExecuteCreditRequest{RequestIDValue: "late", TxID: "TX-LATE",
			Amount: bankapi.Amount{Value: 900, Currency: "JPY"}, DecisionProofRef: "DP", PayeeAccountHash: "002:h4"}); err != nil {
			return "", err
		}
		if _, err := a.Outbox().Drain(ctx, 10); err != nil {
			return "", err
		}
		return path, nil
	}
	r := f.runner(t, cfg)
	if _, err := r.Run(ctx, scheduler.Request{Job: JobName, BusinessDate: day}); err != nil {
		t.Fatal(err)
	}
	check := func(matched, unsettled int) {
		t.Helper()
		ds, err := a.Drifts(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		caseIDs := map[string]bool{}
		for _, d := range ds {
			if _, dup := got[d.CoreAccount]; dup {
				t.Errorf("two drift rows for %s", d.CoreAccount)
			}
			got[d.CoreAccount] = d.Drift
			if d.Source != adapter.SourceBalanceFile || d.Status != "OPEN" || d.CaseID == "" {
				t.Errorf("drift %+v", d)
			}
			caseIDs[d.CaseID] = true
		}
		want := map[string]int64{"100-1-0000001": -2000, "100-1-0000002": -3000, "100-1-0000003": 4000}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("drifts %v, want %v", got, want)
		}
		if len(caseIDs) != 1 {
			t.Errorf("drift Cases %v, want the one Case of cause CAUSE:002:RECON_DRIFT", caseIDs)
		}
		for id := range caseIDs {
			if n := count(t, f.db, `SELECT COUNT(*) FROM Cases WHERE case_id = ? AND reason_code = 'RECON_DRIFT' AND cause_party_id = '002'`, id); n != 1 {
				t.Errorf("Case %s not a RECON_DRIFT Case of bank 002", id)
			}
		}
		if n := count(t, f.db, `SELECT COUNT(*) FROM Cases WHERE reason_code = 'RECON_DRIFT'`); n != 2 {
			t.Errorf("RECON_DRIFT Cases = %d, want 2 (one per bank with drifts)", n)
		}
		if n := count(t, f.db, `SELECT drifts FROM EodReconciliations WHERE bank_id = '002'`); n != 3 {
			t.Errorf("bank 002 drifts = %d, want 3", n)
		}
		if n := count(t, f.db, `SELECT unsettled FROM EodReconciliations WHERE bank_id = '002'`); n != unsettled {
			t.Errorf("bank 002 unsettled = %d, want %d", n, unsettled)
		}
		if n := count(t, f.db, `SELECT matched FROM EodReconciliations WHERE bank_id = '002'`); n != matched {
			t.Errorf("bank 002 matched = %d, want %d", n, matched)
		}
	}
	check(1, 1) // 100-1-0000005 matched; 100-1-0000004's credit came after the cutoff
	if _, err := r.Run(ctx, scheduler.Request{Job: JobName, BusinessDate: day, Force: true, Reason: "test", By: "t"}); err != nil {
		t.Fatal(err)
	}
	// The re-run's file is cut after that credit: 100-1-0000004 matches now.
	check(2, 0)
}
