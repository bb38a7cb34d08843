package adapter

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/uuid"
	"github.com/zcgw/zcgw/outbox"
)

// Reconciliation outcomes.
const (
	ReconMatched     = "MATCHED"     // core balance == shadow core balance
	ReconDrift       = "DRIFT"       // a drift is recorded (AdapterReconDrift) with its Case
	ReconUnsettled   = "UNSETTLED"   // postings in doubt or in an overnight file (CLAIMED/IN_DOUBT/IN_FILE): not comparable now
	ReconUnavailable = "UNAVAILABLE" // the core did not answer the balance inquiry
	// ReconCurrency: the core keeps the account in another currency than
	// it is registered in; the balances are not comparable (Err says which).
	ReconCurrency    = "CURRENCY_MISMATCH"
	ReconNoCoreValue = "NOT_IN_RESULT" // the result file has no line for the account
)

// Drift sources.
const (
	SourceInquiry    = "INQUIRY"
	SourceResultFile = "RESULT_FILE"
)

// ReconResult is the outcome for one account.
type ReconResult struct {
	AccountHash   string
	CoreAccount   string
	Status        string
	ShadowBalance int64 // the shadow's last known core balance
	CoreBalance   int64
	Drift         int64 // CoreBalance - ShadowBalance
	DriftID       string
	CaseID        string
	Err           error // the inquiry error for UNAVAILABLE
}

// Drift is one AdapterReconDrift row.
type Drift struct {
	DriftID       string
	AccountHash   string
	CoreAccount   string
	ShadowBalance int64
	CoreBalance   int64
	Drift         int64
	Source        string
	Status        string // OPEN or RESOLVED
	CaseID        string
	DetectedAt    string
	Resolution    string
}

// ReconcileAll reconciles every account by balance inquiry. Once the core
// fails to answer, the remaining accounts are reported UNAVAILABLE without
// asking.
func (a *Adapter) ReconcileAll(ctx context.Context) ([]ReconResult, error) {
	var hashes []string
	if err := a.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		hashes, err = accountHashes(ctx, tx)
		return err
	}); err != nil {
		return nil, err
	}
	out := make([]ReconResult, 0, len(hashes))
	var down error
	for _, h := range hashes {
		if down != nil {
			// The core stopped answering: don't wait a timeout per account.
			out = append(out, ReconResult{AccountHash: h, Status: ReconUnavailable, Err: down})
			continue
		}
		r, err := a.ReconcileAccount(ctx, h)
		if err != nil {
			return out, err
		}
		if r.Status == ReconUnavailable && !domainerr.Has(r.Err, "ACCOUNT_NOT_FOUND") {
			down = r.Err
		}
		out = append(out, r)
	}
	return out, nil
}

// ReconcileAccount compares the shadow's last known core balance with the
// balance the core reports now. The core is asked first and the shadow
// read after, so a posting applied in between is either APPLIED in the
// shadow or still CLAIMED (then the account is UNSETTLED, not drifted). A
// difference must be seen twice in a row before it is recorded, which
// rules out a posting that completed between the two reads. A drift opens
// a real Case and records an AdapterReconDrift row with its case_id.
func (a *Adapter) ReconcileAccount(ctx context.Context, hash string) (ReconResult, error) {
	if a.inq == nil {
		return ReconResult{}, domainerr.New("BANK_ERROR", "no core inquiry link configured", nil)
	}
	var last ReconResult
	for attempt := 0; attempt < 2; attempt++ {
		r, err := a.observe(ctx, hash)
		if err != nil || r.Status != ReconDrift {
			return r, err
		}
		if attempt == 1 && r.Drift == last.Drift {
			return a.recordDrift(ctx, r, SourceInquiry)
		}
		last = r
	}
	last.Status = ReconUnsettled // the difference moved between observations
	return last, nil
}

func (a *Adapter) observe(ctx context.Context, hash string) (ReconResult, error) {
	var acct Shadow
	err := a.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		acct, err = readShadow(ctx, tx, hash)
		return err
	})
	if err != nil {
		return ReconResult{}, err
	}
	r := ReconResult{AccountHash: hash, CoreAccount: acct.CoreAccount}
	core, err := a.inq.Balance(ctx, acct.CoreAccount)
	if err != nil {
		r.Status, r.Err = ReconUnavailable, err
		a.log.WarnContext(ctx, "adapter.recon_unavailable", "account_hash", hash, "error", err)
		return r, nil
	}
	if cur := a.accountCurrency(acct); core.Currency != "" && core.Currency != cur {
		r.Status = ReconCurrency
		r.Err = domainerr.New("INVALID_CURRENCY", "the core keeps the account in "+core.Currency+", registered in "+cur,
			map[string]any{"core_currency": core.Currency, "currency": cur, "account_hash": hash})
		a.log.WarnContext(ctx, "adapter.recon_currency_mismatch", "account_hash", hash, "core_currency", core.Currency, "currency", cur)
		return r, nil
	}
	return a.compare(ctx, hash, core.Ledger)
}

