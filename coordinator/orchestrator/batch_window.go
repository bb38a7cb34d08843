package orchestrator

import (
	"context"
	"database/sql"
	"errors"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// This file (issue 6, jobs/batchwindow) is the orchestrator's entry point
// for BULK/DEFERRED transfers that a batch window accepted.

// BatchReservationID is the id of the H reservation that both the batch
// window (at acceptance) and the reserve step of the drive use for txid, so
// that the drive's ReserveH replays the window's reservation instead of
// charging H twice.
func BatchReservationID(txid string) string { return "H-" + txid }

// AcceptBatchInTx continues a BULK/DEFERRED transfer whose H the batch
// window has just reserved (under BatchReservationID), inside the window's
// write transaction: the transfer's BATCH item leaves WAITING (DONE) and
// its DRIVE item becomes due now, so a worker drives it from RECEIVED along
// its lane like any other transfer. When the drive reaches the reserve step
// its ReserveH of "H-<txid>" returns the window's reservation unchanged.
//
// It returns TX_NOT_FOUND for an unknown txid and INVALID_STATE when the
// transfer is not a BULK/DEFERRED transfer waiting for its window (no
// WAITING BATCH item), so a window can never start a transfer twice.
func (o *Orchestrator) AcceptBatchInTx(ctx context.Context, tx *store.Tx, txid string) error {
	var laneName string
	err := tx.QueryRowContext(ctx, `SELECT lane FROM Transactions WHERE txid = ?`, txid).Scan(&laneName)
	if errors.Is(err, sql.ErrNoRows) {
		return domainerr.New("TX_NOT_FOUND", "no such transaction", map[string]any{"txid": txid})
	}
	if err != nil {
		return wrapDB("accept batch: read", err)
	}
	now := o.clk.Now()
	stamp := clock.Stamp(now)
	ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE OrchestratorQueue SET status = 'DONE', updated_at = ?
		WHERE item_id = ? AND status = 'WAITING'`, stamp, itemID(KindBatch, txid)))
	if err != nil {
		return wrapDB("accept batch: retire batch item", err)
	}
	if !ok {
		return domainerr.New("INVALID_STATE", "transfer is not waiting for a batch window", map[string]any{"txid": txid, "lane": laneName})
	}
	if err := o.enqueue(ctx, tx, KindDrive, txid, laneName, StatusReady, now); err != nil {
		return err
	}
	o.log.InfoContext(ctx, "orchestrator.batch_accepted", "txid", txid, "lane", laneName, "reservation_id", BatchReservationID(txid))
	return nil
}
