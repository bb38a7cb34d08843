package eod

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/formats/corebalance"
	"github.com/zcgw/zcgw/jobs/scheduler"
	"github.com/zcgw/zcgw/outbox"
)

// Job names (as in the scheduler's catalogue).
const (
	JobName          = "eod"
	FinalityAuditJob = "finality-audit"
	ChainAuditPath   = "EOD_CHAIN_AUDIT" // Cases.detection_path of a chain break
	ChainBreakReason = "CHAIN_TAMPERED"  // Cases.reason_code of a chain break
	stepCloseDate    = "close-date"
	stepResetLimits  = "reset-daily-limits"
	stepChainAudit   = "chain-audit"
	stepReconcile    = "reconcile"
	stepWorkbook     = "workbook"
	// reportPage is how many drift, posting or Case rows the workbook
	// reads at a time: the report streams, whatever the day's size.
	reportPage = 1000
)

// Steps lists the EOD steps in order.
func Steps() []string {
	return []string{stepCloseDate, stepResetLimits, stepChainAudit, stepReconcile, stepWorkbook}
}

// Schema is the DDL of the EOD tables, in the coordinator's database
// (zc.db). It is idempotent; EnsureSchema applies it.
const Schema = `
CREATE TABLE IF NOT EXISTS EodBusinessDates (
  business_date TEXT PRIMARY KEY,           -- JST YYYY-MM-DD, closed
  closed_at     TEXT NOT NULL,
  run_id        INTEGER NOT NULL,
  transactions  INTEGER NOT NULL,           -- Transactions created on the date
  amount_total  INTEGER NOT NULL,
  states_json   TEXT NOT NULL               -- {state: {count, amount}}
);
CREATE TABLE IF NOT EXISTS EodLimitResets (
  business_date TEXT NOT NULL,              -- the date that was closed
  bank_id       TEXT NOT NULL,
  reset_for     TEXT NOT NULL,              -- the next business date
  used_before   INTEGER NOT NULL,
  reset_at      TEXT NOT NULL,
  run_id        INTEGER NOT NULL,
  PRIMARY KEY (business_date, bank_id)
);
CREATE TABLE IF NOT EXISTS EodChainAudits (
  business_date TEXT PRIMARY KEY,
  chains        INTEGER NOT NULL,
  entries       INTEGER NOT NULL,
  breaks        INTEGER NOT NULL,
  breaks_json   TEXT NOT NULL,
  case_ids      TEXT NOT NULL,              -- JSON array
  audited_at    TEXT NOT NULL,
  run_id        INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS FinalityAudits (  -- one per finality-audit run (on demand)
  run_id        INTEGER PRIMARY KEY,
  business_date TEXT NOT NULL,
  chains        INTEGER NOT NULL,
  entries       INTEGER NOT NULL,
  breaks_json   TEXT NOT NULL,              -- [BrokenChain]
  cases_opened  INTEGER NOT NULL,           -- Cases newly opened by this audit
  case_ids      TEXT NOT NULL,              -- JSON array: every Case a break went to
  audited_at    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS EodReconciliations (
  business_date TEXT NOT NULL,
  bank_id       TEXT NOT NULL,
  accounts      INTEGER NOT NULL,
  matched       INTEGER NOT NULL,
  drifts        INTEGER NOT NULL,
  unsettled     INTEGER NOT NULL,
  unavailable   INTEGER NOT NULL,
  shadow_total  INTEGER NOT NULL,
  core_total    INTEGER NOT NULL,
  error         TEXT,
  reconciled_at TEXT NOT NULL,
  run_id        INTEGER NOT NULL,
  PRIMARY KEY (business_date, bank_id)
);
CREATE TABLE IF NOT EXISTS EodWorkbooks (
  business_date TEXT PRIMARY KEY,
  path          TEXT NOT NULL,
  rows          INTEGER NOT NULL,
  written_at    TEXT NOT NULL,
  run_id        INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS ReconWorkbooks (
  workbook_id    TEXT PRIMARY KEY,          -- WB-<32 hex>, issued when the node writes the workbook
  business_date  TEXT NOT NULL,
  exception_rows INTEGER NOT NULL,          -- rows whose decisions the node will accept
  rows           INTEGER NOT NULL,          -- all rows written: sizes the reviewed copy's unzip bound
  path           TEXT NOT NULL,
  issued_at      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ReconWorkbooksByDate ON ReconWorkbooks (business_date);
CREATE TABLE IF NOT EXISTS ReconDecisions (
  business_date TEXT NOT NULL,
  row_key       TEXT NOT NULL,
  decision      TEXT NOT NULL,
  operator      TEXT NOT NULL,
  comment       TEXT,
  outcome       TEXT NOT NULL,
  applied_at    TEXT NOT NULL,
  PRIMARY KEY (business_date, row_key)
);
`

