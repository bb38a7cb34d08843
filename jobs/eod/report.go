package eod

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/scheduler"
	"github.com/zcgw/zcgw/jobs/workbook"
	"github.com/zcgw/zcgw/outbox"
)

// workbook writes <data>/reports/recon-<date>.xlsx from what the earlier
// steps recorded and the current outbox, drift and Case rows. Idempotent:
// the file is replaced whole (temporary name, rename).
func (e *EOD) workbook(ctx context.Context, sc scheduler.StepContext) (string, error) {
	if err := e.hook(stepWorkbook, "before"); err != nil {
		return "", err
	}
	rep, err := e.BuildReport(ctx, sc.BusinessDate)
	if err != nil {
		return "", err
	}
	path := e.WorkbookPath(sc.BusinessDate)
	st, err := IssueWorkbook(ctx, e.cfg.DB, e.cfg.DataDir, path, rep, e.cfg.Clock, func(tx *store.Tx, st workbook.Stats) error {
		if err := sc.Fence(ctx, tx); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO EodWorkbooks (business_date, path, rows, written_at, run_id)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (business_date) DO UPDATE SET path = excluded.path, rows = excluded.rows,
			written_at = excluded.written_at, run_id = excluded.run_id`, sc.BusinessDate, path, st.Rows, clock.Stamp(e.cfg.Clock.Now()), sc.RunID)
		return err
	})
	if err != nil {
		return "", err
	}
	if err := e.hook(stepWorkbook, "after"); err != nil {
		return "", err
	}
	return fmt.Sprintf("wrote %s: %d banks, %d drifts, %d exceptions, %d DNS positions (%d bytes)",
		path, st.Banks, st.Drifts, st.Exceptions, st.DNS, st.Bytes), nil
}

type openCase struct {
	id, bank, state, reason, txid, sla, created string
}

// BuildReport gathers the workbook's figures for a business date. The
// per-bank summary is read at once (one row per bank); drifts, exceptions
// and Cases are iterators that read reportPage rows at a time while the
// workbook streams them, so memory does not grow with the day.
func (e *EOD) BuildReport(ctx context.Context, date string) (workbook.Report, error) {
	rep := workbook.Report{BusinessDate: date, GeneratedAt: e.cfg.Clock.Now()}
	audit, _, err := ChainAuditOf(ctx, e.cfg.DB, date)
	if err != nil {
		return rep, err
	}
	rep.Chain = workbook.ChainAudit{Chains: audit.Chains, Entries: audit.Entries, Breaks: audit.Breaks, CaseIDs: audit.CaseIDs}
	recon, err := Reconciliations(ctx, e.cfg.DB, date)
	if err != nil {
		return rep, err
	}
	dns, err := dnsPositions(ctx, e.cfg.DB, date)
	if err != nil {
		return rep, err
	}
	rep.DNS = dns
	netOf := map[string]int64{}
	for _, p := range dns {
		netOf[p.BankID] = p.Net
	}
	banks := map[string]*workbook.Bank{}
	bankRow := func(id string) *workbook.Bank {
		if b, ok := banks[id]; ok {
			return b
		}
		banks[id] = &workbook.Bank{BankID: id, NetDNS: netOf[id]}
		return banks[id]
	}
	for _, r := range recon {
		b := bankRow(r.BankID)
		b.Accounts, b.Matched, b.Drifts, b.Unsettled, b.Unavailable = r.Accounts, r.Matched, r.Drifts, r.Unsettled, r.Unavailable
		b.ShadowTotal, b.CoreTotal, b.ReconError = r.ShadowTotal, r.CoreTotal, r.Error
	}
	adapters := sortedBanks(e.cfg.Banks)
	for _, a := range adapters {
		b := bankRow(a.BankID())
		counts, err := outboxOf(a).Counts(ctx)
		if err != nil {
			return rep, err
		}
		b.Pending, b.InDoubt, b.Blocked = counts[outbox.Pending], counts[outbox.InDoubt], counts[outbox.Blocked]
	}
	for _, b := range banks {
		rep.Banks = append(rep.Banks, *b)
	}
	slices.SortFunc(rep.Banks, func(a, b workbook.Bank) int { return strings.Compare(a.BankID, b.BankID) })
	rep.Drifts = driftRows(ctx, adapters)
	rep.Exceptions = e.exceptionRows(ctx, adapters)
	return rep, nil
}

// driftRows yields every bank's OPEN drifts, bank by bank, page by page.
func driftRows(ctx context.Context, adapters []*adapter.Adapter) iter.Seq2[workbook.Drift, error] {
	return func(yield func(workbook.Drift, error) bool) {
		for _, a := range adapters {
			var after *adapter.Drift
			for {
				page, err := a.DriftsPage(ctx, "OPEN", after, reportPage)
				if err != nil {
					yield(workbook.Drift{}, err)
					return
				}
				for _, d := range page {
					at, _ := clock.ParseStamp(d.DetectedAt)
					if !yield(workbook.Drift{BankID: a.BankID(), AccountHash: d.AccountHash, CoreAccount: d.CoreAccount,
						ShadowBalance: d.ShadowBalance, CoreBalance: d.CoreBalance, Drift: d.Drift, DriftID: d.DriftID,
						CaseID: d.CaseID, Status: d.Status, Source: d.Source, DetectedAt: at}, nil) {
						return
					}
				}
				if len(page) < reportPage {
					break
				}
				after = &page[len(page)-1]
			}
		}
	}
}

// exceptionRows yields each bank's BLOCKED and IN_DOUBT postings in id
// order (bank by bank), then every open Case by SLA deadline, each read a
// page at a time.
func (e *EOD) exceptionRows(ctx context.Context, adapters []*adapter.Adapter) iter.Seq2[workbook.Exception, error] {
	return func(yield func(workbook.Exception, error) bool) {
		for _, a := range adapters {
			ob := outboxOf(a)
			var after int64
			for {
				page, err := postingExceptions(ctx, ob, after)
				if err != nil {
					yield(workbook.Exception{}, err)
					return
				}
				slas, err := caseSLAs(ctx, e.cfg.DB, page)
				if err != nil {
					yield(workbook.Exception{}, err)
					return
				}
				for _, r := range page {
					x := workbook.Exception{Kind: workbook.KindPosting, BankID: a.BankID(), OutboxID: r.ID, Ref: r.Posting.Ref,
						TxID: r.Posting.TxID, Account: r.Posting.Account, Amount: r.Posting.Amount, Status: string(r.Status),
						ReasonCode: r.ReasonCode, CaseID: r.CaseID, Since: r.UpdatedAt, SLA: slas[r.CaseID]}
					if !yield(x, nil) {
						return
					}
				}
				if len(page) < reportPage {
					break
				}
				after = page[len(page)-1].ID
			}
		}
		var after *openCase
		for {
			cs, err := openCasesPage(ctx, e.cfg.DB, after, reportPage)
			if err != nil {
				yield(workbook.Exception{}, err)
				return
			}
			for _, c := range cs {
				sla, _ := clock.ParseStamp(c.sla)
				since, _ := clock.ParseStamp(c.created)
				if !yield(workbook.Exception{Kind: workbook.KindCase, BankID: c.bank, TxID: c.txid, CaseID: c.id,
					Status: c.state, ReasonCode: c.reason, SLA: sla, Since: since}, nil) {
					return
				}
			}
			if len(cs) < reportPage {
				return
			}
			after = &cs[len(cs)-1]
		}
	}
}

// postingExceptions is the next page (after outbox id after) of a bank's
// BLOCKED and IN_DOUBT postings in id order: one page of each status,
// merged, cut where the shorter full page ends so no row is skipped.
func postingExceptions(ctx context.Context, ob *outbox.Outbox, after int64) ([]outbox.Entry, error) {
	blocked, err := ob.List(ctx, outbox.Filter{Status: outbox.Blocked, AfterID: after, Limit: reportPage})
	if err != nil {
		return nil, err
	}
	inDoubt, err := ob.List(ctx, outbox.Filter{Status: outbox.InDoubt, AfterID: after, Limit: reportPage})
	if err != nil {
		return nil, err
	}
	limit := int64(math.MaxInt64) // rows beyond a full page's last id may be missing from that status
	for _, l := range [][]outbox.Entry{blocked, inDoubt} {
		if len(l) == reportPage && l[len(l)-1].ID < limit {
			limit = l[len(l)-1].ID
		}
	}
	merged := make([]outbox.Entry, 0, len(blocked)+len(inDoubt))
	for _, l := range [][]outbox.Entry{blocked, inDoubt} {
		for _, r := range l {
			if r.ID <= limit {
				merged = append(merged, r)
			}
		}
	}
	slices.SortFunc(merged, func(a, b outbox.Entry) int { return cmp.Compare(a.ID, b.ID) })
	if len(merged) > reportPage {
		merged = merged[:reportPage]
	}
	return merged, nil
}

// caseSLAs reads the SLA deadlines of the Cases a page of postings
// refers to, in one query (a Case without a deadline is absent).
func caseSLAs(ctx context.Context, db *store.DB, page []outbox.Entry) (map[string]time.Time, error) {
	var ids []any
	for _, r := range page {
		if r.CaseID != "" {
			ids = append(ids, r.CaseID)
		}
	}
	out := map[string]time.Time{}
	if len(ids) == 0 {
		return out, nil
	}
	err := db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT case_id, sla_deadline FROM Cases
			WHERE sla_deadline IS NOT NULL AND case_id IN (`+strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")+`)`, ids...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, sla string
			if err := rows.Scan(&id, &sla); err != nil {
				return err
			}
			out[id], _ = clock.ParseStamp(sla)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("eod: SLA of the page's Cases: %w", err)
	}
	return out, nil
}

// openCasesPage lists up to limit Cases not RESOLVED, by SLA deadline,
// after the Case after (nil: from the start).
func openCasesPage(ctx context.Context, db *store.DB, after *openCase, limit int) ([]openCase, error) {
	var afterSLA, afterID string
	if after != nil {
		afterSLA, afterID = after.sla, after.id
	}
	var out []openCase
	err := db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT case_id, COALESCE(cause_party_id,''), state, reason_code,
			COALESCE(related_txid,''), COALESCE(sla_deadline,''), created_at
			FROM Cases WHERE state <> 'RESOLVED' AND (COALESCE(sla_deadline,''), case_id) > (?, ?)
			ORDER BY COALESCE(sla_deadline,''), case_id LIMIT ?`, afterSLA, afterID, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c openCase
			if err := rows.Scan(&c.id, &c.bank, &c.state, &c.reason, &c.txid, &c.sla, &c.created); err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("eod: open cases: %w", err)
	}
	return out, nil
}

// dnsPositions sums each bank's net positions over the date's DNS cycles.
func dnsPositions(ctx context.Context, db *store.DB, date string) ([]workbook.DNSPosition, error) {
	var out []workbook.DNSPosition
	err := db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT n.bank_id, COUNT(DISTINCT n.cycle_id), SUM(n.gross_send), SUM(n.gross_receive),
			SUM(n.net_position), MIN(n.is_settled)
			FROM DnsNetPositions n JOIN DnsCycles c ON c.cycle_id = n.cycle_id
			WHERE c.business_date = ? GROUP BY n.bank_id ORDER BY n.bank_id`, date)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p workbook.DNSPosition
			var settled int
			if err := rows.Scan(&p.BankID, &p.Cycles, &p.GrossSend, &p.GrossReceive, &p.Net, &settled); err != nil {
				return err
			}
			p.Settled = settled == 1
			out = append(out, p)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("eod: DNS positions: %w", err)
	}
	return out, nil
}
