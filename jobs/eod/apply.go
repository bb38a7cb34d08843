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
// operator paths. On a posting row: RETRY -> outbox Requeue and its Case to
// IN_PROGRESS, WRITE_OFF -> outbox WriteOff and its Case RESOLVED once none
// of its postings is left BLOCKED or IN_DOUBT (SettlePostingCase), ESCALATE
// -> its Case to ESCALATED. On a Case row: RESOLVED (with the Comment as
// note) and WRITE_OFF end the Case, RETRY moves it to IN_PROGRESS, ESCALATE
// to ESCALATED (cases.DecideTx: guarded, with the note and operator in
// EntityStateLog). The next workbook lists only Cases not RESOLVED. Each applied
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
	source := fmt.Sprintf("workbook %s row %d", date, d.Row)
	if d.Kind != workbook.KindPosting {
		return a, cfg.DB.Write(ctx, func(tx *store.Tx) error {
			var err error
			if a.Outcome, a.Detail, err = caseOutcome(decideCaseTx(ctx, tx, cfg.Cases, d.CaseID, caseDecision[d.Resolution], cfg.Operator, caseNote(d, reason), source)); err != nil {
				return err
			}
			if a.Outcome == OutcomeSkipped {
				return nil
			}
			return record(tx, a.Outcome+": "+a.Detail)
		})
	}
	switch d.Resolution {
	case workbook.Retry, workbook.WriteOff:
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
		// The posting's Case follows (also after a STALE move: an earlier
		// apply may have stopped between the two databases; the posting's
		// status now decides).
		detail, err := SettlePostingCase(ctx, cfg.DB, cfg.Cases, ob, d.OutboxID, d.Resolution, cfg.Operator, reason, source)
		if err != nil {
			return a, err
		}
		if detail != "" {
			a.Detail += "; " + detail
		}
		return a, cfg.DB.Write(ctx, func(tx *store.Tx) error { return record(tx, a.Outcome+": "+a.Detail) })
	case workbook.Escalate:
		if d.CaseID == "" {
			a.Outcome, a.Detail = OutcomeSkipped, "the row has no Case to escalate"
			return a, nil
		}
		return a, cfg.DB.Write(ctx, func(tx *store.Tx) error {
			var err error
			if a.Outcome, a.Detail, err = caseOutcome(decideCaseTx(ctx, tx, cfg.Cases, d.CaseID, cases.DecisionEscalate, cfg.Operator, reason, source)); err != nil {
				return err
			}
			if a.Outcome == OutcomeSkipped {
				return nil
			}
			return record(tx, a.Outcome+": "+a.Detail)
		})
	case workbook.Resolved:
		a.Outcome, a.Detail = OutcomeSkipped, "RESOLVED closes a Case row; a posting is RETRY or WRITE_OFF"
		return a, nil
	}
	return a, fmt.Errorf("unknown resolution %q", d.Resolution)
}

// caseDecision maps a workbook Resolution on a Case row to the Case
// decision: RESOLVED and WRITE_OFF end the Case, RETRY moves it to
// IN_PROGRESS, ESCALATE to ESCALATED.
var caseDecision = map[string]string{
	workbook.Resolved: cases.DecisionResolved,
	workbook.WriteOff: cases.DecisionWriteOff,
	workbook.Retry:    cases.DecisionRetry,
	workbook.Escalate: cases.DecisionEscalate,
}

// caseNote is the note recorded with a Case decision: the reviewer's
// Comment for RESOLVED (required by workbook.ReadDecisions), else the
// decision's reason.
func caseNote(d workbook.Decision, reason string) string {
	if d.Resolution == workbook.Resolved {
		return d.Comment
	}
	return reason
}

type caseResult struct {
	moved cases.Decided
	err   error
}

func decideCaseTx(ctx context.Context, tx *store.Tx, cs *cases.Cases, caseID, decision, operator, note, source string) caseResult {
	moved, err := cs.DecideTx(ctx, tx, cases.Decide{CaseID: caseID, Decision: decision, Note: note, Operator: operator, Source: source})
	return caseResult{moved, err}
}

// caseOutcome turns a Case decision into an outcome: APPLIED, STALE when
// the Case is no longer in a state the decision applies to, SKIPPED when
// the decision does not apply to this Case (not recorded: a corrected
// workbook may decide the row again); any other error is returned.
func caseOutcome(r caseResult) (string, string, error) {
	switch {
	case r.err == nil:
		return OutcomeApplied, fmt.Sprintf("case %s %s -> %s", r.moved.CaseID, r.moved.From, r.moved.To), nil
	case domainerr.Code(r.err) == "STATE_GUARD":
		return OutcomeStale, r.err.Error(), nil
	case domainerr.Code(r.err) == "INVALID_REQUEST":
		// e.g. RESOLVED on a RECON_DRIFT Case, which ends with its drift.
		return OutcomeSkipped, r.err.Error(), nil
	}
	return "", "", r.err
}

// SettlePostingCase moves the Case of posting id after an operator's
// requeue or write-off (resolution workbook.Retry or workbook.WriteOff),
// judged from the posting as it is now, so a move that was STALE (someone
// else decided differently) does not move the Case: requeued (no longer
// BLOCKED nor WRITTEN_OFF), its Case goes to IN_PROGRESS; WRITTEN_OFF, its
// Case is RESOLVED unless another posting of the bank carrying the same
// Case is still BLOCKED or IN_DOUBT (a Case bundles a cause's postings). It
// returns what it did for the operator ("" when the posting has no Case).
// A Case already moved is not an error.
func SettlePostingCase(ctx context.Context, db *store.DB, cs *cases.Cases, ob *outbox.Outbox, id int64, resolution, operator, note, source string) (string, error) {
	row, err := ob.Get(ctx, id)
	if err != nil {
		return "", err
	}
	caseID := row.CaseID
	if caseID == "" {
		return "", nil
	}
	decision := cases.DecisionRetry
	switch {
	case resolution == workbook.WriteOff && row.Status != outbox.WrittenOff,
		resolution == workbook.Retry && (row.Status == outbox.Blocked || row.Status == outbox.WrittenOff):
		return fmt.Sprintf("case %s unchanged: the posting is %s", caseID, row.Status), nil
	case resolution == workbook.WriteOff:
		decision = cases.DecisionWriteOff
		var open int64
		for _, st := range []outbox.Status{outbox.Blocked, outbox.InDoubt} {
			n, err := ob.Count(ctx, outbox.Filter{Status: st, CaseID: caseID})
			if err != nil {
				return "", err
			}
			open += n
		}
		if open > 0 {
			return fmt.Sprintf("case %s stays open: %d more of its postings are BLOCKED or IN_DOUBT", caseID, open), nil
		}
	}
	var out string
	err = db.Write(ctx, func(tx *store.Tx) error {
		r := decideCaseTx(ctx, tx, cs, caseID, decision, operator, note, source)
		switch {
		case r.err == nil:
			out = fmt.Sprintf("case %s %s -> %s", caseID, r.moved.From, r.moved.To)
		case domainerr.Code(r.err) == "STATE_GUARD", domainerr.Code(r.err) == "INVALID_REQUEST":
			out = "case unchanged: " + r.err.Error()
		default:
			return r.err
		}
		return nil
	})
	return out, err
}
