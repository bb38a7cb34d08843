package adapter

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/formats/corebalance"
)

// SourceBalanceFile is the drift source of a reconciliation against the
// core balance file.
const SourceBalanceFile = "BALANCE_FILE"

// BalanceFileRecon is the outcome of ReconcileBalanceFile over one file.
type BalanceFileRecon struct {
	BusinessDate string // JST YYYY-MM-DD, from the header
	Cutoff       string // the file's cutoff as a stored stamp (UTC)
	// Accounts counts the shadow's accounts; Matched, Drifts, Unsettled
	// and NotInFile split them.
	Accounts, Matched, Drifts, Unsettled, NotInFile int
	// Unknown counts accounts of the file the adapter has not registered
	// (a core holds many accounts zcgw never sees).
	Unknown int
	// Totals over the accounts compared (MATCHED, DRIFT, UNSETTLED).
	ShadowTotal, CoreTotal int64
}

// ReconcileBalanceFile reconciles every account of the shadow ledger
// against the core balance file (formats/corebalance) in one streaming
// pass: the file is validated whole first (nothing is recorded from a file
// whose trailer does not agree), then its details, in account order, are
// merged with the shadow read in the same order (one query, one account at
// a time), so memory stays flat in the number of accounts.
//
// Per account: no detail in the file is NOT_IN_RESULT; a posting in doubt
// or in an overnight file, or any change of the account's postings or
// adjustment after the file's cutoff, is UNSETTLED (the file and the
// shadow do not describe the same moment; a posting the adapter saw
// APPLIED at or before the cutoff was applied by the core before it, so it
// is in the file); equal balances are MATCHED; a
// difference is a drift, recorded with its Case as ReconcileAccount does
// (an OPEN drift of the same account and amount is found, not repeated).
// A snapshot file needs no second observation: the cutoff rule excludes
// every account that moved. each, when not nil, receives every account's
// result: the others in account order during the pass, then the drifts,
// each once recorded (only drifts are held in memory until the pass ends:
// a Case is not opened while the read snapshot is held).
func (a *Adapter) ReconcileBalanceFile(ctx context.Context, file io.ReadSeeker, each func(ReconResult) error) (BalanceFileRecon, error) {
	var out BalanceFileRecon
	vs, err := corebalance.Validate(file)
	if err != nil {
		return out, domainerr.Wrap("INVALID_REQUEST", err, "core balance file refused", map[string]any{"bank_id": a.bank})
	}
	if want := fmt.Sprintf("%04s", a.bank); vs.Header.BankCode != want {
		return out, domainerr.New("INVALID_REQUEST", "core balance file is for another bank",
			map[string]any{"bank_id": a.bank, "file_bank": vs.Header.BankCode})
	}
	cut, err := time.ParseInLocation("20060102150405", vs.Header.CutoffAt, clock.JST)
	if err != nil {
		return out, fmt.Errorf("adapter: balance file cutoff: %w", err)
	}
	out.Cutoff = clock.Stamp(cut)
	d := vs.Header.BusinessDate
	out.BusinessDate = fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day)
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return out, fmt.Errorf("adapter: balance file: %w", err)
	}
	fr := corebalance.NewReader(file)
	next := func() (*corebalance.Detail, error) { // the next detail, nil at the end
		for {
			rec, err := fr.Next()
			if err == io.EOF {
				return nil, nil
			}
			if err != nil {
				return nil, domainerr.Wrap("INVALID_REQUEST", err, "core balance file changed while read", map[string]any{"bank_id": a.bank})
			}
			if d, ok := rec.(*corebalance.Detail); ok {
				return d, nil
			}
		}
	}
	detail, err := next()
	if err != nil {
		return out, err
	}
	var drifts []ReconResult
	err = a.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, shadowStreamQuery)
		if err != nil {
			return fmt.Errorf("adapter: read shadows: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var s streamedShadow
			if err := rows.Scan(&s.hash, &s.core, &s.base, &s.accountAt, &s.applied, &s.unsettled, &s.postingAt); err != nil {
				return fmt.Errorf("adapter: read shadows: %w", err)
			}
			out.Accounts++
			key := s.core
			// Skip the file's accounts before this one: not registered here.
			for detail != nil && detail.Account.String() < key {
				out.Unknown++
				if detail, err = next(); err != nil {
					return err
				}
			}
			r := ReconResult{AccountHash: s.hash, CoreAccount: s.core, ShadowBalance: s.base + s.applied}
			switch {
			case detail == nil || detail.Account.String() != key:
				r.Status = ReconNoCoreValue
				out.NotInFile++
			default:
				r.CoreBalance = detail.Balance
				r.Drift = r.CoreBalance - r.ShadowBalance
				switch {
				case s.unsettled > 0 || s.accountAt > out.Cutoff || s.postingAt > out.Cutoff:
					r.Status = ReconUnsettled
					out.Unsettled++
				case r.Drift == 0:
					r.Status = ReconMatched
					out.Matched++
				default:
					r.Status = ReconDrift
					out.Drifts++
				}
				out.ShadowTotal += r.ShadowBalance
				out.CoreTotal += r.CoreBalance
				if detail, err = next(); err != nil {
					return err
				}
			}
			if r.Status == ReconDrift {
				// Recorded after the pass: a drift opens a Case, which
				// is not done while holding the read snapshot.
				drifts = append(drifts, r)
				continue
			}
			if each != nil {
				if err := each(r); err != nil {
					return err
				}
			}
		}
		return rows.Err()
	})
	if err != nil {
		return out, err
	}
	for ; detail != nil; detail, err = next() {
		out.Unknown++
	}
	if err != nil {
		return out, err
	}
	for _, r := range drifts {
		r, err := a.recordDrift(ctx, r, SourceBalanceFile)
		if err != nil {
			return out, err
		}
		if each != nil {
			if err := each(r); err != nil {
				return out, err
			}
		}
	}
	a.log.InfoContext(ctx, "adapter.balance_file_reconciled", "bank_id", a.bank, "business_date", out.BusinessDate,
		"cutoff", out.Cutoff, "shadows", out.Accounts, "matched", out.Matched, "drifts", out.Drifts,
		"unsettled", out.Unsettled, "not_in_file", out.NotInFile, "unknown", out.Unknown)
	return out, nil
}

type streamedShadow struct {
	hash, core           string
	base, applied        int64 // opening + adjustment; sum of APPLIED postings
	unsettled            int
	accountAt, postingAt string
}

// shadowStreamQuery is readShadow's core balance and unsettled count for
// every account at once, in core account order (the UNIQUE index on
// core_account: no sort), with the latest change of the account row and
// of its postings.
var shadowStreamQuery = strings.TrimSpace(`
SELECT a.account_hash, a.core_account, a.opening_balance + a.adjustment, a.updated_at,
  COALESCE(SUM(CASE WHEN o.status = 'APPLIED' THEN p.direction * p.amount END), 0),
  COALESCE(SUM(CASE WHEN o.status IN ('CLAIMED','IN_DOUBT','IN_FILE') THEN 1 ELSE 0 END), 0),
  COALESCE(MAX(o.updated_at), '')
FROM AdapterAccounts a
LEFT JOIN AdapterPostings p ON p.account_hash = a.account_hash
LEFT JOIN AdapterOutbox o ON o.ref = p.ref
GROUP BY a.core_account
ORDER BY a.core_account`)
