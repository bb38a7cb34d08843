package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
)

// DedupKey is the stable Case key of a BLOCKED posting.
func DedupKey(ref string) string { return "OUTBOX-BLOCKED:" + ref }

// detectionPath names where a refusal was found: the core's answer to an
// MQ posting, or its overnight result file.
func detectionPath(r Route) string {
	if r == RouteFILE {
		return "OVERNIGHT_RESULT"
	}
	return "OUTBOX_BLOCKED"
}

// openCase opens the Case of a row that has just become BLOCKED under
// caseToken. On failure the row keeps case_id NULL and a later
// OpenMissingCases opens it: the refusal is never lost.
func (o *Outbox) openCase(ctx context.Context, id int64, caseToken string, p Posting, reason, msg string) {
	if o.cases == nil {
		o.log.WarnContext(ctx, "outbox.case_deferred", "id", id, "ref", p.Ref, "why", "no CaseOpener configured")
		return
	}
	if reason == "" {
		reason = "BANK_ERROR"
	}
	req := CaseRequest{
		DedupKey: DedupKey(p.Ref), ReasonCode: reason, RelatedTxID: p.TxID,
		Description: fmt.Sprintf("core refused %s %d on account %s (posting %s): %s",
			p.Kind, p.Amount, p.Account, p.Ref, msg),
		OpenedBy: "BANK", CausePartyID: p.Bank, DetectionPath: detectionPath(p.Route),
		Ref: p.Ref, Account: p.Account, Amount: p.Amount,
	}
	caseID, err := o.cases.OpenCase(ctx, req)
	if err == nil && caseID == "" {
		err = errors.New("case opener returned an empty case id")
	}
	if err != nil {
		o.log.ErrorContext(ctx, "outbox.case_failed", "id", id, "ref", p.Ref, "err", err.Error())
		// Release the case claim so the next sweep retries at once.
		if rerr := o.db.Write(ctx, func(tx *store.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE AdapterOutbox SET case_token = NULL, case_claimed_at = NULL
				WHERE id = ? AND case_token = ? AND case_id IS NULL`, id, caseToken)
			return err
		}); rerr != nil {
			o.log.ErrorContext(ctx, "outbox.case_failed", "id", id, "ref", p.Ref, "err", rerr.Error())
		}
		return
	}
	var recorded bool
	err = o.db.Write(ctx, func(tx *store.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE AdapterOutbox SET case_id = ?, case_token = NULL, updated_at = ?
			WHERE id = ? AND case_token = ? AND case_id IS NULL`, caseID, clock.Stamp(o.clk.Now()), id, caseToken)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			recorded = true
			var status string
			if err := tx.QueryRowContext(ctx, `SELECT status FROM AdapterOutbox WHERE id = ?`, id).Scan(&status); err != nil {
				return err
			}
			return o.stateLog(ctx, tx, id, "OutboxCaseOpened", Status(status), Status(status), reason, o.actor,
				map[string]any{"ref": p.Ref, "case_id": caseID})
		}
		return nil
	})
	if err != nil {
		o.log.ErrorContext(ctx, "outbox.case_failed", "id", id, "ref", p.Ref, "case_id", caseID, "err", err.Error())
		return
	}
	if recorded {
		o.log.InfoContext(ctx, "outbox.case_opened", "id", id, "ref", p.Ref, "case_id", caseID)
	}
}

// OpenMissingCases opens the Case of every BLOCKED row that has none yet
// (the opener failed, or the process died between BLOCKED and the Case).
// Each row is claimed first with a guarded UPDATE, so concurrent sweeps
// open one Case per row. It returns how many rows it tried.
func (o *Outbox) OpenMissingCases(ctx context.Context) (int, error) {
	if o.cases == nil {
		return 0, nil
	}
	// A cheap read first, so idle drains do not take the writer lock.
	var missing bool
	if err := o.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM AdapterOutbox WHERE status = 'BLOCKED' AND case_id IS NULL)`).Scan(&missing)
	}); err != nil {
		return 0, fmt.Errorf("outbox: case sweep: %w", err)
	}
	if !missing {
		return 0, nil
	}
	tried := 0
	for {
		now := o.clk.Now()
		tok := newToken()
		var id int64
		var p Posting
		var reason, msg string
		var kind, route string
		found := false
		err := o.db.Write(ctx, func(tx *store.Tx) error {
			rows, err := tx.QueryContext(ctx, `UPDATE AdapterOutbox SET case_token = ?, case_claimed_at = ?
				WHERE id = (SELECT id FROM AdapterOutbox WHERE status = 'BLOCKED' AND case_id IS NULL
					AND (case_token IS NULL OR case_claimed_at < ?) ORDER BY id LIMIT 1)
				  AND status = 'BLOCKED' AND case_id IS NULL
				RETURNING `+claimedCols+`, COALESCE(reason_code,''), COALESCE(last_error,'')`,
				tok, sortableStamp(now), sortableStamp(now.Add(-o.caseWait)))
			if err != nil {
				return err
			}
			defer rows.Close()
			if rows.Next() {
				found = true
				if err := rows.Scan(&id, &p.Ref, &p.TxID, &p.Bank, &p.Account, &kind, &p.Amount, &p.ReversalOf, &route, &reason, &msg); err != nil {
					return err
				}
			}
			return rows.Err()
		})
		if err != nil {
			return tried, fmt.Errorf("outbox: case sweep: %w", err)
		}
		if !found {
			return tried, nil
		}
		p.Kind, p.Route = Kind(kind), Route(route)
		tried++
		o.openCase(ctx, id, tok, p, reason, msg)
		if err := ctx.Err(); err != nil {
			return tried, err
		}
		// A failed opening releases its claim; stop instead of spinning
		// on the same row within this sweep.
		if fail, err := o.caseStillMissing(ctx, id); err != nil || fail {
			return tried, err
		}
	}
}

func (o *Outbox) caseStillMissing(ctx context.Context, id int64) (bool, error) {
	var missing bool
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT case_id IS NULL FROM AdapterOutbox WHERE id = ?`, id).Scan(&missing)
	})
	return missing, err
}
