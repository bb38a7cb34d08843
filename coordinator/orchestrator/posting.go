package orchestrator

import (
	"context"
	"database/sql"
	"errors"
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
	res, err := o.RecordCorePostings(ctx, []CorePosting{p})
	if err != nil {
		return false, err
	}
	return res[0].Recorded, res[0].Err
}

// CorePostingResult is the outcome of one report of RecordCorePostings.
type CorePostingResult struct {
	// Recorded is false for a report already on the chain (same ref and
	// status) and for a refused one.
	Recorded bool
	// Err refuses this report alone (INVALID_REQUEST, TX_NOT_FOUND, a
	// chain error); the batch's other reports are unaffected.
	Err error
}

// RecordCorePostings is RecordCorePosting for a batch of reports in one
// write transaction (one commit, shared with concurrent writers): each
// report runs in its own savepoint, so a refused one leaves its
// neighbours recorded. The result has one entry per report, in order.
// The error is for the batch as a whole (the writable gate, the commit):
// then nothing was recorded.
func (o *Orchestrator) RecordCorePostings(ctx context.Context, ps []CorePosting) ([]CorePostingResult, error) {
	out := make([]CorePostingResult, len(ps))
	todo := make([]int, 0, len(ps))
	for i, p := range ps {
		if out[i].Err = checkCorePosting(p); out[i].Err == nil {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return out, nil
	}
	alone := len(todo) == 1
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		if err := (sysmode.Gate{}).CheckWritable(ctx, tx); err != nil {
			return err
		}
		for _, i := range todo {
			out[i] = CorePostingResult{}
			if alone { // the whole transaction is this report's: no savepoint
				rec, err := o.recordCorePostingTx(ctx, tx, ps[i])
				out[i] = CorePostingResult{Recorded: rec, Err: err}
				continue
			}
			if _, err := tx.ExecContext(ctx, "SAVEPOINT core_posting"); err != nil {
				return wrapDB("core posting savepoint", err)
			}
			rec, err := o.recordCorePostingTx(ctx, tx, ps[i])
			if err != nil {
				if _, rbErr := tx.ExecContext(ctx, "ROLLBACK TO core_posting"); rbErr != nil {
					return wrapDB("core posting rollback", rbErr)
				}
			}
			if _, relErr := tx.ExecContext(ctx, "RELEASE core_posting"); relErr != nil {
				return wrapDB("core posting release", relErr)
			}
			out[i] = CorePostingResult{Recorded: rec, Err: err}
		}
		if alone && out[todo[0]].Err != nil {
			return out[todo[0]].Err
		}
		return nil
	})
	if err != nil {
		if alone && out[todo[0]].Err != nil {
			return out, nil // the report's own refusal
		}
		for i := range out {
			out[i].Recorded = false
		}
		return out, err
	}
	for _, i := range todo {
		if p := ps[i]; out[i].Recorded {
			o.log.InfoContext(ctx, "transfer.core_posting_recorded", "txid", p.TxID, "bank_id", p.BankID, "kind", p.Kind,
				"status", p.Status, "ref", p.Ref)
		}
	}
	return out, nil
}

func checkCorePosting(p CorePosting) error {
	_, ok := corePostingEvent[p.Status]
	switch {
	case !ok:
		return domainerr.New("INVALID_REQUEST", "core posting status must be APPLIED or BLOCKED", map[string]any{"field": "status", "status": p.Status})
	case !corePostingKinds[p.Kind]:
		return domainerr.New("INVALID_REQUEST", "core posting kind must be DEBIT, CREDIT or REVERSAL", map[string]any{"field": "kind", "kind": p.Kind})
	case p.TxID == "" || p.Ref == "" || p.BankID == "":
		return domainerr.New("INVALID_REQUEST", "core posting needs txid, bank_id and ref", map[string]any{"field": "txid|bank_id|ref", "ref": p.Ref})
	}
	return nil
}

// recordCorePostingTx records one checked report inside tx: the state
// alone is read (not the whole transfer row), in the same statement as
// whether the chain already holds the same ref and status (a repeat).
func (o *Orchestrator) recordCorePostingTx(ctx context.Context, tx *store.Tx, p CorePosting) (bool, error) {
	typ := corePostingEvent[p.Status]
	var state string
	var seen bool
	err := tx.QueryRowContext(ctx, `SELECT t.state, EXISTS (SELECT 1 FROM FinalityLog f WHERE f.txid = t.txid AND f.event_type = ?
		AND json_extract(f.payload_json, '$.ref') = ?) FROM Transactions t WHERE t.txid = ?`, string(typ), p.Ref, p.TxID).Scan(&state, &seen)
	if errors.Is(err, sql.ErrNoRows) {
		return false, domainerr.New("TX_NOT_FOUND", "transaction not found", map[string]any{"txid": p.TxID})
	}
	if err != nil {
		return false, wrapDB("core posting state", err)
	}
	if seen {
		return false, nil
	}
	e, err := o.flog.Append(ctx, tx, finality.Event{TxID: p.TxID, Type: typ, StateFrom: state, StateTo: state, Payload: p})
	if err != nil {
		return false, fmt.Errorf("orchestrator: record core posting %s of %s: %w", p.Ref, p.TxID, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE Transactions SET updated_at = ? WHERE txid = ? AND updated_at < ?`,
		e.OccurredAt, p.TxID, e.OccurredAt); err != nil {
		return false, wrapDB("core posting touch", err)
	}
	return true, nil
}
