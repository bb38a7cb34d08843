package eod

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"
	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/jobs/scheduler"
	"github.com/zcgw/zcgw/jobs/workbook"
)

// TestEODFromBalanceFileFindsEveryDriftOneCasePerCause injects the three
// causes of drift into bank 002 (clean in the fixture) and runs EOD, which
// reconciles from the core balance file the simulated core drops
// (coresim → adapter.ReconcileBalanceFile → Cases): an out-of-band teller
// change (-2,000), a posting the shadow holds APPLIED that the core never
// made (missing posting, -3,000) and a posting the core made that the
// shadow never sent (extra posting, +4,000). Each is found with its
// amount on its account; a posting applied after the file's cutoff is not
// a drift (UNSETTLED); each cause opens exactly one RECON_DRIFT Case of
// its own (cause key CAUSE:002:RECON_DRIFT:{account hash}:{drift}) naming
// the account and the amount, the workbook shows each drift with its
// Case, and a forced re-run of the same date records and opens nothing
// more.
func TestEODFromBalanceFileFindsEveryDriftOneCasePerCause(t *testing.T) {
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
		caseIDs := map[string]string{}
		for _, d := range ds {
			if _, dup := got[d.CoreAccount]; dup {
				t.Errorf("two drift rows for %s", d.CoreAccount)
			}
			got[d.CoreAccount] = d.Drift
			if d.Source != adapter.SourceBalanceFile || d.Status != "OPEN" || d.CaseID == "" {
				t.Errorf("drift %+v", d)
			}
			if other, dup := caseIDs[d.CaseID]; dup {
				t.Errorf("drifts of %s and %s share Case %s", other, d.CoreAccount, d.CaseID)
			}
			caseIDs[d.CaseID] = d.CoreAccount
			// The Case is this cause's: its key names the account (by
			// hash) and the amount, its description the account and the
			// amount.
			key := fmt.Sprintf("CAUSE:002:RECON_DRIFT:%s:%+d", d.AccountHash, d.Drift)
			desc := fmt.Sprintf("%%account %s: core balance %d, shadow %d (drift %+d)", d.CoreAccount, d.CoreBalance, d.ShadowBalance, d.Drift)
			if n := count(t, f.db, `SELECT COUNT(*) FROM Cases WHERE case_id = ? AND reason_code = 'RECON_DRIFT' AND cause_party_id = '002'
				AND state = 'OPEN' AND cause_key = ? AND description LIKE ?`, d.CaseID, key, desc); n != 1 {
				t.Errorf("Case %s of drift %+v: not the OPEN RECON_DRIFT Case %s described %q", d.CaseID, d, key, desc)
			}
		}
		want := map[string]int64{"100-1-0000001": -2000, "100-1-0000002": -3000, "100-1-0000003": 4000}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("drifts %v, want %v", got, want)
		}
		if len(caseIDs) != 3 {
			t.Errorf("drift Cases %v, want one per cause (3)", caseIDs)
		}
		if n := count(t, f.db, `SELECT COUNT(*) FROM Cases WHERE reason_code = 'RECON_DRIFT' AND cause_party_id = '002'`); n != 3 {
			t.Errorf("bank 002 RECON_DRIFT Cases = %d, want 3 (one per cause)", n)
		}
		if n := count(t, f.db, `SELECT COUNT(*) FROM Cases WHERE reason_code = 'RECON_DRIFT'`); n != 4 {
			t.Errorf("RECON_DRIFT Cases = %d, want 4 (bank 001's fixture drift and bank 002's three)", n)
		}
		// The workbook shows each drift with its Case, and each Case.
		wb, err := excelize.OpenFile(workbook.Path(f.dir, day))
		if err != nil {
			t.Fatal(err)
		}
		defer wb.Close()
		driftRows, _ := wb.GetRows(workbook.SheetDrift)
		excRows, _ := wb.GetRows(workbook.SheetExceptions)
		for id, acct := range caseIDs {
			shown := 0
			for _, row := range driftRows {
				if len(row) > 7 && row[0] == "002" && row[2] == acct && row[7] == id {
					shown++
				}
			}
			listed := 0
			for _, row := range excRows {
				if len(row) > 10 && row[1] == "CASE" && row[9] == "RECON_DRIFT" && row[10] == id {
					listed++
				}
			}
			if shown != 1 || listed != 1 {
				t.Errorf("workbook: drift of %s with Case %s on %d Drift rows and %d Exceptions rows, want 1 and 1", acct, id, shown, listed)
			}
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
