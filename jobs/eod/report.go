package eod

import (
	"context"
	"fmt"
	"slices"

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
	st, err := workbook.Write(path, rep)
	if err != nil {
		return "", err
	}
	err = e.cfg.DB.Write(ctx, func(tx *store.Tx) error {
		if err := sc.Fence(ctx, tx); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO EodWorkbooks (business_date, path, rows, written_at, run_id)
			VALUES (?, ?, ?, ?, ?)`, sc.BusinessDate, path, st.Rows, clock.Stamp(e.cfg.Clock.Now()), sc.RunID)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("eod: record workbook: %w", err)
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

// BuildReport gathers the workbook's figures for a business date.
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
	cs, err := openCases(ctx, e.cfg.DB)
	if err != nil {
		return rep, err
	}
	caseByID := map[string]openCase{}
	for _, c := range cs {
		caseByID[c.id] = c
	}
	var drifts []workbook.Drift
	var excs []workbook.Exception
	banks := map[string]*workbook.Bank{}
	var order []string
	bankRow := func(id string) *workbook.Bank {
		if b, ok := banks[id]; ok {
			return b
		}
		banks[id] = &workbook.Bank{BankID: id, NetDNS: netOf[id]}
		order = append(order, id)
		return banks[id]
	}
	for _, r := range recon {
		b := bankRow(r.BankID)
		b.Accounts, b.Matched, b.Drifts, b.Unsettled, b.Unavailable = r.Accounts, r.Matched, r.Drifts, r.Unsettled, r.Unavailable
		b.ShadowTotal, b.CoreTotal, b.ReconError = r.ShadowTotal, r.CoreTotal, r.Error
	}
	for _, a := range sortedBanks(e.cfg.Banks) {
		b := bankRow(a.BankID())
		ob := outboxOf(a)
		counts, err := ob.Counts(ctx)
		if err != nil {
			return rep, err
		}
		b.Pending, b.InDoubt, b.Blocked = counts[outbox.Pending], counts[outbox.InDoubt], counts[outbox.Blocked]
		ds, err := a.Drifts(ctx, "OPEN")
		if err != nil {
			return rep, err
		}
		for _, d := range ds {
			at, _ := clock.ParseStamp(d.DetectedAt)
			drifts = append(drifts, workbook.Drift{BankID: a.BankID(), AccountHash: d.AccountHash, CoreAccount: d.CoreAccount,
				ShadowBalance: d.ShadowBalance, CoreBalance: d.CoreBalance, Drift: d.Drift, DriftID: d.DriftID,
				CaseID: d.CaseID, Status: d.Status, Source: d.Source, DetectedAt: at})
		}
		for _, st := range []outbox.Status{outbox.Blocked, outbox.InDoubt} {
			rows, err := ob.List(ctx, outbox.Filter{Status: st, Limit: maxListedExceptions})
			if err != nil {
				return rep, err
			}
			for _, r := range rows {
				x := workbook.Exception{Kind: workbook.KindPosting, BankID: a.BankID(), OutboxID: r.ID, Ref: r.Posting.Ref,
					TxID: r.Posting.TxID, Account: r.Posting.Account, Amount: r.Posting.Amount, Status: string(r.Status),
					ReasonCode: r.ReasonCode, CaseID: r.CaseID, Since: r.UpdatedAt}
				if c, ok := caseByID[r.CaseID]; ok {
					x.SLA, _ = clock.ParseStamp(c.sla)
				}
				excs = append(excs, x)
			}
		}
	}
	slices.SortStableFunc(excs, func(a, b workbook.Exception) int {
		if a.BankID != b.BankID {
			if a.BankID < b.BankID {
				return -1
			}
			return 1
		}
		return int(a.OutboxID - b.OutboxID)
	})
	for _, c := range cs {
		sla, _ := clock.ParseStamp(c.sla)
		since, _ := clock.ParseStamp(c.created)
		excs = append(excs, workbook.Exception{Kind: workbook.KindCase, BankID: c.bank, TxID: c.txid, CaseID: c.id,
			Status: c.state, ReasonCode: c.reason, SLA: sla, Since: since})
	}
	for _, id := range order {
		rep.Banks = append(rep.Banks, *banks[id])
	}
	slices.SortFunc(rep.Banks, func(a, b workbook.Bank) int {
		switch {
		case a.BankID < b.BankID:
			return -1
		case a.BankID > b.BankID:
			return 1
		}
		return 0
	})
	rep.Drifts = sliceSeq(drifts)
	rep.Exceptions = sliceSeq(excs)
	return rep, nil
}

func sliceSeq[T any](xs []T) func(yield func(T, error) bool) {
	return func(yield func(T, error) bool) {
		for _, x := range xs {
			if !yield(x, nil) {
				return
			}
		}
	}
}

// openCases lists the Cases not RESOLVED, by SLA deadline.
func openCases(ctx context.Context, db *store.DB) ([]openCase, error) {
	var out []openCase
	err := db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT case_id, COALESCE(cause_party_id,''), state, reason_code,
			COALESCE(related_txid,''), COALESCE(sla_deadline,''), created_at
			FROM Cases WHERE state <> 'RESOLVED' ORDER BY sla_deadline, case_id`)
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
