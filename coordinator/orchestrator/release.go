package orchestrator

import (
	"context"
	"database/sql"
	"errors"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// KindRelease is the work item that gives a paying bank's hold back: a
// transfer decided never to be debited (an FX leg refunded before its
// claim) has its release-reserve decided in the commit that cancels it,
// and this item sends it until the bank answers. A bank not reached (or
// answering DOWNSTREAM/TIMEOUT) is retried by the queue's policy with its
// backoff, across restarts: the hold is never left to the bank.
const KindRelease = "RELEASE"

// ReleaseHoldInTx decides, inside the caller's transaction, that the hold
// reservationRef which the paying bank keeps under txid is released: the
// release-reserve body is recorded under its request_id
// (OrchestratorRequests, TX:{txid}:release-reserve:ZC) and a RELEASE work
// item is queued. The bank is the one whose H txid reserved
// (HReservations.bank_id: the paying bank, which placed the hold), so the
// caller must have reserved H for txid. laneName is the transfer's lane
// (OrchestratorQueue.lane).
func (o *Orchestrator) ReleaseHoldInTx(ctx context.Context, tx *store.Tx, laneName, txid, reservationRef string) error {
	if txid == "" || reservationRef == "" {
		return domainerr.New("MISSING_FIELD", "a hold release needs the txid and the reservation_ref",
			map[string]any{"txid": txid, "reservation_ref": reservationRef})
	}
	if _, err := holdBankTx(ctx, tx, txid); err != nil {
		return err
	}
	now := o.clk.Now()
	req := &bankapi.ReleaseReserveRequest{RequestIDValue: requestID(txid, bankapi.ReleaseReserve), TxID: txid, ReservationRef: reservationRef}
	if err := recordRequestInTx(ctx, tx, txid, req, now); err != nil {
		return err
	}
	return o.enqueue(ctx, tx, KindRelease, txid, laneName, StatusReady, now)
}

// holdBankTx is the bank that holds txid's reservation: the bank whose H
// the transfer reserved.
func holdBankTx(ctx context.Context, tx *store.Tx, txid string) (string, error) {
	var bank string
	err := tx.QueryRowContext(ctx, `SELECT bank_id FROM HReservations WHERE txid = ? ORDER BY created_at LIMIT 1`, txid).Scan(&bank)
	if errors.Is(err, sql.ErrNoRows) {
		return "", domainerr.New("INVARIANT_VIOLATION", "no H reservation names the bank holding the transfer's hold",
			map[string]any{"txid": txid})
	}
	return bank, wrapDB("read hold bank", err)
}

// releaseStep runs a RELEASE item: the recorded release-reserve is sent
// (byte for byte the same body each attempt, so the bank replays). RELEASED,
// or TX_NOT_FOUND (the bank holds nothing for the txid), ends it; any
// other error goes to the queue's policy (retried when retryable).
func (o *Orchestrator) releaseStep(ctx context.Context, txid string) error {
	got, err := o.recordedRequest(ctx, bankapi.ReleaseReserve, requestID(txid, bankapi.ReleaseReserve))
	if err != nil {
		return err
	}
	if got == nil {
		return domainerr.New("INVARIANT_VIOLATION", "a RELEASE item without its recorded release-reserve", map[string]any{"txid": txid})
	}
	var bank string
	if err := o.db.Read(ctx, func(tx *store.Tx) (err error) {
		bank, err = holdBankTx(ctx, tx, txid)
		return err
	}); err != nil {
		return err
	}
	var resp bankapi.ReleaseReserveResponse
	err = o.banks.Call(ctx, bank, got, &resp)
	switch {
	case err == nil:
		o.log.InfoContext(ctx, "orchestrator.hold_released", "txid", txid, "bank_id", bank, "reservation_ref", resp.ReservationRef)
		return nil
	case domainerr.Has(err, "TX_NOT_FOUND"):
		o.log.InfoContext(ctx, "orchestrator.hold_absent", "txid", txid, "bank_id", bank)
		return nil
	}
	o.log.WarnContext(ctx, "orchestrator.hold_release_failed", "txid", txid, "bank_id", bank, "error", err.Error())
	return err
}
