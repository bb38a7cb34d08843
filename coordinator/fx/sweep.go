package fx

import (
	"context"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
)

// SweepResult counts what one Sweep did.
type SweepResult struct {
	Refunded  int `json:"fx_refunded"`  // LOCKED transfers refunded (timelock or dead quote)
	Finalised int `json:"fx_finalised"` // conduit GTIDs whose legs all settled
}

// Sweep is FX's part of the timeout sweep (sweepExpiredFxLocks, 001
// §17.4): every LOCKED transfer (or INITIATED one never decided) that can
// no longer be claimed (its claim window closed, or a quote of its route
// expired or was withdrawn) is refunded, and every decided conduit whose leg transfers all SETTLED is
// finalised (legs LEG_SETTLED, GTID GT_SETTLED, FxTransfers SETTLED). A
// transfer claimed concurrently is left alone: the claim and the refund
// exclude each other by their guarded updates.
func (f *FX) Sweep(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	var locked, decided []string
	err := f.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		if locked, err = column(ctx, tx, `SELECT f.gtid FROM FxTransfers f JOIN GtidTransactions g ON g.gtid = f.gtid
			WHERE f.status = ? OR (f.status = ? AND g.state = ?) ORDER BY f.gtid`,
			string(TransferLocked), string(TransferInitiated), string(lane.GtReceived)); err != nil {
			return err
		}
		decided, err = column(ctx, tx, `SELECT f.gtid FROM FxTransfers f JOIN GtidTransactions g ON g.gtid = f.gtid
			WHERE f.status IN (?, ?) AND g.state IN (?, ?) ORDER BY f.gtid`, string(TransferSettling), string(TransferInitiated),
			string(lane.GtDecidedToSettle), string(lane.GtSettled))
		return err
	})
	if err != nil {
		return res, err
	}
	for _, g := range locked {
		r, err := f.refund(ctx, g, RefundTimelock, false)
		if de, ok := domainerr.As(err); ok && (de.Code == "STATE_GUARD" || de.Code == "CONCURRENCY_CONFLICT") {
			continue // still claimable, or claimed meanwhile
		}
		if err != nil {
			return res, err
		}
		if r.Status == TransferRefunded && len(r.RefundedLegs) > 0 {
			res.Refunded++
		}
	}
	for _, g := range decided {
		ok, err := f.Finalise(ctx, g)
		if err != nil {
			return res, err
		}
		if ok {
			res.Finalised++
		}
	}
	return res, nil
}

func column(ctx context.Context, tx *store.Tx, q string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("fx: sweep select: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("fx: sweep scan: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Finalise settles a decided conduit GTID whose leg transfers are all
// SETTLED: each GtidLegs row LEG_DECIDED -> LEG_SETTLED, the GTID
// GT_DECIDED_TO_SETTLE -> GT_SETTLED (GtidSettled on its chain) and the
// FX transfer -> SETTLED, in one write transaction (checkAndFinalizeGtid,
// 001 §17.3). It reports false when a leg has not settled yet. A leg
// whose transfer ended FAILED_EXECUTION suspends the GTID instead
// (GT_DECIDED_TO_SETTLE -> GT_SUSPENDED, GtidSuspended).
func (f *FX) Finalise(ctx context.Context, gtid string) (bool, error) {
	var done, suspended bool
	err := f.db.Write(ctx, func(tx *store.Tx) error {
		done, suspended = false, false
		t, err := getTransferTx(ctx, tx, gtid)
		if err != nil {
			return err
		}
		if t.Status != TransferSettling && t.Status != TransferInitiated {
			return nil
		}
		var failed []string
		pending := false
		for _, g := range t.Legs {
			if g.TxID == "" {
				return nil // not materialised
			}
			var st string
			if err := tx.QueryRowContext(ctx, `SELECT state FROM Transactions WHERE txid = ?`, g.TxID).Scan(&st); err != nil {
				return fmt.Errorf("fx: leg transfer %s: %w", g.TxID, err)
			}
			switch lane.TxState(st) {
			case lane.Settled:
			case lane.FailedExecution:
				if g.Role == lane.LegPayer {
					failed = append(failed, g.TxID)
				}
			default:
				pending = true
			}
		}
		if len(failed) > 0 {
			// A leg failed after the decision (its transfer carries the
			// Case): the conduit cannot settle as a whole. The GTID is
			// suspended for the operators; the FX transfer stays SETTLING.
			if t.GtidState != lane.GtDecidedToSettle {
				return nil
			}
			r, err := f.lanes.TransitionGtidInTx(ctx, tx, lane.GtidTransition{GTID: gtid, From: lane.GtDecidedToSettle, To: lane.GtSuspended,
				EventType: finality.GtidSuspended, Payload: map[string]any{"failed_leg_txids": failed}})
			if err != nil {
				return err
			}
			if r.Applied {
				suspended = true
			}
			return nil
		}
		if pending {
			return nil
		}
		for _, g := range t.Legs {
			if g.State == lane.LegSettled {
				continue
			}
			r, err := f.lanes.TransitionLegInTx(ctx, tx, lane.LegTransition{LegID: g.LegID, GTID: gtid, From: lane.LegDecided, To: lane.LegSettled})
			if err != nil {
				return err
			}
			if !r.Applied {
				return domainerr.New("CONCURRENCY_CONFLICT", "leg moved concurrently", map[string]any{"gtid": gtid, "leg_id": g.LegID})
			}
		}
		if t.GtidState == lane.GtDecidedToSettle {
			r, err := f.lanes.TransitionGtidInTx(ctx, tx, lane.GtidTransition{GTID: gtid, From: lane.GtDecidedToSettle, To: lane.GtSettled,
				EventType: finality.GtidSettled, Payload: map[string]any{"fx_status": string(TransferSettled),
					"amount_from": t.AmountFrom, "amount_to": t.AmountTo, "from_currency": t.FromCurrency, "to_currency": t.ToCurrency}})
			if err != nil {
				return err
			}
			if !r.Applied {
				return domainerr.New("CONCURRENCY_CONFLICT", "the GTID moved concurrently", map[string]any{"gtid": gtid})
			}
		}
		if err := moveTransfer(ctx, tx, gtid, t.Status, TransferSettled, f.now()); err != nil {
			return err
		}
		done = true
		return nil
	})
	if err == nil && done {
		f.log.InfoContext(ctx, "fx.transfer_settled", "gtid", gtid)
	}
	if err == nil && suspended {
		f.log.WarnContext(ctx, "fx.transfer_suspended", "gtid", gtid)
	}
	return done, err
}
