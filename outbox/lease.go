package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/store"
)

// The drain lease: which process drains this outbox now. An outbox
// database is one bank's, so this is the "one node at a time per bank"
// of several nodes on one shared database (docs/storage.md "Several
// nodes"). It is not what makes a posting go to the core once — that is
// the posting claim (CAS + token, fenced outcomes), which holds with or
// without the lease — it keeps the other nodes from contending for the
// same account heads and keeps one bank's traffic on one core link.
//
// The row is moved only by guarded UPDATEs (on holder and token), so of N
// racing acquirers on any number of handles exactly one holds it. Expiry
// is measured on the outbox's injectable clock.

// drainLeaseName is the lease row of an outbox's Run.
const drainLeaseName = "drain"

// DefaultDrainLease is how long a drain lease lasts without renewal: how
// long a SIGKILLed holder keeps the bank from the other nodes. Run renews
// it every third of that.
const DefaultDrainLease = 10 * time.Second

// DrainLease is a held drain lease.
type DrainLease struct {
	Holder string
	Token  int64
	Until  time.Time
}

// LeaseHeldError says who holds the drain lease, and until when.
type LeaseHeldError struct {
	Holder string
	Until  time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("outbox: drain lease held by %s until %s", e.Holder, clock.Stamp(e.Until))
}

// ErrDrainLeaseLost is returned by RenewDrainLease when another holder
// took the lease over.
var ErrDrainLeaseLost = errors.New("outbox: drain lease taken over by another holder")

// AcquireDrainLease takes the drain lease for holder (a procid owner) for
// ttl when it is free, released, expired, or held by an earlier start of
// id's node (dead: the node lock proves it), or renews it when holder has
// it already. Otherwise it fails with a *LeaseHeldError.
func (o *Outbox) AcquireDrainLease(ctx context.Context, id procid.Identity, holder string, ttl time.Duration) (DrainLease, error) {
	var lease DrainLease
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		now := o.clk.Now()
		until := now.Add(ttl)
		var cur string
		var token int64
		var curUntil string
		err := tx.QueryRowContext(ctx, `SELECT holder, token, until FROM OutboxDrainLease WHERE name = ?`+tx.ForUpdate(), drainLeaseName).
			Scan(&cur, &token, &curUntil)
		if errors.Is(err, sql.ErrNoRows) {
			ok, err := store.Insert(ctx, tx, "OutboxDrainLease", []string{"name", "holder", "token", "until", "changed_at"},
				drainLeaseName, holder, 1, clock.Stamp(until), clock.Stamp(now))
			if err != nil {
				return err
			}
			if !ok { // another acquirer inserted it first
				return &LeaseHeldError{Holder: "(another acquirer)", Until: until}
			}
			lease = DrainLease{Holder: holder, Token: 1, Until: until}
			return nil
		}
		if err != nil {
			return err
		}
		exp, err := clock.ParseStamp(curUntil)
		if err != nil {
			return fmt.Errorf("outbox: drain lease has a bad until %q: %w", curUntil, err)
		}
		next := token
		switch {
		case cur == holder:
		case cur == "" || !exp.After(now) || id.IsEarlierSelf(cur):
			next = token + 1
		default:
			return &LeaseHeldError{Holder: cur, Until: exp}
		}
		ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE OutboxDrainLease SET holder = ?, token = ?, until = ?, changed_at = ?
			WHERE name = ? AND holder = ? AND token = ?`, holder, next, clock.Stamp(until), clock.Stamp(now), drainLeaseName, cur, token))
		if err != nil {
			return err
		}
		if !ok {
			return &LeaseHeldError{Holder: "(changed while acquiring)", Until: exp}
		}
		lease = DrainLease{Holder: holder, Token: next, Until: until}
		return nil
	})
	if err != nil {
		if _, held := errors.AsType[*LeaseHeldError](err); held {
			return DrainLease{}, err
		}
		return DrainLease{}, fmt.Errorf("outbox: acquire drain lease: %w", err)
	}
	return lease, nil
}

// RenewDrainLease extends a held lease to now+ttl; ErrDrainLeaseLost when
// it was taken over.
func (o *Outbox) RenewDrainLease(ctx context.Context, lease DrainLease, ttl time.Duration) (DrainLease, error) {
	until := o.clk.Now().Add(ttl)
	var ok bool
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		ok, err = store.Applied(tx.ExecContext(ctx, `UPDATE OutboxDrainLease SET until = ? WHERE name = ? AND holder = ? AND token = ?`,
			clock.Stamp(until), drainLeaseName, lease.Holder, lease.Token))
		return err
	})
	if err != nil {
		return lease, fmt.Errorf("outbox: renew drain lease: %w", err)
	}
	if !ok {
		return lease, ErrDrainLeaseLost
	}
	lease.Until = until
	return lease, nil
}

// ReleaseDrainLease gives a held lease up (a clean stop), so another node
// takes the bank at once; releasing a lease taken over changes nothing.
func (o *Outbox) ReleaseDrainLease(ctx context.Context, lease DrainLease) error {
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		now := clock.Stamp(o.clk.Now())
		_, err := tx.ExecContext(ctx, `UPDATE OutboxDrainLease SET holder = '', until = ?, changed_at = ? WHERE name = ? AND holder = ? AND token = ?`,
			now, now, drainLeaseName, lease.Holder, lease.Token)
		return err
	})
	if err != nil {
		return fmt.Errorf("outbox: release drain lease: %w", err)
	}
	return nil
}

// DrainLeaseHolder reads who holds the drain lease ("" when nobody does
// or it expired).
func (o *Outbox) DrainLeaseHolder(ctx context.Context) (string, error) {
	var holder, until string
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT holder, until FROM OutboxDrainLease WHERE name = ?`, drainLeaseName).Scan(&holder, &until)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("outbox: read drain lease: %w", err)
	}
	if exp, err := clock.ParseStamp(until); err != nil || !exp.After(o.clk.Now()) {
		return "", err
	}
	return holder, nil
}