// EnsureSchema applies Schema to db (the coordinator's zc.db).
func EnsureSchema(ctx context.Context, db *store.DB) error {
	return db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, Schema)
		return err
	})
}

// Config wires the EOD job.
type Config struct {
	// DB is the coordinator's database (zc.db, the ledger's file too).
	DB *store.DB
	// Banks are the adapters of the banks to reconcile, one per bank.
	Banks []*adapter.Adapter
	// DataDir is the data folder; workbooks go to DataDir/reports.
	DataDir string
	// BalanceFile returns the path of a bank's core balance file
	// (formats/corebalance) for a business date, which the reconcile step
	// merges with the shadow ledger. nil: BalanceFilePath, the file the
	// core dropped into <DataDir>/balances.
	BalanceFile func(ctx context.Context, bank, businessDate string) (string, error)
	// Cases opens the Case for a chain break (nil: cases.New with defaults).
	Cases  *cases.Cases
	Clock  clock.Clock
	Logger *slog.Logger

	// crash, when set (tests), is called at "<step>:before" and
	// "<step>:after" (effects made, completion not yet recorded); an error
	// aborts the step there as a crash would.
	crash func(point string) error
}

// EOD is the end-of-day job body.
type EOD struct {
	cfg Config
	log *slog.Logger
}

// New checks cfg and applies the EOD schema.
func New(ctx context.Context, cfg Config) (*EOD, error) {
	if cfg.DB == nil {
		return nil, errors.New("eod: Config.DB is required")
	}
	if cfg.DataDir == "" {
		return nil, errors.New("eod: Config.DataDir is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Cases == nil {
		cfg.Cases = cases.New(cfg.Clock, cfg.Logger, 0)
	}
	if cfg.BalanceFile == nil {
		dir := cfg.DataDir
		cfg.BalanceFile = func(_ context.Context, bank, date string) (string, error) { return BalanceFilePath(dir, bank, date) }
	}
	if err := EnsureSchema(ctx, cfg.DB); err != nil {
		return nil, fmt.Errorf("eod: schema: %w", err)
	}
	return &EOD{cfg: cfg, log: cfg.Logger}, nil
}

// Register registers the "eod" job (close-date, reset-daily-limits,
// chain-audit, reconcile, workbook) and the "finality-audit" job (a full
// chain audit on demand, see FinalityAudit) into reg.
func Register(ctx context.Context, reg *scheduler.Registry, cfg Config) (*EOD, error) {
	e, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := reg.Register(e.Job()); err != nil {
		return nil, err
	}
	if err := reg.Register(e.FinalityAudit()); err != nil {
		return nil, err
	}
	return e, nil
}

// Job is the EOD body. Effects in the coordinator database are RunTx
// steps (exactly once); the others are idempotent Run steps.
func (e *EOD) Job() scheduler.Job {
	return scheduler.Job{Name: JobName, Steps: []scheduler.Step{
		{Name: stepCloseDate, RunTx: e.closeDate},
		{Name: stepResetLimits, RunTx: e.resetLimits},
		{Name: stepChainAudit, Run: e.chainAudit},
		{Name: stepReconcile, Run: e.reconcile},
		{Name: stepWorkbook, Run: e.workbook},
	}}
}

func (e *EOD) hook(step, at string) error {
	if e.cfg.crash == nil {
		return nil
	}
	return e.cfg.crash(step + ":" + at)
}

// jstDayBounds returns the seconds-precision UTC prefixes bounding the JST
// business date: [from, to).
func jstDayBounds(date string) (from, to string, err error) {
	d, err := clock.ParseBusinessDate(date)
	if err != nil {
		return "", "", err
	}
	start := time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, clock.JST).UTC()
	return start.Format("2006-01-02T15:04:05"), start.AddDate(0, 0, 1).Format("2006-01-02T15:04:05"), nil
}

