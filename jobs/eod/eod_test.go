package eod

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/ledger"
	"github.com/zcgw/zcgw/jobs/scheduler"
	"github.com/zcgw/zcgw/jobs/workbook"
	"github.com/zcgw/zcgw/outbox"
)

// directCore reaches a simulated core in-process (no MQ): the adapter's
// outbox posts through it and reconciliation asks it for balances.
type directCore struct{ c *coresim.Core }

func (d directCore) Apply(ctx context.Context, p outbox.Posting) (outbox.ApplyResult, error) {
	out, err := d.c.Post(ctx, coresim.PostIn{Ref: p.Ref, TxID: p.TxID, Account: p.Account, Kind: string(p.Kind),
		Amount: p.Amount, ReversalOf: p.ReversalOf})
	if err != nil {
		return outbox.ApplyResult{}, &outbox.InDoubtError{Cause: err}
	}
	if !out.Applied {
		code := map[string]string{coresim.ReasonInsufficientFunds: "INSUFFICIENT_FUNDS", coresim.ReasonAccountNotFound: "ACCOUNT_NOT_FOUND"}[out.ReasonCode]
		if code == "" {
			code = "BANK_ERROR"
		}
		return outbox.ApplyResult{}, &outbox.RefusedError{ReasonCode: code, Message: out.ReasonCode}
	}
	return outbox.ApplyResult{CoreRef: fmt.Sprint(out.JournalID), BalanceAfter: out.BalanceAfter}, nil
}

func (d directCore) Lookup(ctx context.Context, ref string) (outbox.LookupResult, error) {
	out, err := d.c.Lookup(ctx, ref)
	if err != nil {
		return outbox.LookupResult{}, err
	}
	return outbox.LookupResult{State: outbox.LookupState(out.State), ReasonCode: out.ReasonCode}, nil
}

func (d directCore) Balance(ctx context.Context, account string) (adapter.CoreBalance, error) {
	b, err := d.c.Balance(ctx, account)
	if err != nil {
		return adapter.CoreBalance{}, err
	}
	if !b.Found {
		return adapter.CoreBalance{}, domainerr.New("ACCOUNT_NOT_FOUND", "no such account at the core", map[string]any{"account": account})
	}
	return adapter.CoreBalance{Ledger: b.Balance, Currency: b.Currency}, nil
}

func (d directCore) NameCheck(ctx context.Context, account, name string) (adapter.NameResult, error) {
	return adapter.NameMatch, nil
}

// Business date 2026-12-01, EOD at 23:30 JST.
var eodTime = time.Date(2026, 12, 1, 14, 30, 0, 0, time.UTC)

const day = "2026-12-01"

type fixture struct {
	dir   string
	clk   *clock.Manual
	db    *store.DB
	led   *ledger.Ledger
	banks []*adapter.Adapter
	cores map[string]*coresim.Core
	cfg   Config
}

