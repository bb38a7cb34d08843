package orchestrator

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/mandate"
	"github.com/zcgw/zcgw/coordinator/store"
)

// mandateReasons maps a mandate refusal to the state reason code written.
var mandateReasons = map[string]string{
	"MANDATE_NOT_FOUND": ReasonMandateNotFound,
	"MANDATE_REVOKED":   ReasonMandateRevoked,
	"MANDATE_EXPIRED":   ReasonMandateExpired,
	"MANDATE_BREACH":    ReasonMandateBreach,
}

// checkMandate is the precheck of a transfer sent under a mandate
// (Transactions.mandate_id; spec 000 §11.2-e): the mandate's chain is
// checked at now against the transfer's payer, amount, purpose and lane.
// A transfer without a mandate gets (nil, false). An allowed one gets the
// verdict, which precheck records in its PreCheckPassed entry. A refused
// one is cancelled here, in one commit: RECEIVED -> DECIDED_CANCEL with a
// PreCheckFailed entry carrying the verdict and the MANDATE_* reason code
// (H and the daily total given back by the cancel primitive), then
// CANCELLED; nothing was sent to a bank, so nothing moved.
//
// The stored request (r.RequestJSON, the PaymentInitiated as accepted,
// mandate_id omitted when empty) is the prefilter, so a transfer without a
// mandate costs no statement here; Transactions.mandate_id decides.
func (o *Orchestrator) checkMandate(ctx context.Context, r txRow, now time.Time) (verdict *mandate.Verdict, refused bool, err error) {
	if !strings.Contains(r.RequestJSON, `"mandate_id":`) {
		return nil, false, nil
	}
	var v mandate.Verdict
	var cited bool
	err = o.db.Read(ctx, func(tx *store.Tx) error {
		var id, purpose sql.NullString
		if err := tx.QueryRowContext(ctx, `SELECT mandate_id, purpose FROM Transactions WHERE txid = ?`, r.TxID).Scan(&id, &purpose); err != nil {
			return wrapDB("read the transfer's mandate", err)
		}
		if cited = id.Valid && id.String != ""; !cited {
			return nil
		}
		var err error
		v, err = mandate.CheckTx(ctx, tx, mandate.Request{MandateID: id.String, PayerBankID: r.PayerBank, Amount: r.Amount,
			Purpose: purpose.String, Lane: r.Lane}, now)
		return err
	})
	if err != nil || !cited {
		return nil, false, err
	}
	if v.Allowed {
		return &v, false, nil
	}
	reason := mandateReasons[v.ReasonCode]
	err = o.commit(ctx, func(tx *store.Tx) error {
		res, err := o.lanes.CancelInTx(ctx, tx, lane.Cancel{TxID: r.TxID, ReasonCode: reason, FromStates: []lane.TxState{lane.Received},
			EventType: finality.PreCheckFailed, Payload: map[string]any{"mandate": v}})
		if err != nil {
			return err
		}
		if !res.Applied {
			return errConflict
		}
		return o.applyInTx(ctx, tx, lane.Transition{TxID: r.TxID, From: lane.DecidedCancel, To: lane.Cancelled,
			EventType: finality.Cancelled, Payload: map[string]any{"reason_code": reason}})
	})
	if err == nil {
		o.log.InfoContext(ctx, "orchestrator.mandate_refused", "txid", r.TxID, "reason_code", reason, "why", v.Why)
	}
	return &v, true, err
}