// NextBusinessDate is the JST calendar date after date.
func NextBusinessDate(date string) (string, error) {
	d, err := clock.ParseBusinessDate(date)
	if err != nil {
		return "", err
	}
	return time.Date(d.Year(), d.Month(), d.Day()+1, 12, 0, 0, 0, clock.JST).Format("2006-01-02"), nil
}

// closeDate records the business date as closed, with the day's
// transaction figures. Exactly once (RunTx).
func (e *EOD) closeDate(ctx context.Context, tx *store.Tx, sc scheduler.StepContext) (string, error) {
	if err := e.hook(stepCloseDate, "before"); err != nil {
		return "", err
	}
	var closedAt string
	err := tx.QueryRowContext(ctx, `SELECT closed_at FROM EodBusinessDates WHERE business_date = ?`, sc.BusinessDate).Scan(&closedAt)
	if err == nil {
		return fmt.Sprintf("business date %s already closed at %s", sc.BusinessDate, closedAt), nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	from, to, err := jstDayBounds(sc.BusinessDate)
	if err != nil {
		return "", err
	}
	rows, err := tx.QueryContext(ctx, `SELECT state, COUNT(*), COALESCE(SUM(amount_value),0) FROM Transactions
		WHERE substr(created_at,1,19) >= ? AND substr(created_at,1,19) < ? GROUP BY state`, from, to)
	if err != nil {
		return "", fmt.Errorf("eod: day figures: %w", err)
	}
	type fig struct {
		Count  int64 `json:"count"`
		Amount int64 `json:"amount"`
	}
	states := map[string]fig{}
	var n, amount int64
	for rows.Next() {
		var s string
		var f fig
		if err := rows.Scan(&s, &f.Count, &f.Amount); err != nil {
			rows.Close()
			return "", err
		}
		states[s] = f
		n += f.Count
		amount += f.Amount
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", err
	}
	js, _ := json.Marshal(states)
	if _, err := tx.ExecContext(ctx, `INSERT INTO EodBusinessDates (business_date, closed_at, run_id, transactions, amount_total, states_json)
		VALUES (?, ?, ?, ?, ?, ?)`, sc.BusinessDate, clock.Stamp(e.cfg.Clock.Now()), sc.RunID, n, amount, string(js)); err != nil {
		return "", fmt.Errorf("eod: close %s: %w", sc.BusinessDate, err)
	}
	if err := e.hook(stepCloseDate, "after"); err != nil {
		return "", err
	}
	return fmt.Sprintf("closed %s: %d transactions, %d yen", sc.BusinessDate, n, amount), nil
}

// resetLimits zeroes every participant's daily amount for the next
// business date and records what each had used. The lazy reset of
// coordinator/hlimit (guarded on daily_amount_last_reset_date < date) then
// sees the new date as already reset, so nothing is reset twice; a
// transfer after EOD counts towards the next date. Exactly once (RunTx).
func (e *EOD) resetLimits(ctx context.Context, tx *store.Tx, sc scheduler.StepContext) (string, error) {
	if err := e.hook(stepResetLimits, "before"); err != nil {
		return "", err
	}
	next, err := NextBusinessDate(sc.BusinessDate)
	if err != nil {
		return "", err
	}
	now := clock.Stamp(e.cfg.Clock.Now())
	res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO EodLimitResets (business_date, bank_id, reset_for, used_before, reset_at, run_id)
		SELECT ?, bank_id, ?, daily_amount_used, ?, ? FROM Participants
		WHERE daily_amount_last_reset_date IS NULL OR daily_amount_last_reset_date < ?`, sc.BusinessDate, next, now, sc.RunID, next)
	if err != nil {
		return "", fmt.Errorf("eod: record limit resets: %w", err)
	}
	recorded, _ := res.RowsAffected()
	res, err = tx.ExecContext(ctx, `UPDATE Participants SET daily_amount_used = 0, daily_amount_last_reset_date = ?
		WHERE daily_amount_last_reset_date IS NULL OR daily_amount_last_reset_date < ?`, next, next)
	if err != nil {
		return "", fmt.Errorf("eod: reset daily limits: %w", err)
	}
	reset, _ := res.RowsAffected()
	if err := e.hook(stepResetLimits, "after"); err != nil {
		return "", err
	}
	return fmt.Sprintf("reset daily limits of %d participants for %s (%d recorded)", reset, next, recorded), nil
}

// chainAudit is the nightly, incremental chain audit (finality.VerifySince,
// outside any write transaction, on both cores): the stored anchor is
// checked, then the FinalityLog entries appended after it are verified.
// Then, in one fenced transaction, it opens a Case for the breaks, records
// the audit and, when it was clean, the new anchor (its last entry), so
// the next night starts there; a broken audit leaves the anchor where it
// was. A restart finds the recorded audit and changes nothing. The full
// audit is the finality-audit job.
func (e *EOD) chainAudit(ctx context.Context, sc scheduler.StepContext) (string, error) {
	if err := e.hook(stepChainAudit, "before"); err != nil {
		return "", err
	}
	if a, ok, err := ChainAuditOf(ctx, e.cfg.DB, sc.BusinessDate); err != nil {
		return "", err
	} else if ok {
		return "already audited: " + a.Text(), nil
	}
	audit, err := finality.VerifySince(ctx, e.cfg.DB, finality.Workers())
	if err != nil {
		return "", fmt.Errorf("eod: chain audit: %w", err)
	}
	rep := audit.Report
	var caseIDs []string
	err = e.cfg.DB.Write(ctx, func(tx *store.Tx) error {
		if err := sc.Fence(ctx, tx); err != nil {
			return err
		}
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM EodChainAudits WHERE business_date = ?`, sc.BusinessDate).Scan(&one); err == nil {
			return nil
		} else if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var err error
		if caseIDs, _, err = e.openBreakCases(ctx, tx, rep.Breaks, sc.BusinessDate); err != nil {
			return err
		}
		if audit.Next != nil { // clean: the next night starts after this point
			if _, err := finality.RecordAnchorTx(ctx, tx, e.cfg.Clock, audit.Anchor, *audit.Next); err != nil {
				return err
			}
		}
		bj, _ := json.Marshal(rep.Breaks)
		cj, _ := json.Marshal(caseIDs)
		_, err = tx.ExecContext(ctx, `INSERT INTO EodChainAudits (business_date, chains, entries, breaks, breaks_json, case_ids, audited_at, run_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, sc.BusinessDate, rep.Chains, rep.Entries, len(rep.Breaks), string(bj), string(cj),
			clock.Stamp(e.cfg.Clock.Now()), sc.RunID)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("eod: record chain audit: %w", err)
	}
	if len(rep.Breaks) > 0 {
		e.log.ErrorContext(ctx, "eod.chain_broken", "business_date", sc.BusinessDate, "breaks", len(rep.Breaks), "case_ids", caseIDs)
	}
	if err := e.hook(stepChainAudit, "after"); err != nil {
		return "", err
	}
	a, _, err := ChainAuditOf(ctx, e.cfg.DB, sc.BusinessDate)
	if err != nil {
		return "", err
	}
	return a.Text(), nil
}

// openBreakCases opens (or aggregates into the open one, by cause key) a
// CHAIN_TAMPERED Case per break inside tx. It returns the distinct Case ids
// and how many Cases were newly created.
func (e *EOD) openBreakCases(ctx context.Context, tx *store.Tx, breaks []finality.Break, date string) (caseIDs []string, created int, err error) {
	seen := map[string]bool{}
	for _, b := range breaks {
		o, err := e.cfg.Cases.OpenCase(ctx, tx, cases.OpenRequest{ReasonCode: ChainBreakReason, OpenedBy: "ZC",
			DetectionPath: ChainAuditPath,
			Description: fmt.Sprintf("FinalityLog chain %s broken at position %d (log_id %s, event_seq %d): %s",
				b.ChainID, b.Position, b.LogID, b.EventSeq, b.Reason),
			EvidenceRefs: []string{"FinalityLog:" + b.LogID, "chain:" + b.ChainID, "business_date:" + date}})
		if err != nil {
			return nil, 0, fmt.Errorf("open case for chain %s: %w", b.ChainID, err)
		}
		if o.Created {
			created++
		}
		if !seen[o.CaseID] {
			seen[o.CaseID] = true
			caseIDs = append(caseIDs, o.CaseID)
		}
	}
	return caseIDs, created, nil
}

// ChainAudit is a recorded chain audit.
type ChainAudit struct {
	Chains, Entries, Breaks int
	CaseIDs                 []string
}

// Text is the audit in one line.
func (a ChainAudit) Text() string {
	if a.Breaks == 0 {
		return fmt.Sprintf("OK: %d chains, %d entries", a.Chains, a.Entries)
	}
	return fmt.Sprintf("BROKEN: %d of %d chains (cases %s)", a.Breaks, a.Chains, strings.Join(a.CaseIDs, ", "))
}

// ChainAuditOf reads the audit recorded for a business date.
func ChainAuditOf(ctx context.Context, db *store.DB, date string) (ChainAudit, bool, error) {
	var a ChainAudit
	var cj string
	err := db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT chains, entries, breaks, case_ids FROM EodChainAudits WHERE business_date = ?`, date).
			Scan(&a.Chains, &a.Entries, &a.Breaks, &cj)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return a, false, nil
	}
	if err != nil {
		return a, false, err
	}
	_ = json.Unmarshal([]byte(cj), &a.CaseIDs)
	return a, true, nil
}

