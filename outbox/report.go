package outbox

import (
	"context"
	"errors"
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

// PostingBatchReporter is a PostingReporter that takes many reports in
// one call (one coordinator commit for all of them). ReportMissing uses it
// when its reporter has it; an error means none was taken (each is sent
// again, which the reporter absorbs: idempotent per (ref, status)).
type PostingBatchReporter interface {
	PostingReporter
	ReportPostings(ctx context.Context, rs []PostingReport) error
}

// reportBatch is how many rows one ReportMissing reads.
const reportBatch = 100

// ReportMissing tells the PostingReporter of every APPLIED or BLOCKED
// posting whose current status it has not taken yet (reported_status is
// not status, read on a partial index; a BLOCKED posting requeued and then
// APPLIED is reported once per status), oldest first, and marks each one
// reported after the reporter returned (a guarded update).
// The reports of one call go out in one PostingBatchReporter call when the
// reporter has it, else one by one, stopping at the first failure; the
// marks of the reports taken are one write. A failed report is returned:
// its row stays unreported and the next sweep sends it again, so no report
// is lost. It returns how many
// rows it marked. Without a reporter it does nothing.
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
	if len(rows) == 0 {
		return 0, nil
	}
	reports := make([]PostingReport, len(rows))
	for i, e := range rows {
		reports[i] = PostingReport{Posting: e.Posting, Status: e.Status, CoreRef: e.CoreRef, ReasonCode: e.ReasonCode, CaseID: e.CaseID}
	}
	ok := make([]bool, len(rows))
	var firstErr error
	if br, isBatch := o.postings.(PostingBatchReporter); isBatch {
		if firstErr = br.ReportPostings(ctx, reports); firstErr == nil {
			for i := range ok {
				ok[i] = true
			}
		} else {
			firstErr = fmt.Errorf("outbox: report %d postings: %w", len(reports), firstErr)
		}
	} else {
		// One call per posting, oldest first, stopping at the first failure.
		for i := range reports {
			if err := o.postings.ReportPosting(ctx, reports[i]); err != nil {
				firstErr = fmt.Errorf("outbox: report %s %s: %w", reports[i].Posting.Ref, reports[i].Status, err)
				break
			}
			ok[i] = true
		}
	}
	// Every report taken is marked in one write; a report not taken stays
	// due for the next sweep.
	marked := 0
	err = o.db.Write(ctx, func(tx *store.Tx) error {
		marked = 0
		for i, e := range rows {
			if !ok[i] {
				continue
			}
			res, err := tx.ExecContext(ctx, `UPDATE AdapterOutbox SET reported_status = status WHERE id = ? AND status = ?
				AND reported_status IS NOT status`, e.ID, string(e.Status))
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 1 {
				marked++
			}
		}
		return nil
	})
	if err != nil {
		return 0, errors.Join(firstErr, fmt.Errorf("outbox: mark %d postings reported: %w", len(rows), err))
	}
	return marked, firstErr
}
