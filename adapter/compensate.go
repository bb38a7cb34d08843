package adapter

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox"
)

// CompensateRequest asks the payer bank to undo the debit of a transfer
// whose downstream leg failed (spec 001 §18.2 #4). The wire type is
// declared once in coordinator/bankapi (the zcgw extension command
// "compensate", served by Dispatch like the 13).
type CompensateRequest = bankapi.CompensateRequest

// CompensateResponse lists the reversal postings queued.
type CompensateResponse = bankapi.CompensateResponse

// Compensate queues, for every debit of txid not yet reversed, a REVERSAL
// posting linked to it by txid and reversal_of, in one transaction with
// the idempotency completion; the payer's net effect is zero once the
// outbox drains (the core applies the debit first: postings of one
// account keep their order). It refuses (STATE_GUARD) after debit-settled,
// and while a debit is BLOCKED (that posting never reached the core; its
// Case decides).
func (a *Adapter) Compensate(ctx context.Context, req CompensateRequest) (CompensateResponse, error) {
	if err := req.Validate(); err != nil {
		return CompensateResponse{}, err
	}
	return once(ctx, a, string(bankapi.Compensate), req.RequestIDValue, req, func(tx *store.Tx) (CompensateResponse, error) {
		var settled int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM AdapterAuditLog WHERE event = 'DEBIT_SETTLED' AND txid = ?`, req.TxID).
			Scan(&settled); err != nil {
			return CompensateResponse{}, fmt.Errorf("adapter: compensate %s: %w", req.TxID, err)
		}
		if settled > 0 {
			return CompensateResponse{}, domainerr.New("STATE_GUARD", "transfer already settled end to end; it cannot be compensated",
				map[string]any{"txid": req.TxID})
		}
		type debit struct {
			ref, hash, status string
			amount            int64
		}
		var debits []debit
		rows, err := tx.QueryContext(ctx, `SELECT p.ref, p.account_hash, p.amount, o.status FROM AdapterPostings p
			JOIN AdapterOutbox o ON o.ref = p.ref
			WHERE p.txid = ? AND p.kind = 'DEBIT'
			  AND NOT EXISTS (SELECT 1 FROM AdapterPostings r WHERE r.reversal_of = p.ref)
			ORDER BY p.created_at`, req.TxID)
		if err != nil {
			return CompensateResponse{}, fmt.Errorf("adapter: compensate %s: %w", req.TxID, err)
		}
		for rows.Next() {
			var d debit
			if err := rows.Scan(&d.ref, &d.hash, &d.amount, &d.status); err != nil {
				rows.Close()
				return CompensateResponse{}, err
			}
			debits = append(debits, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return CompensateResponse{}, err
		}
		if len(debits) == 0 {
			var reversed int
			_ = tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM AdapterPostings WHERE txid = ? AND kind = 'REVERSAL'`, req.TxID).Scan(&reversed)
			if reversed > 0 {
				return CompensateResponse{}, domainerr.New("ALREADY_PROCESSED", "every debit of this txid is already reversed",
					map[string]any{"txid": req.TxID})
			}
			return CompensateResponse{}, domainerr.New("TX_NOT_FOUND", "no debit for this txid at this bank", map[string]any{"txid": req.TxID})
		}
		resp := CompensateResponse{Result: bankapi.ResultReversed, TxID: req.TxID}
		for _, d := range debits {
			if d.status == string(outbox.Blocked) || d.status == string(outbox.WrittenOff) {
				return CompensateResponse{}, domainerr.New("STATE_GUARD", "the debit never reached the core (blocked or written off); its Case decides",
					map[string]any{"txid": req.TxID, "ref": d.ref, "status": d.status})
			}
			s, err := readShadow(ctx, tx, d.hash)
			if err != nil {
				return CompensateResponse{}, err
			}
			ref, err := a.queuePosting(ctx, tx, s, req.TxID, req.RequestIDValue, "", outbox.Reversal, 1, d.amount, d.ref)
			if err != nil {
				return CompensateResponse{}, err
			}
			resp.Reversals = append(resp.Reversals, ref)
		}
		payload, _ := json.Marshal(map[string]any{"reason": req.Reason, "reversals": resp.Reversals})
		if err := a.audit(ctx, tx, "COMPENSATED", req.TxID, req.RequestIDValue, string(payload)); err != nil {
			return CompensateResponse{}, err
		}
		return resp, nil
	})
}