// BankRecon is one bank's reconciliation figures.
type BankRecon struct {
	BankID                                            string
	Accounts, Matched, Drifts, Unsettled, Unavailable int
	ShadowTotal, CoreTotal                            int64
	Error                                             string
}

// reconcile asks every bank's adapter to reconcile its shadow ledger with
// its core (the adapter records drifts and opens their Cases, idempotently:
// an OPEN drift with the same amount is found, not duplicated) and records
// the per-bank figures, replacing those of an interrupted earlier attempt.
func (e *EOD) reconcile(ctx context.Context, sc scheduler.StepContext) (string, error) {
	if err := e.hook(stepReconcile, "before"); err != nil {
		return "", err
	}
	// Banks are independent (each its own adapter database and core):
	// reconcile them in parallel.
	all := make([]BankRecon, len(e.cfg.Banks))
	var wg sync.WaitGroup
	for i, a := range e.cfg.Banks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			all[i] = e.reconcileBank(ctx, a, sc.BusinessDate)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return "", err
	}
	now := clock.Stamp(e.cfg.Clock.Now())
	err := e.cfg.DB.Write(ctx, func(tx *store.Tx) error {
		if err := sc.Fence(ctx, tx); err != nil {
			return err
		}
		for _, b := range all {
			if _, err := tx.ExecContext(ctx, `INSERT INTO EodReconciliations (business_date, bank_id, accounts,
				matched, drifts, unsettled, unavailable, shadow_total, core_total, error, reconciled_at, run_id)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (business_date, bank_id) DO UPDATE SET
				accounts = excluded.accounts, matched = excluded.matched, drifts = excluded.drifts, unsettled = excluded.unsettled,
				unavailable = excluded.unavailable, shadow_total = excluded.shadow_total, core_total = excluded.core_total,
				error = excluded.error, reconciled_at = excluded.reconciled_at, run_id = excluded.run_id`, sc.BusinessDate, b.BankID, b.Accounts, b.Matched, b.Drifts,
				b.Unsettled, b.Unavailable, b.ShadowTotal, b.CoreTotal, nullStr(b.Error), now, sc.RunID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("eod: record reconciliation: %w", err)
	}
	if err := e.hook(stepReconcile, "after"); err != nil {
		return "", err
	}
	var accts, drifts, failed int
	for _, b := range all {
		accts += b.Accounts
		drifts += b.Drifts
		if b.Error != "" {
			failed++
		}
	}
	return fmt.Sprintf("reconciled %d banks, %d accounts: %d drifted, %d banks failed", len(all), accts, drifts, failed), nil
}

// reconcileBank reconciles one bank from its core balance file in one
// streaming pass (adapter.ReconcileBalanceFile). Totals are over the
// accounts the file answered for, so that they compare like with like;
// accounts missing from the file are counted as unavailable. A missing or
// refused file, or one of another date, is the bank's error: nothing is
// compared (the per-account inquiry stays for one account an operator
// asks about, not for a whole bank).
func (e *EOD) reconcileBank(ctx context.Context, a *adapter.Adapter, date string) BankRecon {
	br := BankRecon{BankID: a.BankID()}
	fail := func(err error) BankRecon {
		br.Error = err.Error()
		e.log.ErrorContext(ctx, "eod.reconcile_failed", "bank_id", br.BankID, "error", err)
		return br
	}
	path, err := e.cfg.BalanceFile(ctx, br.BankID, date)
	if err != nil {
		return fail(err)
	}
	f, err := os.Open(path)
	if err != nil {
		return fail(fmt.Errorf("core balance file: %w", err))
	}
	defer f.Close()
	r, err := a.ReconcileBalanceFile(ctx, f, nil)
	if err == nil && r.BusinessDate != date {
		err = fmt.Errorf("core balance file %s is of business date %s, not %s", filepath.Base(path), r.BusinessDate, date)
	}
	br.Accounts, br.Matched, br.Drifts, br.Unsettled, br.Unavailable = r.Accounts, r.Matched, r.Drifts, r.Unsettled, r.NotInFile
	br.ShadowTotal, br.CoreTotal = r.ShadowTotal, r.CoreTotal
	if err != nil {
		return fail(err)
	}
	return br
}

// BalanceDir is where cores drop their balance files: <data>/balances.
func BalanceDir(dataDir string) string { return filepath.Join(dataDir, "balances") }

// BalanceFilePath is the core balance file of bank (zcgw bank id) for a
// JST business date in BalanceDir, under the name the format declares
// (corebalance.FileName).
func BalanceFilePath(dataDir, bank, date string) (string, error) {
	d, err := clock.ParseBusinessDate(date)
	if err != nil {
		return "", err
	}
	return filepath.Join(BalanceDir(dataDir), corebalance.FileName(fmt.Sprintf("%04s", bank),
		corebalance.Date{Year: d.Year(), Month: int(d.Month()), Day: d.Day()})), nil
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Reconciliations reads the recorded per-bank figures of a date.
func Reconciliations(ctx context.Context, db *store.DB, date string) ([]BankRecon, error) {
	var out []BankRecon
	err := db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT bank_id, accounts, matched, drifts, unsettled, unavailable, shadow_total,
			core_total, COALESCE(error,'') FROM EodReconciliations WHERE business_date = ? ORDER BY bank_id`, date)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var b BankRecon
			if err := rows.Scan(&b.BankID, &b.Accounts, &b.Matched, &b.Drifts, &b.Unsettled, &b.Unavailable,
				&b.ShadowTotal, &b.CoreTotal, &b.Error); err != nil {
				return err
			}
			out = append(out, b)
		}
		return rows.Err()
	})
	return out, err
}

// WorkbookPath is where the EOD workbook of a date is written.
func (e *EOD) WorkbookPath(date string) string {
	return filepath.Join(e.cfg.DataDir, "reports", "recon-"+date+".xlsx")
}

func sortedBanks(bs []*adapter.Adapter) []*adapter.Adapter {
	out := append([]*adapter.Adapter(nil), bs...)
	sort.Slice(out, func(i, j int) bool { return out[i].BankID() < out[j].BankID() })
	return out
}

// outboxOf is the operator view of a bank's outbox.
func outboxOf(a *adapter.Adapter) *outbox.Outbox { return a.Outbox() }
