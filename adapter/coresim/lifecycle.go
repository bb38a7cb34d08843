package coresim

import (
	"context"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/formats/coreacct"
)

// The account lifecycle actions of coremsg ACMQ.
const (
	MaintOpen = "O" // open with a holder name, balance 0
	MaintHold = "H" // closing hold (解約保留): credits refused, debits allowed
	MaintLift = "N" // lift the closing hold
	MaintShut = "C" // close: balance 0 and no active hold
)

// ReasonNotOnHold refuses a close of an account not on closing hold.
const ReasonNotOnHold = "NOHOLD"

// MaintOut is the core's answer to a lifecycle action. Duplicate: the
// account already was in the state the action assigns (nothing changed).
type MaintOut struct {
	Applied, Duplicate bool
	ReasonCode         string
	Status             string // OPEN, CLOSING_HOLD, CLOSED or "" (no account)
	Balance, Held      int64
}

// statusCode is the coremsg account status (BALR, ACMR) of a status.
func statusCode(status string) string {
	switch status {
	case StatusOpen:
		return "N"
	case StatusClosingHold:
		return "H"
	case StatusClosed:
		return "C"
	}
	return "X"
}

// maintain performs one lifecycle action inside tx. Every action assigns
// a state, so repeating one whose state is already in effect answers
// Duplicate and changes nothing: that is what makes a resend of an
// ACMQ whose reply was lost harmless, where a resent posting is applied
// twice (package doc).
func (c *Core) maintain(ctx context.Context, tx *store.Tx, action, account, name string) (MaintOut, error) {
	b, err := c.balance(ctx, tx, account)
	if err != nil {
		return MaintOut{}, err
	}
	out := MaintOut{Balance: b.Balance, Held: b.Held}
	if b.Found {
		out.Status = b.Status
	}
	now := clock.Stamp(c.clk.Now())
	set := func(q string, args ...any) (MaintOut, error) {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return MaintOut{}, fmt.Errorf("coresim: %s account %s: %w", action, coreacct.Mask(account), err)
		}
		out.Applied = true
		return out, nil
	}
	refuse := func(reason string) (MaintOut, error) { out.ReasonCode = reason; return out, nil }
	dup := func() (MaintOut, error) { out.Applied, out.Duplicate = true, true; return out, nil }
	switch action {
	case MaintOpen:
		if b.Found {
			if b.Status == StatusOpen && kanaKey(b.Name) == kanaKey(name) {
				return dup()
			}
			return refuse(ReasonAccountExists)
		}
		if _, err := coreacct.Parse(account); err != nil {
			return refuse(ReasonInvalidRequest)
		}
		out.Status = StatusOpen
		return set(`INSERT INTO CoreAccounts (account, name, balance, opened_at, updated_at) VALUES (?, ?, 0, ?, ?)`,
			account, name, now, now)
	case MaintHold, MaintLift, MaintShut:
	default:
		return refuse(ReasonInvalidRequest)
	}
	switch {
	case !b.Found:
		return refuse(ReasonAccountNotFound)
	case b.Status == StatusClosed && action == MaintShut:
		return dup()
	case b.Status == StatusClosed:
		return refuse(ReasonAccountClosed)
	}
	switch action {
	case MaintHold:
		if b.Status == StatusClosingHold {
			return dup()
		}
		out.Status = StatusClosingHold
		return set(`UPDATE CoreAccounts SET closing_hold = 1, updated_at = ? WHERE account = ? AND status = 'OPEN'`, now, account)
	case MaintLift:
		if b.Status == StatusOpen {
			return dup()
		}
		out.Status = StatusOpen
		return set(`UPDATE CoreAccounts SET closing_hold = 0, updated_at = ? WHERE account = ? AND status = 'OPEN'`, now, account)
	}
	if b.Status != StatusClosingHold {
		return refuse(ReasonNotOnHold)
	}
	if b.Balance != 0 || b.Held != 0 {
		return refuse(ReasonBalanceNotZero)
	}
	out.Status = StatusClosed
	return set(`UPDATE CoreAccounts SET status = 'CLOSED', closing_hold = 0, updated_at = ? WHERE account = ? AND balance = 0`, now, account)
}

// Maintain performs a lifecycle action in its own transaction (tests and
// tools; the adapter sends ACMQ over the core link).
func (c *Core) Maintain(ctx context.Context, action, account, name string) (MaintOut, error) {
	var out MaintOut
	err := c.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		out, err = c.maintain(ctx, tx, action, account, name)
		return err
	})
	return out, err
}

// addClosingHold adds CoreAccounts.closing_hold to a core database made
// before the account lifecycle (existing accounts: not on hold).
func addClosingHold(ctx context.Context, db *store.DB) error {
	return store.AddColumn(ctx, db, "CoreAccounts", "closing_hold", "INTEGER NOT NULL DEFAULT 0 CHECK (closing_hold IN (0, 1))")
}
