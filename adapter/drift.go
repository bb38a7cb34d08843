package adapter

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox"
)

// How an operator ends a drift (SettleDrift).
const (
	// DriftAdjust sends an adjusting posting through the outbox that brings
	// the core back to the shadow's balance.
	DriftAdjust = "ADJUST"
	// DriftAccept accepts the core's balance (an out-of-band change the bank
	// confirms): the shadow adopts it, nothing is sent to the core.
	DriftAccept = "ACCEPT"
)

// DriftTxID is the txid an adjusting posting of drift driftID carries to
// the core: "ADJ-" and the drift id's hex digits, cut to the 32 bytes the
// core message's txid field holds (formats/coremsg).
func DriftTxID(driftID string) string {
	id := "ADJ-" + strings.ReplaceAll(strings.TrimPrefix(driftID, "DRIFT-"), "-", "")
	return id[:min(len(id), 32)]
}

// DriftSettled is what SettleDrift did.
type DriftSettled struct {
	Drift
	How     string
	Ref     string // the adjusting posting's reference (DriftAdjust)
	Already bool   // the drift was settled this way before: nothing done now
}

// DriftByCase returns the drift whose Case is caseID; none is NOT_FOUND.
func (a *Adapter) DriftByCase(ctx context.Context, caseID string) (Drift, error) {
	var d Drift
	err := a.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT drift_id, account_hash, core_account, shadow_balance, core_balance, drift,
			source, status, COALESCE(case_id, ''), detected_at, COALESCE(resolution, '')
			FROM AdapterReconDrift WHERE case_id = ? ORDER BY detected_at, drift_id LIMIT 1`, caseID).
			Scan(&d.DriftID, &d.AccountHash, &d.CoreAccount, &d.ShadowBalance, &d.CoreBalance, &d.Drift,
				&d.Source, &d.Status, &d.CaseID, &d.DetectedAt, &d.Resolution)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return d, domainerr.New("NOT_FOUND", "no drift of bank "+a.bank+" has this Case", map[string]any{"case_id": caseID, "bank_id": a.bank})
	}
	if err != nil {
		return d, fmt.Errorf("adapter: drift of case %s: %w", caseID, err)
	}
	return d, nil
}

// SettleDrift ends an OPEN drift by an operator's decision, in one adapter
// transaction: the guarded move OPEN -> RESOLVED with the resolution
// "<how>: <note> (by <operator>)", the shadow adopting the core balance
// (adjustment += drift), an AdapterAuditLog DRIFT_RESOLVED row and, for
// DriftAdjust, an adjusting posting of the drift's size queued in the
// outbox with its AdapterPostings row (a DEBIT when the core holds more
// than the shadow, a CREDIT when less). Once the outbox applies it, core
// and shadow are both back at the shadow's balance; until then they agree
// at the core's. A drift already settled the same way is reported with
// Already (so a caller that stopped before recording the Case can finish);
// settled another way, or unknown, it is STATE_GUARD / NOT_FOUND.
func (a *Adapter) SettleDrift(ctx context.Context, driftID, how, operator, note string) (DriftSettled, error) {
	out := DriftSettled{How: how}
	if how != DriftAdjust && how != DriftAccept {
		return out, domainerr.New("INVALID_REQUEST", "a drift is settled by ADJUST or ACCEPT", map[string]any{"field": "how", "value": how})
	}
	if strings.TrimSpace(operator) == "" || strings.TrimSpace(note) == "" {
		return out, domainerr.New("MISSING_FIELD", "settling a drift needs the operator and a note",
			map[string]any{"drift_id": driftID, "field": "operator, note"})
	}
	err := a.db.Write(ctx, func(tx *store.Tx) error {
		d := &out.Drift
		err := tx.QueryRowContext(ctx, `SELECT drift_id, account_hash, core_account, shadow_balance, core_balance, drift,
			source, status, COALESCE(case_id, ''), detected_at, COALESCE(resolution, '')
			FROM AdapterReconDrift WHERE drift_id = ?`, driftID).
			Scan(&d.DriftID, &d.AccountHash, &d.CoreAccount, &d.ShadowBalance, &d.CoreBalance, &d.Drift,
				&d.Source, &d.Status, &d.CaseID, &d.DetectedAt, &d.Resolution)
		if errors.Is(err, sql.ErrNoRows) {
			return domainerr.New("NOT_FOUND", "no drift with this id", map[string]any{"drift_id": driftID})
		}
		if err != nil {
			return fmt.Errorf("adapter: settle drift %s: %w", driftID, err)
		}
		if d.Status != "OPEN" {
			if strings.HasPrefix(d.Resolution, how+":") {
				out.Already = true
				return nil
			}
			return domainerr.New("STATE_GUARD", "the drift was already resolved: "+d.Resolution,
				map[string]any{"drift_id": driftID, "state_from": d.Status})
		}
		resolution := fmt.Sprintf("%s: %s (by %s)", how, note, operator)
		applied, err := store.Applied(tx.ExecContext(ctx, `UPDATE AdapterReconDrift SET status = 'RESOLVED', resolved_at = ?, resolution = ?
			WHERE drift_id = ? AND status = 'OPEN'`, a.now(), resolution, driftID))
		if err != nil {
			return fmt.Errorf("adapter: settle drift %s: %w", driftID, err)
		}
		if !applied {
			return domainerr.New("STATE_GUARD", "the drift changed concurrently", map[string]any{"drift_id": driftID})
		}
		d.Status, d.Resolution = "RESOLVED", resolution
		if _, err := tx.ExecContext(ctx, `UPDATE AdapterAccounts SET adjustment = adjustment + ?, updated_at = ? WHERE account_hash = ?`,
			d.Drift, a.now(), d.AccountHash); err != nil {
			return fmt.Errorf("adapter: adopt core balance %s: %w", d.AccountHash, err)
		}
		if how == DriftAdjust {
			s, err := readShadow(ctx, tx, d.AccountHash)
			if err != nil {
				return err
			}
			kind, direction, amount := outbox.Debit, -1, d.Drift
			if d.Drift < 0 {
				kind, direction, amount = outbox.Credit, 1, -d.Drift
			}
			if out.Ref, err = a.queuePosting(ctx, tx, s, DriftTxID(d.DriftID), d.DriftID, "", kind, direction, amount, ""); err != nil {
				return err
			}
		}
		payload, err := json.Marshal(map[string]any{"drift_id": driftID, "how": how, "drift": d.Drift, "operator": operator,
			"note": note, "posting_ref": out.Ref, "case_id": d.CaseID})
		if err != nil {
			return err
		}
		return a.audit(ctx, tx, "DRIFT_RESOLVED", "", "", string(payload))
	})
	if err == nil && out.Ref != "" {
		a.ob.Wake() // the adjusting posting is committed: the outbox sends it now
	}
	if err == nil && !out.Already {
		a.log.InfoContext(ctx, "adapter.drift_settled", "drift_id", driftID, "how", how, "drift", out.Drift.Drift,
			"posting_ref", out.Ref, "case_id", out.CaseID)
	}
	return out, err
}
