package orchestrator

import (
	"context"
	"database/sql"
	"errors"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

// Settlement venues (SettlementPositions.venue).
const (
	// VenueZC holds the coordinator's net positions of the immediate lanes
	// (EXPRESS, STANDARD), settled later by DNS.
	VenueZC = "ZC"
	// VenueBOJ is the simulated BOJ RTGS current account used by
	// HIGH_VALUE: it never goes negative.
	VenueBOJ = "BOJ"
)

// Position is one SettlementPositions row.
type Position struct {
	BankID, Venue, Currency string
	Balance                 int64
}

// position reads a bank's balance at a venue (0 when it has no row).
func (o *Orchestrator) position(ctx context.Context, bankID, venue, currency string) (bal int64, err error) {
	err = o.db.Read(ctx, func(tx *store.Tx) error {
		e := tx.QueryRowContext(ctx, `SELECT balance FROM SettlementPositions WHERE bank_id = ? AND venue = ? AND currency = ?`,
			bankID, venue, currency).Scan(&bal)
		if errors.Is(e, sql.ErrNoRows) {
			return nil
		}
		return wrapDB("read position", e)
	})
	return bal, err
}

// SetPosition sets a bank's balance at a venue (seeding a BOJ current
// account, or an operator correction). It passes the writable gate.
func (o *Orchestrator) SetPosition(ctx context.Context, bankID, venue, currency string, balance int64) error {
	if venue != VenueZC && venue != VenueBOJ {
		return domainerr.New("INVALID_REQUEST", "venue must be ZC or BOJ", map[string]any{"venue": venue})
	}
	if currency == "" {
		currency = "JPY"
	}
	now := clock.Stamp(o.clk.Now())
	return o.db.Write(ctx, func(tx *store.Tx) error {
		if err := (sysmode.Gate{}).CheckWritable(ctx, tx); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO SettlementPositions (bank_id, venue, currency, balance, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (bank_id, venue, currency) DO UPDATE SET balance = excluded.balance, updated_at = excluded.updated_at`,
			bankID, venue, currency, balance, now)
		return wrapDB("set position", err)
	})
}

// OpenPosition opens a bank's account at a venue with an opening balance,
// once: an account that exists keeps its balance (a restart must never
// reset what settlement has moved). It reports whether it opened one.
func (o *Orchestrator) OpenPosition(ctx context.Context, bankID, venue, currency string, opening int64) (opened bool, err error) {
	if venue != VenueZC && venue != VenueBOJ {
		return false, domainerr.New("INVALID_REQUEST", "venue must be ZC or BOJ", map[string]any{"venue": venue})
	}
	if currency == "" {
		currency = "JPY"
	}
	now := clock.Stamp(o.clk.Now())
	err = o.db.Write(ctx, func(tx *store.Tx) error {
		// An account that exists needs no write, so a node restarting in a
		// read-only mode is not refused here; opening one passes the gate.
		var one int
		switch err := tx.QueryRowContext(ctx, `SELECT 1 FROM SettlementPositions WHERE bank_id = ? AND venue = ? AND currency = ?`,
			bankID, venue, currency).Scan(&one); {
		case err == nil:
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return wrapDB("open position", err)
		}
		if err := (sysmode.Gate{}).CheckWritable(ctx, tx); err != nil {
			return err
		}
		opened, err = store.Applied(tx.ExecContext(ctx, `INSERT INTO SettlementPositions (bank_id, venue, currency, balance, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (bank_id, venue, currency) DO NOTHING`, bankID, venue, currency, opening, now))
		return wrapDB("open position", err)
	})
	return opened, err
}

// Positions lists every settlement position, by bank, venue and currency.
func (o *Orchestrator) Positions(ctx context.Context) (out []Position, err error) {
	err = o.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT bank_id, venue, currency, balance FROM SettlementPositions ORDER BY bank_id, venue, currency`)
		if err != nil {
			return wrapDB("positions", err)
		}
		defer rows.Close()
		for rows.Next() {
			var p Position
			if err := rows.Scan(&p.BankID, &p.Venue, &p.Currency, &p.Balance); err != nil {
				return wrapDB("positions", err)
			}
			out = append(out, p)
		}
		return rows.Err()
	})
	return out, err
}

var errVenueInsufficient = errors.New("venue: payer balance does not cover the amount")

// movePosition moves amount from payer to payee at venue inside tx. With
// guarded, the payer's debit is a guarded UPDATE (balance >= amount) and
// errVenueInsufficient is returned when it does not hold.
func movePosition(ctx context.Context, tx *store.Tx, venue, payer, payee, currency string, amount int64, now string, guarded bool) error {
	// UPDATE first: a position row is created (balance 0 plus the move)
	// only the first time a bank moves money at the venue.
	q := `UPDATE SettlementPositions SET balance = balance - ?, updated_at = ? WHERE bank_id = ? AND venue = ? AND currency = ?`
	args := []any{amount, now, payer, venue, currency}
	if guarded {
		q += ` AND balance >= ?`
		args = append(args, amount)
	}
	ok, err := store.Applied(tx.ExecContext(ctx, q, args...))
	if err != nil {
		return wrapDB("debit position", err)
	}
	if !ok {
		if guarded { // no row is a balance of 0, which covers no amount
			return errVenueInsufficient
		}
		if err := newPosition(ctx, tx, payer, venue, currency, -amount, now); err != nil {
			return err
		}
	}
	ok, err = store.Applied(tx.ExecContext(ctx, `UPDATE SettlementPositions SET balance = balance + ?, updated_at = ? WHERE bank_id = ? AND venue = ? AND currency = ?`,
		amount, now, payee, venue, currency))
	if err != nil {
		return wrapDB("credit position", err)
	}
	if !ok {
		return newPosition(ctx, tx, payee, venue, currency, amount, now)
	}
	return nil
}

func newPosition(ctx context.Context, tx *store.Tx, bank, venue, currency string, balance int64, now string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO SettlementPositions (bank_id, venue, currency, balance, updated_at)
		VALUES (?, ?, ?, ?, ?)`, bank, venue, currency, balance, now)
	return wrapDB("position row", err)
}

// requestVenue instructs the external settlement (ExtInstructionSent):
// custody moves ZC -> VENUE:BOJ atomically with
// external_settlement_status = 'REQUESTED' (spec 000 §5.2 handoff #3).
func (o *Orchestrator) requestVenue(ctx context.Context, r txRow) error {
	res, err := o.lanes.TransferOwnership(ctx, lane.Handoff{TxID: r.TxID, FromOwner: lane.OwnerZC, ToOwner: lane.OwnerVenueBOJ,
		SetColumns: map[string]any{"external_settlement_status": ExtRequested},
		Payload:    map[string]any{"instruction": "ExtInstructionSent", "venue": VenueBOJ, "amount": r.amount()}})
	if err == nil && res.Applied {
		o.log.InfoContext(ctx, "orchestrator.venue_requested", "txid", r.TxID, "venue", VenueBOJ)
	}
	return err
}

// RunVenue is the simulated BOJ RTGS: it settles every transfer it holds
// (owner VENUE:BOJ, external_settlement_status REQUESTED) by moving the
// payer's BOJ balance to the payee in the same commit as the handback
// VENUE:BOJ -> ZC (status SETTLED). A payer whose BOJ balance does not
// cover the amount gets IGS_FAILED: the venue suspends the transfer
// (custody returns to ZC). Each handed-back transfer is requeued. It
// returns how many transfers it settled.
func (o *Orchestrator) RunVenue(ctx context.Context) (int, error) {
	var ids []string
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT txid FROM Transactions WHERE owner = ? AND external_settlement_status = ? ORDER BY created_at`,
			lane.OwnerVenueBOJ, ExtRequested)
		if err != nil {
			return wrapDB("venue select", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return wrapDB("venue scan", err)
			}
			ids = append(ids, id)
		}
		return rows.Err()
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		ok, err := o.venueSettle(ctx, id, true)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// venueSettle settles one transfer at the venue; requeue queues its DRIVE
// item (not needed when the worker driving it called the venue inline).
func (o *Orchestrator) venueSettle(ctx context.Context, txid string, requeue bool) (bool, error) {
	settled := false
	now := o.clk.Now()
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		r, err := readTx(ctx, tx, txid)
		if err != nil {
			return err
		}
		if r.Owner != lane.OwnerVenueBOJ || r.ExtStatus != ExtRequested {
			return nil
		}
		err = movePosition(ctx, tx, VenueBOJ, r.PayerBank, r.PayeeBank, r.Currency, r.Amount, clock.Stamp(now), true)
		switch {
		case errors.Is(err, errVenueInsufficient):
			if _, err := o.lanes.SuspendInTx(ctx, tx, lane.Suspend{TxID: txid, From: r.State, To: lane.Suspended, Issuer: lane.OwnerVenueBOJ,
				ReasonCode: ReasonIGSFailed, SetColumns: map[string]any{"external_settlement_status": ExtFailed},
				Payload: map[string]any{"venue": VenueBOJ}}); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			res, err := o.lanes.TransferOwnershipInTx(ctx, tx, lane.Handoff{TxID: txid, FromOwner: lane.OwnerVenueBOJ, ToOwner: lane.OwnerZC,
				EventType: finality.OwnershipTransferred, SetColumns: map[string]any{"external_settlement_status": ExtSettled},
				Payload: map[string]any{"venue": VenueBOJ, "external_settlement_status": ExtSettled, "amount": r.amount()}})
			if err != nil {
				return err
			}
			settled = res.Applied
		}
		if !requeue {
			return nil
		}
		return o.enqueue(ctx, tx, KindDrive, txid, r.Lane, StatusReady, now)
	})
	if err == nil && settled {
		o.log.InfoContext(ctx, "orchestrator.venue_settled", "txid", txid, "venue", VenueBOJ)
	}
	return settled, err
}
