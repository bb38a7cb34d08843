package outbox

import (
	"context"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/store"
)

// PostingReport is a posting that reached a final status at the core:
// APPLIED (landed) or BLOCKED (refused).
type PostingReport struct {
	Posting    Posting
	Status     Status
	CoreRef    string
	ReasonCode string
	CaseID     string
}

// PostingReporter is told each posting's final status, so the coordinator
// can show and publish whether a leg landed at the core (the node wires it
// to the coordinator; the outbox never writes coordinator tables).
// ReportPosting must be idempotent per (ref, status): a report whose
// acknowledgement was lost is sent again.
type PostingReporter interface {
	ReportPosting(ctx context.Context, r PostingReport) error
}

// reportBatch is how many rows one ReportMissing reads.
const reportBatch = 100

// ReportMissing tells the PostingReporter of every APPLIED or BLOCKED
// posting whose current status it has not taken yet (reported_status is
// not status, read on a partial index; a BLOCKED posting requeued and then
// APPLIED is reported once per status), oldest first, and marks each one
// reported after the reporter returned (a guarded update).
// It stops at the first failure, which it returns: the row stays
// unreported and the next sweep sends it again, so no report is lost. It
// returns how many rows it marked. Without a reporter it does nothing.
func (o *Outbox) ReportMissing(ctx context.Context) (int, error) {
	if o.postings == nil {
		return 0, nil
	}
	var rows []Entry
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		rs, err := tx.QueryContext(ctx, `SELECT `+entryCols+` FROM AdapterOutbox
			WHERE status IN ('APPLIED', 'BLOCKED') AND reported_status IS NOT status ORDER BY id LIMIT ?`, reportBatch)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			e, err := scanEntry(rs)
			if err != nil {
				return err
			}
			rows = append(rows, e)
		}
		return rs.Err()
	})
	if err != nil {
		return 0, fmt.Errorf("outbox: unreported postings: %w", err)
	}
	marked := 0
	for _, e := range rows {
		r := PostingReport{Posting: e.Posting, Status: e.Status, CoreRef: e.CoreRef, ReasonCode: e.ReasonCode, CaseID: e.CaseID}
		if err := o.postings.ReportPosting(ctx, r); err != nil {
			return marked, fmt.Errorf("outbox: report %s %s: %w", e.Posting.Ref, e.Status, err)
		}
		err := o.db.Write(ctx, func(tx *store.Tx) error {
			res, err := tx.ExecContext(ctx, `UPDATE AdapterOutbox SET reported_status = status WHERE id = ? AND status = ?
				AND reported_status IS NOT status`, e.ID, string(e.Status))
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 1 {
				marked++
			}
			return nil
		})
		if err != nil {
			return marked, fmt.Errorf("outbox: mark %s reported: %w", e.Posting.Ref, err)
		}
	}
	return marked, nil
}