// newFixture builds zc.db with two participants (daily totals used), a
// FinalityLog with one tampered chain, a DNS cycle, and two banks: bank
// 001 has an account the core changed out of band (drift) and a posting
// the core refused (BLOCKED with a Case); bank 002 is clean.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{dir: t.TempDir(), clk: clock.NewManual(eodTime), cores: map[string]*coresim.Core{}}
	var err error
	path := ledger.Path(f.dir)
	if f.db, err = store.OpenCoordinator(ctx, path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.db.Close() })
	if f.led, err = ledger.Open(ctx, path, f.clk); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.led.Close() })
	mustExec(t, f.db, `INSERT INTO Participants (bank_id, bank_name, ingress_base_url, registered_at, daily_amount_limit, daily_amount_used, daily_amount_last_reset_date)
		VALUES ('001','Bank One','/bank/001','2026-01-01T00:00:00Z', 1000000, 400000, '2026-12-01'),
		       ('002','Bank Two','/bank/002','2026-01-01T00:00:00Z', 1000000, 250000, '2026-12-01')`)
	log := finality.New(f.clk)
	if err := f.db.Write(ctx, func(tx *store.Tx) error {
		for i, tx1 := range []string{"TX-A", "TX-A", "TX-B"} {
			if _, err := log.Append(ctx, tx, finality.Event{TxID: tx1, Type: finality.PaymentInitiated, StateTo: fmt.Sprint("S", i)}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mustExec(t, f.db, `UPDATE FinalityLog SET payload_json = '{"amount":999999}' WHERE txid = 'TX-B'`)
	mustExec(t, f.db, `INSERT INTO DnsCycles (cycle_id, business_date, state, created_at) VALUES ('DNS-JPY-20261201-01','2026-12-01','SETTLED','2026-12-01T07:00:00Z')`)
	mustExec(t, f.db, `INSERT INTO DnsNetPositions (id, cycle_id, bank_id, gross_send, gross_receive, net_position, is_settled) VALUES
		('p1','DNS-JPY-20261201-01','001',90000,30000,-60000,1), ('p2','DNS-JPY-20261201-01','002',30000,90000,60000,1)`)

	cs := cases.New(f.clk, nil, 0)
	for _, bank := range []string{"001", "002"} {
		core, err := coresim.Open(ctx, coresim.Config{Bank: bank, DBPath: filepath.Join(f.dir, "core-"+bank+".db"), Clock: f.clk})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { core.Close() })
		f.cores[bank] = core
		a, err := adapter.Open(ctx, adapter.Config{BankID: bank, DBPath: filepath.Join(f.dir, "adapter-"+bank+".db"),
			Core: directCore{core}, Inquiry: directCore{core}, Cases: adapter.CoordinatorCases{DB: f.db, Cases: cs}, Clock: f.clk})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		f.banks = append(f.banks, a)
		if _, err := a.InitializeBank(ctx, bankapi.InitializeBankRequest{}); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 2; i++ {
			acct := fmt.Sprintf("100-1-%07d", i)
			if err := core.OpenAccount(ctx, acct, "YAMADA TARO", 100000); err != nil {
				t.Fatal(err)
			}
			if err := a.OpenAccountFromCore(ctx, adapter.Account{Hash: bank + ":h" + fmt.Sprint(i), CoreAccount: acct, HolderName: "YAMADA TARO"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Bank 001: an out-of-band change (drift) and a credit the core refuses.
	if err := f.cores["001"].AdjustBalanceOutOfBand(ctx, "100-1-0000001", 1500); err != nil {
		t.Fatal(err)
	}
	a1 := f.banks[0]
	if err := a1.OpenAccount(ctx, adapter.Account{Hash: "001:gone", CoreAccount: "100-1-0000009", HolderName: "SATO"}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := a1.ExecuteCredit(ctx, bankapi.ExecuteCreditRequest{RequestIDValue: "r1", TxID: "TX-C1",
		Amount: bankapi.Amount{Value: 5000, Currency: "JPY"}, DecisionProofRef: "DP", PayeeAccountHash: "001:gone"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a1.ExecuteCredit(ctx, bankapi.ExecuteCreditRequest{RequestIDValue: "r2", TxID: "TX-C2",
		Amount: bankapi.Amount{Value: 7000, Currency: "JPY"}, DecisionProofRef: "DP", PayeeAccountHash: "001:h2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a1.Outbox().Drain(ctx, 10); err != nil {
		t.Fatal(err)
	}
	f.cfg = Config{DB: f.db, Banks: f.banks, DataDir: f.dir, Cases: cs, Clock: f.clk, BalanceFile: f.dropBalanceFile}
	return f
}

func mustExec(t *testing.T, db *store.DB, q string, args ...any) {
	t.Helper()
	if err := db.Write(context.Background(), func(tx *store.Tx) error {
		_, err := tx.ExecContext(context.Background(), q, args...)
		return err
	}); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func count(t *testing.T, db *store.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Read(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), q, args...).Scan(&n)
	}); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// dropBalanceFile has the bank's simulated core write its balance file
// into the data folder now, as a core does in its batch window.
func (f *fixture) dropBalanceFile(ctx context.Context, bank, date string) (string, error) {
	return f.cores[bank].DropBalanceFile(ctx, BalanceDir(f.dir), date)
}

func (f *fixture) runner(t testing.TB, cfg Config) *scheduler.Runner {
	t.Helper()
	reg := scheduler.NewRegistry()
	if _, err := Register(context.Background(), reg, cfg); err != nil {
		t.Fatal(err)
	}
	r, err := scheduler.NewRunner(scheduler.Options{Ledger: f.led, Registry: reg, Config: scheduler.DefaultConfig(), Clock: f.clk})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// assertDone checks every step's effect exactly once.
func (f *fixture) assertDone(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	checks := []struct {
		q    string
		want int
	}{
		{`SELECT COUNT(*) FROM EodBusinessDates WHERE business_date = '2026-12-01'`, 1},
		{`SELECT COUNT(*) FROM EodLimitResets WHERE business_date = '2026-12-01'`, 2},
		{`SELECT COALESCE(SUM(used_before),0) FROM EodLimitResets`, 650000},
		{`SELECT COUNT(*) FROM Participants WHERE daily_amount_used = 0 AND daily_amount_last_reset_date = '2026-12-02'`, 2},
		{`SELECT COUNT(*) FROM EodChainAudits`, 1},
		{`SELECT COUNT(*) FROM Cases WHERE detection_path = 'EOD_CHAIN_AUDIT' AND reason_code = 'CHAIN_TAMPERED'`, 1},
		{`SELECT COUNT(*) FROM Cases WHERE reason_code = 'RECON_DRIFT'`, 1},
		{`SELECT COUNT(*) FROM EodReconciliations WHERE business_date = '2026-12-01'`, 2},
		{`SELECT drifts FROM EodReconciliations WHERE bank_id = '001'`, 1},
		{`SELECT COUNT(*) FROM EodWorkbooks`, 1},
	}
	for _, c := range checks {
		if got := count(t, f.db, c.q); got != c.want {
			t.Errorf("%s = %d, want %d", c.q, got, c.want)
		}
	}
	ds, err := f.banks[0].Drifts(ctx, "")
	if err != nil || len(ds) != 1 || ds[0].Drift != 1500 {
		t.Errorf("bank 001 drift rows %+v %v, want one of 1500", ds, err)
	}
	wb, err := excelize.OpenFile(workbook.Path(f.dir, day))
	if err != nil {
		t.Fatal(err)
	}
	defer wb.Close()
	for _, c := range []struct{ sheet, cell, want string }{
		{workbook.SheetSummary, "A4", "001"},
		{workbook.SheetSummary, "B4", "3"},        // accounts
		{workbook.SheetSummary, "G4", "1"},        // drift count
		{workbook.SheetSummary, "L4", "1"},        // BLOCKED
		{workbook.SheetSummary, "M4", "-¥60,000"}, // net DNS
		{workbook.SheetSummary, "M5", "¥60,000"},
		{workbook.SheetSummary, "E4", "¥1,500"}, // core - shadow over answered accounts
		{workbook.SheetDrift, "C2", "100-1-0000001"},
		{workbook.SheetDrift, "F2", "¥1,500"},
		{workbook.SheetExceptions, "B2", "POSTING"},
		{workbook.SheetExceptions, "I2", "BLOCKED"},
		{workbook.SheetExceptions, "H2", "¥5,000"},
		{workbook.SheetDNS, "E2", "-¥60,000"},
	} {
		if got, _ := wb.GetCellValue(c.sheet, c.cell); got != c.want {
			t.Errorf("%s!%s = %q, want %q", c.sheet, c.cell, got, c.want)
		}
	}
	// The BLOCKED posting's row shows its Case and that Case's SLA (JST).
	caseID, _ := wb.GetCellValue(workbook.SheetExceptions, "K2")
	var sla string
	if err := f.db.Read(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), "SELECT sla_deadline FROM Cases WHERE case_id = ?", caseID).Scan(&sla)
	}); err != nil {
		t.Fatalf("Case %q of the BLOCKED posting: %v", caseID, err)
	}
	at, _ := clock.ParseStamp(sla)
	if got, want := cellValue(t, wb, workbook.SheetExceptions, "L2"), at.In(clock.JST).Format("2006-01-02 15:04"); got != want {
		t.Errorf("Exceptions!L2 (SLA of %s) = %q, want %q", caseID, got, want)
	}
	if got, _ := wb.GetCellValue(workbook.SheetSummary, "B2"); !strings.HasPrefix(got, "BROKEN: 1 of 2 chains") {
		t.Errorf("chain audit cell = %q", got)
	}
}

func cellValue(t *testing.T, wb *excelize.File, sheet, cell string) string {
	t.Helper()
	v, err := wb.GetCellValue(sheet, cell)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestEODRunsAllSteps(t *testing.T) {
	f := newFixture(t)
	r := f.runner(t, f.cfg)
	res, err := r.Run(context.Background(), scheduler.Request{Job: JobName, BusinessDate: day})
	if err != nil {
		t.Fatalf("%v %+v", err, res.Run)
	}
	if res.Executed != 5 {
		t.Fatalf("executed %d", res.Executed)
	}
	f.assertDone(t)
	// A second run of the completed instance is refused; forced, no effect doubles.
	if _, err := r.Run(context.Background(), scheduler.Request{Job: JobName, BusinessDate: day}); !errors.Is(err, ledger.ErrAlreadyCompleted) {
		t.Fatalf("second run: %v", err)
	}
	if _, err := r.Run(context.Background(), scheduler.Request{Job: JobName, BusinessDate: day, Force: true, Reason: "test", By: "t"}); err != nil {
		t.Fatal(err)
	}
	f.assertDone(t)
}

// TestEODCrashAtEveryStep aborts the run at the start and after the effects
// of every step (before its completion is recorded), restarts it, and
// checks that the run completes and no effect was applied twice.
func TestEODCrashAtEveryStep(t *testing.T) {
	for _, step := range Steps() {
		for _, at := range []string{"before", "after"} {
			point := step + ":" + at
			t.Run(point, func(t *testing.T) {
				f := newFixture(t)
				crashed := false
				cfg := f.cfg
				cfg.crash = func(p string) error {
					if p == point && !crashed {
						crashed = true
						return errors.New("simulated crash at " + p)
					}
					return nil
				}
				r := f.runner(t, cfg)
				res, err := r.Run(context.Background(), scheduler.Request{Job: JobName, BusinessDate: day})
				if err == nil || !crashed {
					t.Fatalf("run did not crash: %v", err)
				}
				if res.Run.Status != ledger.Failed {
					t.Fatalf("status %s", res.Run.Status)
				}
				res, err = r.Run(context.Background(), scheduler.Request{Job: JobName, BusinessDate: day})
				if err != nil {
					t.Fatalf("restart: %v", err)
				}
				if !res.Resumed || res.Executed+res.Skipped != 5 {
					t.Fatalf("restart resumed=%v executed=%d skipped=%d", res.Resumed, res.Executed, res.Skipped)
				}
				f.assertDone(t)
			})
		}
	}
}

func TestReconApplyRoundTrip(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	r := f.runner(t, f.cfg)
	if _, err := r.Run(ctx, scheduler.Request{Job: JobName, BusinessDate: day}); err != nil {
		t.Fatal(err)
	}
	path := workbook.Path(f.dir, day)
	wb, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := wb.GetRows(workbook.SheetExceptions)
	var blockedRow, driftCaseRow int
	for i, row := range rows {
		if len(row) > 9 && row[1] == "POSTING" && row[8] == "BLOCKED" {
			blockedRow = i + 1
		}
		if len(row) > 9 && row[1] == "CASE" && row[9] == "RECON_DRIFT" {
			driftCaseRow = i + 1
		}
	}
	if blockedRow == 0 || driftCaseRow == 0 {
		t.Fatalf("rows not found in %v", rows)
	}
	_ = wb.SetCellValue(workbook.SheetExceptions, fmt.Sprintf("N%d", blockedRow), "WRITE_OFF")
	_ = wb.SetCellValue(workbook.SheetExceptions, fmt.Sprintf("O%d", blockedRow), "account closed at the core")
	_ = wb.SetCellValue(workbook.SheetExceptions, fmt.Sprintf("N%d", driftCaseRow), "ESCALATE")
	reviewed := filepath.Join(f.dir, "reviewed.xlsx")
	if err := wb.SaveAs(reviewed); err != nil {
		t.Fatal(err)
	}
	wb.Close()
	cfg := ApplyConfig{DB: f.db, DataDir: f.dir, Outboxes: map[string]*outbox.Outbox{"001": f.banks[0].Outbox(), "002": f.banks[1].Outbox()},
		Cases: cases.New(f.clk, nil, 0), Operator: "ops-tanaka", Clock: f.clk}

	// Wrong business date.
	if _, err := ApplyWorkbook(ctx, cfg, reviewed, "2026-12-02"); !errors.Is(err, workbook.ErrRejected) {
		t.Fatalf("wrong date: %v", err)
	}
	rep, err := ApplyWorkbook(ctx, cfg, reviewed, day)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Count(OutcomeApplied) != 2 || len(rep.Results) != 2 {
		t.Fatalf("first apply %+v", rep)
	}
	blocked, _ := f.banks[0].Outbox().List(ctx, outbox.Filter{Status: outbox.WrittenOff})
	if len(blocked) != 1 || blocked[0].Posting.TxID != "TX-C1" {
		t.Fatalf("written off rows %+v", blocked)
	}
	if n := count(t, f.db, `SELECT COUNT(*) FROM Cases WHERE reason_code = 'RECON_DRIFT' AND state = 'ESCALATED'`); n != 1 {
		t.Fatalf("escalated drift cases %d", n)
	}
	// Second apply: nothing done, says so.
	rep, err = ApplyWorkbook(ctx, cfg, reviewed, day)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Count(OutcomeAlreadyApplied) != 2 || rep.Count(OutcomeApplied) != 0 {
		t.Fatalf("second apply %+v", rep)
	}
	if n := count(t, f.db, `SELECT COUNT(*) FROM ReconDecisions`); n != 2 {
		t.Fatalf("decisions recorded %d", n)
	}
	var esl int
	_ = f.banks[0].DB().Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM EntityStateLog WHERE event_type = 'OutboxWrittenOff'`).Scan(&esl)
	})
	if esl != 1 {
		t.Fatalf("write-offs logged %d", esl)
	}
}

// TestTwoInstancesRunEODOnce races two scheduler instances (two ledgers on
// the same database file, as two processes would have) for the same date:
// one runs it, the other is refused, and every effect is there once.
func TestTwoInstancesRunEODOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	led2, err := ledger.Open(ctx, ledger.Path(f.dir), f.clk)
	if err != nil {
		t.Fatal(err)
	}
	defer led2.Close()
	r1 := f.runner(t, f.cfg)
	reg2 := scheduler.NewRegistry()
	if _, err := Register(ctx, reg2, f.cfg); err != nil {
		t.Fatal(err)
	}
	r2, err := scheduler.NewRunner(scheduler.Options{Ledger: led2, Registry: reg2, Config: scheduler.DefaultConfig(), Clock: f.clk, Holder: "second"})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for _, r := range []*scheduler.Runner{r1, r2} {
		go func() {
			_, err := r.Run(ctx, scheduler.Request{Job: JobName, BusinessDate: day})
			errs <- err
		}()
	}
	var ok, refused int
	for i := 0; i < 2; i++ {
		err := <-errs
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ledger.ErrLeaseHeld), errors.Is(err, ledger.ErrAlreadyCompleted):
			refused++
		default:
			t.Fatalf("unexpected: %v", err)
		}
	}
	if ok != 1 || refused != 1 {
		t.Fatalf("ok %d refused %d", ok, refused)
	}
	if n := count(t, f.db, `SELECT COUNT(*) FROM JobRuns WHERE job = 'eod' AND status = 'COMPLETED'`); n != 1 {
		t.Fatalf("%d completed runs", n)
	}
	f.assertDone(t)
}

// The EOD step issues its workbook: the node's workbook key is created
// once in the data folder (0600), the workbook id and the rows written are
// recorded, and a reviewed copy is applied only when it is one this node
// issued: a workbook written for the same date by another node (its own
// key and database) is refused, and so is an edited amount.
func TestReconApplyAcceptsOnlyIssuedWorkbooks(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	r := f.runner(t, f.cfg)
	if _, err := r.Run(ctx, scheduler.Request{Job: JobName, BusinessDate: day}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(f.dir, WorkbookKeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("workbook key %v %v, want a 0600 file", fi, err)
	}
	key, err := WorkbookKey(f.dir, false)
	if err != nil {
		t.Fatal(err)
	}
	issued, err := IssuedWorkbooks(ctx, f.db, day)
	if err != nil || len(issued) != 1 {
		t.Fatalf("issued %+v %v", issued, err)
	}
	path := workbook.Path(f.dir, day)
	wb, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := wb.GetCellValue(workbook.SheetControl, "B3")
	rows, _ := wb.GetRows(workbook.SheetExceptions)
	if id != issued[0].WorkbookID || issued[0].ExceptionRows != len(rows)-1 || issued[0].Rows < len(rows) {
		t.Fatalf("recorded %+v, workbook id %q with %d exception rows", issued[0], id, len(rows)-1)
	}
	blocked := 0
	for i, row := range rows {
		if len(row) > 9 && row[1] == "POSTING" && row[8] == "BLOCKED" {
			blocked = i + 1
		}
	}
	if blocked == 0 {
		t.Fatalf("no BLOCKED posting row in %v", rows)
	}
	_ = wb.SetCellValue(workbook.SheetExceptions, fmt.Sprintf("N%d", blocked), "WRITE_OFF")
	genuine := filepath.Join(f.dir, "genuine.xlsx")
	if err := wb.SaveAs(genuine); err != nil {
		t.Fatal(err)
	}
	_ = wb.SetCellValue(workbook.SheetExceptions, fmt.Sprintf("H%d", blocked), 1)
	edited := filepath.Join(f.dir, "edited.xlsx")
	if err := wb.SaveAs(edited); err != nil {
		t.Fatal(err)
	}
	wb.Close()

	// Another node: its own data folder, key and database, same date.
	other := t.TempDir()
	odb, err := store.OpenCoordinator(ctx, ledger.Path(other))
	if err != nil {
		t.Fatal(err)
	}
	defer odb.Close()
	if err := EnsureSchema(ctx, odb); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(other, "foreign.xlsx")
	if _, err := IssueWorkbook(ctx, odb, other, foreign, workbook.Report{BusinessDate: day, GeneratedAt: f.clk.Now(),
		Exceptions: func(yield func(workbook.Exception, error) bool) {
			yield(workbook.Exception{Kind: workbook.KindPosting, BankID: "001", OutboxID: 1, Ref: "R", TxID: "TX-C1", Status: "BLOCKED"}, nil)
		}}, f.clk, nil); err != nil {
		t.Fatal(err)
	}
	if otherKey, _ := WorkbookKey(other, false); bytes.Equal(otherKey, key) {
		t.Fatal("two data folders share a workbook key")
	}

	cfg := ApplyConfig{DB: f.db, DataDir: f.dir, Outboxes: map[string]*outbox.Outbox{"001": f.banks[0].Outbox(), "002": f.banks[1].Outbox()},
		Cases: cases.New(f.clk, nil, 0), Operator: "ops", Clock: f.clk}
	for name, p := range map[string]string{"another node's workbook": foreign, "edited amount": edited} {
		if _, err := ApplyWorkbook(ctx, cfg, p, day); !errors.Is(err, workbook.ErrRejected) {
			t.Fatalf("%s: err = %v, want a rejection", name, err)
		}
	}
	if n := count(t, f.db, `SELECT COUNT(*) FROM ReconDecisions`); n != 0 {
		t.Fatalf("%d decisions recorded from refused workbooks", n)
	}
	rep, err := ApplyWorkbook(ctx, cfg, genuine, day)
	if err != nil || rep.Count(OutcomeApplied) != 1 {
		t.Fatalf("genuine workbook: %+v %v", rep, err)
	}
}