// compare reads the shadow after the core value was obtained.
func (a *Adapter) compare(ctx context.Context, hash string, core int64) (ReconResult, error) {
	var s Shadow
	if err := a.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		s, err = readShadow(ctx, tx, hash)
		return err
	}); err != nil {
		return ReconResult{}, err
	}
	r := ReconResult{AccountHash: hash, CoreAccount: s.CoreAccount, ShadowBalance: s.CoreBalance, CoreBalance: core,
		Drift: core - s.CoreBalance}
	switch {
	case s.Unsettled > 0:
		r.Status = ReconUnsettled
	case r.Drift == 0:
		r.Status = ReconMatched
	default:
		r.Status = ReconDrift
	}
	return r, nil
}

// ReconcileResultFile reconciles against the closing balances of the
// core's overnight result file (core account -> balance). Accounts missing
// from the file are reported NOT_IN_RESULT. Call it before the outbox
// drains anything after the batch, or postings applied after the file was
// cut show as drift.
func (a *Adapter) ReconcileResultFile(ctx context.Context, closing map[string]int64) ([]ReconResult, error) {
	shadows, err := a.Shadows(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ReconResult, 0, len(shadows))
	for _, s := range shadows {
		core, ok := closing[s.CoreAccount]
		if !ok {
			out = append(out, ReconResult{AccountHash: s.Hash, CoreAccount: s.CoreAccount, Status: ReconNoCoreValue,
				ShadowBalance: s.CoreBalance})
			continue
		}
		r, err := a.compare(ctx, s.Hash, core)
		if err != nil {
			return out, err
		}
		if r.Status == ReconDrift {
			if r, err = a.recordDrift(ctx, r, SourceResultFile); err != nil {
				return out, err
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// recordDrift writes the AdapterReconDrift row (or finds the OPEN row for
// the same account and amount) and then opens its Case; the Case's dedup
// key is the drift id, so a crash between the two cannot open a second
// Case: the next reconciliation finishes the open row.
func (a *Adapter) recordDrift(ctx context.Context, r ReconResult, source string) (ReconResult, error) {
	err := a.db.Write(ctx, func(tx *store.Tx) error {
		var caseID sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT drift_id, case_id FROM AdapterReconDrift
			WHERE account_hash = ? AND status = 'OPEN' AND drift = ? ORDER BY detected_at LIMIT 1`, r.AccountHash, r.Drift).
			Scan(&r.DriftID, &caseID)
		if err == nil {
			r.CaseID = caseID.String
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("adapter: read drifts: %w", err)
		}
		r.DriftID = "DRIFT-" + uuid.New()
		_, err = tx.ExecContext(ctx, `INSERT INTO AdapterReconDrift
			(drift_id, bank_id, account_hash, core_account, shadow_balance, core_balance, drift, source, status, detected_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'OPEN', ?)`,
			r.DriftID, a.bank, r.AccountHash, r.CoreAccount, r.ShadowBalance, r.CoreBalance, r.Drift, source, a.now())
		if err != nil {
			return fmt.Errorf("adapter: record drift: %w", err)
		}
		a.log.WarnContext(ctx, "adapter.recon_drift", "drift_id", r.DriftID, "account_hash", r.AccountHash,
			"shadow_balance", r.ShadowBalance, "core_balance", r.CoreBalance, "drift", r.Drift, "source", source)
		return nil
	})
	if err != nil {
		return r, err
	}
	r.Status = ReconDrift
	if r.CaseID != "" {
		return r, nil
	}
	caseID, err := a.openDriftCase(ctx, r)
	r.CaseID = caseID
	return r, err
}

// driftCause is the cause of a drift's Case: the account (by its hash,
// never the account number) and the signed amount, so each drift is its
// own Case ("CAUSE:{bank}:RECON_DRIFT:{hash}:{drift}") and a drift seen
// again joins its Case.
func driftCause(accountHash string, drift int64) string {
	return fmt.Sprintf("%s:%+d", accountHash, drift)
}

func (a *Adapter) openDriftCase(ctx context.Context, r ReconResult) (string, error) {
	if a.cases == nil {
		return "", domainerr.New("INVARIANT_VIOLATION", "reconciliation drift found but no CaseOpener is configured",
			map[string]any{"drift_id": r.DriftID})
	}
	amount := r.Drift
	if amount < 0 {
		amount = -amount
	}
	caseID, err := a.cases.OpenCase(ctx, outbox.CaseRequest{
		DedupKey:      "ADAPTER-RECON-DRIFT:" + r.DriftID,
		ReasonCode:    cases.ReasonReconDrift,
		Description:   fmt.Sprintf("bank %s account %s: core balance %d, shadow %d (drift %+d)", a.bank, r.CoreAccount, r.CoreBalance, r.ShadowBalance, r.Drift),
		OpenedBy:      "BANK",
		CausePartyID:  a.bank,
		DetectionPath: "ADAPTER_RECON",
		Cause:         driftCause(r.AccountHash, r.Drift),
		Ref:           r.DriftID,
		Account:       r.CoreAccount,
		Amount:        amount,
	})
	if err != nil {
		return "", fmt.Errorf("adapter: open case for drift %s: %w", r.DriftID, err)
	}
	err = a.db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE AdapterReconDrift SET case_id = ? WHERE drift_id = ? AND case_id IS NULL`, caseID, r.DriftID)
		return err
	})
	if err != nil {
		return caseID, fmt.Errorf("adapter: link case %s to drift %s: %w", caseID, r.DriftID, err)
	}
	a.log.InfoContext(ctx, "adapter.recon_case_opened", "drift_id", r.DriftID, "case_id", caseID)
	return caseID, nil
}

// Drifts lists AdapterReconDrift rows (status "" for all).
func (a *Adapter) Drifts(ctx context.Context, status string) ([]Drift, error) {
	return a.DriftsPage(ctx, status, nil, -1)
}

// DriftsPage is Drifts in pages: at most limit drifts (-1: all) coming
// after the drift after (nil: from the start) in (detected_at, drift_id)
// order, so a long list is read with flat memory.
func (a *Adapter) DriftsPage(ctx context.Context, status string, after *Drift, limit int) ([]Drift, error) {
	var afterAt, afterID string
	if after != nil {
		afterAt, afterID = after.DetectedAt, after.DriftID
	}
	if limit < 0 { // all: PostgreSQL refuses a negative LIMIT, SQLite reads it as none
		limit = math.MaxInt64
	}
	var out []Drift
	err := a.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT drift_id, account_hash, core_account, shadow_balance, core_balance, drift,
			source, status, COALESCE(case_id, ''), detected_at, COALESCE(resolution, '')
			FROM AdapterReconDrift WHERE (?1 = '' OR status = ?1) AND (detected_at, drift_id) > (?2, ?3)
			ORDER BY detected_at, drift_id LIMIT ?4`, status, afterAt, afterID, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d Drift
			if err := rows.Scan(&d.DriftID, &d.AccountHash, &d.CoreAccount, &d.ShadowBalance, &d.CoreBalance, &d.Drift,
				&d.Source, &d.Status, &d.CaseID, &d.DetectedAt, &d.Resolution); err != nil {
				return err
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("adapter: list drifts: %w", err)
	}
	return out, nil
}

// ResolveDrift closes an OPEN drift once a person has decided. With
// adoptCore the shadow adopts the core balance (an adjustment equal to the
// drift, for an out-of-band change the bank accepts); otherwise the core
// was corrected and the shadow stays. The move is guarded on OPEN and
// audited.
func (a *Adapter) ResolveDrift(ctx context.Context, driftID, resolution string, adoptCore bool) error {
	if resolution == "" {
		return domainerr.New("MISSING_FIELD", "resolution is required", map[string]any{"drift_id": driftID})
	}
	return a.db.Write(ctx, func(tx *store.Tx) error {
		var hash string
		var drift int64
		err := tx.QueryRowContext(ctx, `SELECT account_hash, drift FROM AdapterReconDrift WHERE drift_id = ? AND status = 'OPEN'`, driftID).
			Scan(&hash, &drift)
		if errors.Is(err, sql.ErrNoRows) {
			return domainerr.New("STATE_GUARD", "no OPEN drift with this id", map[string]any{"drift_id": driftID})
		}
		if err != nil {
			return fmt.Errorf("adapter: resolve drift %s: %w", driftID, err)
		}
		res, err := tx.ExecContext(ctx, `UPDATE AdapterReconDrift SET status = 'RESOLVED', resolved_at = ?, resolution = ?
			WHERE drift_id = ? AND status = 'OPEN'`, a.now(), resolution, driftID)
		if err != nil {
			return fmt.Errorf("adapter: resolve drift %s: %w", driftID, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return domainerr.New("CONCURRENCY_CONFLICT", "drift changed concurrently", map[string]any{"drift_id": driftID})
		}
		if adoptCore {
			if _, err := tx.ExecContext(ctx, `UPDATE AdapterAccounts SET adjustment = adjustment + ?, updated_at = ? WHERE account_hash = ?`,
				drift, a.now(), hash); err != nil {
				return fmt.Errorf("adapter: adopt core balance %s: %w", hash, err)
			}
		}
		payload := fmt.Sprintf(`{"drift_id":%q,"adopt_core":%t,"drift":%d}`, driftID, adoptCore, drift)
		return a.audit(ctx, tx, "DRIFT_RESOLVED", "", "", payload)
	})
}
