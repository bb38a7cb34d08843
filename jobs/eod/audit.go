package eod

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/ledger"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

const stepFullAudit = "audit"

// AuditResult is the outcome of one finality-audit run: the answer of
// POST /internal/cron/finality-audit as spec 004 names it.
type AuditResult struct {
	ChainsChecked  int           `json:"chains_checked"`
	EntriesChecked int           `json:"entries_checked"`
	BrokenChains   []BrokenChain `json:"broken_chains"`
	CasesOpened    int           `json:"cases_opened"` // Cases newly opened by this run (a known break joins its open Case)
	CaseIDs        []string      `json:"case_ids"`     // every Case this run's breaks went to
}

// BrokenChain is the first broken entry of one chain.
type BrokenChain struct {
	ChainID  string `json:"chain_id"`
	LogID    string `json:"log_id"`
	EventSeq int64  `json:"event_seq"`
	Position int    `json:"position"`
	Reason   string `json:"reason"`
}

// Text is the audit in one line (the step summary).
func (a AuditResult) Text() string {
	if len(a.BrokenChains) == 0 {
		return fmt.Sprintf("OK: %d chains, %d entries", a.ChainsChecked, a.EntriesChecked)
	}
	return fmt.Sprintf("BROKEN: %d of %d chains, %d entries; %d cases opened (%v)", len(a.BrokenChains), a.ChainsChecked,
		a.EntriesChecked, a.CasesOpened, a.CaseIDs)
}

// FinalityAudit is the "finality-audit" job: a full FinalityLog chain
// audit on demand (every entry, on both cores, and the nightly audit's
// anchors) (spec 004 POST /internal/cron/finality-audit; EOD runs
// the same verification as its chain-audit step). It is a repeating job:
// every manual run audits again and is recorded by its run id in
// FinalityAudits; breaks go to CHAIN_TAMPERED Cases like EOD's. Its Result
// is the AuditResult.
func (e *EOD) FinalityAudit() scheduler.Job {
	return scheduler.Job{Name: FinalityAuditJob, Steps: []scheduler.Step{{Name: stepFullAudit, Run: e.fullAudit}},
		Result: func(ctx context.Context, run ledger.Run) (any, error) {
			a, ok, err := FinalityAuditOf(ctx, e.cfg.DB, run.RunID)
			if err != nil || !ok {
				return nil, err
			}
			return a, nil
		}}
}

// fullAudit verifies every chain over the read pool and records the result
// and the Cases of its breaks in one fenced transaction. A restart of the
// same run finds its recorded audit and changes nothing.
func (e *EOD) fullAudit(ctx context.Context, sc scheduler.StepContext) (string, error) {
	if a, ok, err := FinalityAuditOf(ctx, e.cfg.DB, sc.RunID); err != nil {
		return "", err
	} else if ok {
		return "already audited: " + a.Text(), nil
	}
	rep, err := finality.VerifyAll(ctx, e.cfg.DB)
	if err != nil {
		return "", fmt.Errorf("eod: finality audit: %w", err)
	}
	// The nightly audit's anchors are part of what the full audit checks.
	if _, b, err := finality.VerifyAnchors(ctx, e.cfg.DB); err != nil {
		return "", fmt.Errorf("eod: finality audit: %w", err)
	} else if b != nil {
		rep.Breaks = append([]finality.Break{*b}, rep.Breaks...)
	}
	a := AuditResult{ChainsChecked: rep.Chains, EntriesChecked: rep.Entries, BrokenChains: []BrokenChain{}, CaseIDs: []string{}}
	for _, b := range rep.Breaks {
		a.BrokenChains = append(a.BrokenChains, BrokenChain{ChainID: b.ChainID, LogID: b.LogID, EventSeq: b.EventSeq,
			Position: b.Position, Reason: string(b.Reason)})
	}
	err = e.cfg.DB.Write(ctx, func(tx *store.Tx) error {
		if err := sc.Fence(ctx, tx); err != nil {
			return err
		}
		ids, created, err := e.openBreakCases(ctx, tx, rep.Breaks, sc.BusinessDate)
		if err != nil {
			return err
		}
		if ids != nil {
			a.CaseIDs = ids
		}
		a.CasesOpened = created
		bj, _ := json.Marshal(a.BrokenChains)
		cj, _ := json.Marshal(a.CaseIDs)
		_, err = tx.ExecContext(ctx, `INSERT INTO FinalityAudits (run_id, business_date, chains, entries, breaks_json, cases_opened,
			case_ids, audited_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, sc.RunID, sc.BusinessDate, a.ChainsChecked, a.EntriesChecked,
			string(bj), a.CasesOpened, string(cj), clock.Stamp(e.cfg.Clock.Now()))
		return err
	})
	if err != nil {
		return "", fmt.Errorf("eod: record finality audit: %w", err)
	}
	if len(rep.Breaks) > 0 {
		e.log.ErrorContext(ctx, "eod.chain_broken", "run_id", sc.RunID, "breaks", len(rep.Breaks), "case_ids", a.CaseIDs)
	}
	return a.Text(), nil
}

// FinalityAuditOf reads the audit recorded by a finality-audit run.
func FinalityAuditOf(ctx context.Context, db *store.DB, runID int64) (AuditResult, bool, error) {
	var a AuditResult
	var bj, cj string
	err := db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT chains, entries, breaks_json, cases_opened, case_ids FROM FinalityAudits WHERE run_id = ?`, runID).
			Scan(&a.ChainsChecked, &a.EntriesChecked, &bj, &a.CasesOpened, &cj)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return a, false, nil
	}
	if err != nil {
		return a, false, fmt.Errorf("eod: read finality audit of run %d: %w", runID, err)
	}
	if err := json.Unmarshal([]byte(bj), &a.BrokenChains); err != nil {
		return a, false, fmt.Errorf("eod: finality audit of run %d: breaks_json: %w", runID, err)
	}
	if err := json.Unmarshal([]byte(cj), &a.CaseIDs); err != nil {
		return a, false, fmt.Errorf("eod: finality audit of run %d: case_ids: %w", runID, err)
	}
	return a, true, nil
}
