package eod

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/workbook"
	"github.com/zcgw/zcgw/outbox"
)

// ApplyConfig wires ApplyWorkbook.
type ApplyConfig struct {
	DB       *store.DB                 // the coordinator's zc.db (Cases, ReconWorkbooks, ReconDecisions)
	DataDir  string                    // the data folder holding the node's workbook key (WorkbookKeyFile)
	Outboxes map[string]*outbox.Outbox // per bank id: the operator path (Requeue, WriteOff)
	Cases    *cases.Cases              // nil: cases.New with defaults
	Operator string                    // who applies (recorded)
	Clock    clock.Clock
}

// Outcomes of one decision.
const (
	OutcomeApplied        = "APPLIED"
	OutcomeAlreadyApplied = "ALREADY_APPLIED" // recorded by an earlier apply: nothing done
	OutcomeStale          = "STALE"           // the row is no longer in the state the decision was made for: nothing done
	OutcomeSkipped        = "SKIPPED"         // the decision does not apply to the row (e.g. RETRY on a Case)
)

// Applied is what happened to one decision.
type Applied struct {
	workbook.Decision
	Outcome string
	Detail  string
}

// ApplyReport is what ApplyWorkbook did.
type ApplyReport struct {
	BusinessDate string
	Rows         int
	Results      []Applied
}

// Count returns how many decisions had outcome o.
func (r ApplyReport) Count(o string) int {
	n := 0
	for _, a := range r.Results {
		if a.Outcome == o {
			n++
		}
	}
	return n
}

// LatestClosedDate is the most recent business date EOD closed ("" if none).
func LatestClosedDate(ctx context.Context, db *store.DB) (string, error) {
	var d sql.NullString
	err := db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT MAX(business_date) FROM EodBusinessDates`).Scan(&d)
	})
	return d.String, err
}

// ApplyWorkbook reads a reviewed reconciliation workbook, accepting only a
// workbook this node issued for wantDate (ReconWorkbooks) and only rows
// whose MAC under the node's workbook key matches (see
// workbook.ReadDecisions: an edited cell, an added row, a workbook of
// another date or node is refused, and the file's size is bounded by the
// rows issued before it is read), and applies every decision through the
// operator paths: RETRY -> outbox Requeue, WRITE_OFF -> outbox WriteOff, ESCALATE ->
// the Case (of the row, or of the posting) to ESCALATED. Each applied
// decision is recorded in ReconDecisions keyed by (business date, row key),
// so applying the same workbook again does nothing and says so.
func ApplyWorkbook(ctx context.Context, cfg ApplyConfig, path, wantDate string) (ApplyReport, error) {
	var rep ApplyReport
	var err error
	if strings.TrimSpace(cfg.Operator) == "" {
		return rep, domainerr.New("MISSING_FIELD", "recon apply: operator is required", map[string]any{"field": "operator"})
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Cases == nil {
		cfg.Cases = cases.New(cfg.Clock, nil, 0)
	}
	if strings.TrimSpace(wantDate) == "" {
		return rep, domainerr.New("MISSING_FIELD", "recon apply: the business date is required", map[string]any{"field": "date"})
	}
	if err := EnsureSchema(ctx, cfg.DB); err != nil {
		return rep, err
	}
	want := workbook.Expect{BusinessDate: wantDate}
	if want.Issued, err = IssuedWorkbooks(ctx, cfg.DB, wantDate); err != nil {
		return rep, err
	}
	if len(want.Issued) > 0 {
		if want.Key, err = WorkbookKey(cfg.DataDir, false); err != nil {
			return rep, err
		}
	}
	rev, err := workbook.ReadDecisions(path, want)
	if err != nil {
		return rep, err
	}
	rep.BusinessDate, rep.Rows = rev.BusinessDate, rev.Rows
	for _, d := range rev.Decisions {
		a, err := applyOne(ctx, cfg, rev.BusinessDate, d)
		if err != nil {
			return rep, fmt.Errorf("recon apply: row %d (%s): %w", d.Row, d.Key, err)
		}
		rep.Results = append(rep.Results, a)
	}
	return rep, nil
}

func applyOne(ctx context.Context, cfg ApplyConfig, date string, d workbook.Decision) (Applied, error) {
	a := Applied{Decision: d}
	var prev, prevAt string
	err := cfg.DB.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT outcome, applied_at FROM ReconDecisions WHERE business_date = ? AND row_key = ?`,
			date, d.Key).Scan(&prev, &prevAt)
	})
	if err == nil {
		a.Outcome, a.Detail = OutcomeAlreadyApplied, fmt.Sprintf("applied before at %s (%s)", prevAt, prev)
		return a, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return a, err
	}
	reason := fmt.Sprintf("recon workbook %s row %d", date, d.Row)
	if d.Comment != "" {
		reason += ": " + d.Comment
	}
	record := func(tx *store.Tx, outcome string) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO ReconDecisions (business_date, row_key, decision, operator, comment, outcome, applied_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, date, d.Key, d.Resolution, cfg.Operator, d.Comment, outcome, clock.Stamp(cfg.Clock.Now()))
		return err
	}
	switch d.Resolution {
	case workbook.Retry, workbook.WriteOff:
		if d.Kind != workbook.KindPosting {
			a.Outcome, a.Detail = OutcomeSkipped, d.Resolution+" applies to postings only; use ESCALATE for a Case"
			return a, nil
		}
		ob, ok := cfg.Outboxes[d.BankID]
		if !ok {
			return a, domainerr.New("NOT_FOUND", "no outbox for bank "+d.BankID, map[string]any{"bank_id": d.BankID})
		}
		move := ob.Requeue
		if d.Resolution == workbook.WriteOff {
			move = ob.WriteOff
		}
		err := move(ctx, d.OutboxID, cfg.Operator, reason)
		switch {
		case err == nil:
			a.Outcome, a.Detail = OutcomeApplied, fmt.Sprintf("posting %d %s", d.OutboxID, map[string]string{workbook.Retry: "requeued", workbook.WriteOff: "written off"}[d.Resolution])
		case domainerr.Code(err) == "STATE_GUARD":
			// Already moved (by a person, or by an earlier apply that
			// stopped before recording): nothing is done twice.
			a.Outcome, a.Detail = OutcomeStale, err.Error()
		default:
			return a, err
		}
		return a, cfg.DB.Write(ctx, func(tx *store.Tx) error { return record(tx, a.Outcome+": "+a.Detail) })
	case workbook.Escalate:
		if d.CaseID == "" {
			a.Outcome, a.Detail = OutcomeSkipped, "the row has no Case to escalate"
			return a, nil
		}
		err := cfg.DB.Write(ctx, func(tx *store.Tx) error {
			moved, err := cfg.Cases.SetState(ctx, tx, d.CaseID, cases.StateEscalated, "OPS", "")
			switch {
			case err == nil && moved:
				a.Outcome, a.Detail = OutcomeApplied, "case "+d.CaseID+" escalated"
			case err == nil:
				a.Outcome, a.Detail = OutcomeStale, "case "+d.CaseID+" was already escalated"
			case domainerr.Code(err) == "STATE_GUARD":
				a.Outcome, a.Detail = OutcomeStale, err.Error()
			default:
				return err
			}
			return record(tx, a.Outcome+": "+a.Detail)
		})
		return a, err
	}
	return a, fmt.Errorf("unknown resolution %q", d.Resolution)
}
