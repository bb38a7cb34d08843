package orchestrator

import (
	"context"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

// CorePosting is a bank's report that one posting of a transfer reached a
// final status at its core: APPLIED (landed) or BLOCKED (the core refused
// it). The adapter's outbox sends it through a port the node assembles;
// the coordinator never reads the outbox.
type CorePosting struct {
	TxID       string `json:"txid"`
	BankID     string `json:"bank_id"`
	Kind       string `json:"kind"` // DEBIT | CREDIT | REVERSAL
	Ref        string `json:"ref"`  // the posting's reference at the bank
	Amount     int64  `json:"amount"`
	Status     string `json:"status"` // APPLIED | BLOCKED
	CoreRef    string `json:"core_ref,omitempty"`
	ReasonCode string `json:"reason_code,omitempty"`
	CaseID     string `json:"case_id,omitempty"`
}

// The final statuses a CorePosting reports.
const (
	CorePostingApplied = "APPLIED"
	CorePostingBlocked = "BLOCKED"
)

var corePostingEvent = map[string]finality.EventType{
	CorePostingApplied: finality.CorePostingApplied,
	CorePostingBlocked: finality.CorePostingBlocked,
}

var corePostingKinds = map[string]bool{"DEBIT": true, "CREDIT": true, "REVERSAL": true}

// RecordCorePosting appends the report to the transfer's chain as a
// CorePostingApplied or CorePostingBlocked event (state unchanged) and
// touches the Transactions row's updated_at, so the read model has seen
// the entry and freshness stays true; one write transaction behind the
// writable gate. A report already recorded for the same posting ref and
// status writes nothing and returns false: the bank repeats a report whose
// acknowledgement it lost. An unknown txid is TX_NOT_FOUND.
func (o *Orchestrator) RecordCorePosting(ctx context.Context, p CorePosting) (recorded bool, err error) {
	typ, ok := corePostingEvent[p.Status]
	switch {
	case !ok:
		return false, domainerr.New("INVALID_REQUEST", "core posting status must be APPLIED or BLOCKED", map[string]any{"field": "status", "status": p.Status})
	case !corePostingKinds[p.Kind]:
		return false, domainerr.New("INVALID_REQUEST", "core posting kind must be DEBIT, CREDIT or REVERSAL", map[string]any{"field": "kind", "kind": p.Kind})
	case p.TxID == "" || p.Ref == "" || p.BankID == "":
		return false, domainerr.New("INVALID_REQUEST", "core posting needs txid, bank_id and ref", map[string]any{"field": "txid|bank_id|ref", "ref": p.Ref})
	}
	err = o.db.Write(ctx, func(tx *store.Tx) error {
		if err := (sysmode.Gate{}).CheckWritable(ctx, tx); err != nil {
			return err
		}
		r, err := readTx(ctx, tx, p.TxID)
		if err != nil {
			return err
		}
		var seen int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = ?
			AND json_extract(payload_json, '$.ref') = ?`, p.TxID, string(typ), p.Ref).Scan(&seen); err != nil {
			return wrapDB("core posting seen", err)
		}
		if seen > 0 {
			return nil
		}
		e, err := o.flog.Append(ctx, tx, finality.Event{TxID: p.TxID, Type: typ, StateFrom: string(r.State), StateTo: string(r.State), Payload: p})
		if err != nil {
			return fmt.Errorf("orchestrator: record core posting %s of %s: %w", p.Ref, p.TxID, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE Transactions SET updated_at = ? WHERE txid = ? AND updated_at < ?`,
			e.OccurredAt, p.TxID, e.OccurredAt); err != nil {
			return wrapDB("core posting touch", err)
		}
		recorded = true
		return nil
	})
	if err != nil {
		return false, err
	}
	if recorded {
		o.log.InfoContext(ctx, "transfer.core_posting_recorded", "txid", p.TxID, "bank_id", p.BankID, "kind", p.Kind,
			"status", p.Status, "ref", p.Ref)
	}
	return recorded, nil
}
