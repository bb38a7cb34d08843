package lane

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// LegTx is the transfer that carries some of a decided GTID's legs (spec
// 003 GtidLegs.txid "DECIDED後に確定": a leg's txid exists only after the
// GT-level decision).
type LegTx struct {
	GTID string
	// LegIDs are the legs the transfer carries (a PAYER leg and the PAYEE
	// leg paired with it). Each must belong to GTID and be in LegFrom;
	// each moves to LEG_DECIDED with its txid set, in the same transaction.
	LegIDs []string
	// LegFrom is the state the legs must be in; "" means LEG_READY.
	LegFrom LegState
	// Tx is the Transactions row: Lane "" means GTID, State "" means
	// DECIDED_TO_SETTLE (the only entry state a GTID leg may use), and
	// EventType "" means DecidedToSettle. The payload gains gtid and
	// leg_ids.
	Tx NewTx
}

// MaterialiseLegTxWithLog runs m in its own write transaction.
func (l *Lanes) MaterialiseLegTxWithLog(ctx context.Context, m LegTx) (InsertResult, error) {
	var res InsertResult
	err := l.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		res, err = l.MaterialiseLegTxInTx(ctx, tx, m)
		return err
	})
	if err != nil {
		return InsertResult{}, err
	}
	return res, nil
}

// MaterialiseLegTxInTx creates the transfer of m inside the caller's write
// transaction, through InsertTxInTx (entry state DECIDED_TO_SETTLE, lane
// GTID), and links its legs with guarded leg updates. The GTID must be at
// GT_DECIDED_TO_SETTLE (INVALID_STATE otherwise). A txid that exists
// already is not an error: Inserted is false and no leg moves. A leg not
// in LegFrom is CONCURRENCY_CONFLICT, and the caller's transaction must
// roll back (store.DB.Write does): no transfer without all its legs.
func (l *Lanes) MaterialiseLegTxInTx(ctx context.Context, tx *store.Tx, m LegTx) (InsertResult, error) {
	if m.GTID == "" {
		return InsertResult{}, missing("gtid")
	}
	if len(m.LegIDs) == 0 {
		return InsertResult{}, missing("leg_ids")
	}
	if m.LegFrom == "" {
		m.LegFrom = LegReady
	}
	n := m.Tx
	if n.Lane == "" {
		n.Lane = "GTID"
	}
	if n.State == "" {
		n.State = DecidedToSettle
	}
	if n.EventType == "" {
		n.EventType = finality.DecidedToSettle
	}
	n.Payload = withFields(n.Payload, map[string]any{"gtid": m.GTID, "leg_ids": m.LegIDs})
	var gstate string
	err := tx.QueryRowContext(ctx, "SELECT state FROM GtidTransactions WHERE gtid = ?"+tx.ForUpdate(), m.GTID).Scan(&gstate)
	if errors.Is(err, sql.ErrNoRows) {
		return InsertResult{}, domainerr.New("GTID_NOT_FOUND", "GTID not found", map[string]any{"gtid": m.GTID})
	}
	if err != nil {
		return InsertResult{}, fmt.Errorf("lane: read %s: %w", m.GTID, err)
	}
	if GtidState(gstate) != GtDecidedToSettle {
		return InsertResult{}, domainerr.New("INVALID_STATE", "a leg's transfer is materialised only after GT_DECIDED_TO_SETTLE",
			map[string]any{"gtid": m.GTID, "state": gstate})
	}
	res, err := l.InsertTxInTx(ctx, tx, n)
	if err != nil || !res.Inserted {
		return res, err
	}
	for _, id := range m.LegIDs {
		lr, err := l.TransitionLegInTx(ctx, tx, LegTransition{LegID: id, GTID: m.GTID, From: m.LegFrom, To: LegDecided, TxID: n.TxID})
		if err != nil {
			return InsertResult{}, err
		}
		if !lr.Applied {
			return InsertResult{}, domainerr.New("CONCURRENCY_CONFLICT", "leg is no longer in the state the decision read",
				map[string]any{"gtid": m.GTID, "leg_id": id, "want": string(m.LegFrom), "state": string(lr.State)})
		}
	}
	return res, nil
}
