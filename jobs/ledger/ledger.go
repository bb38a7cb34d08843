package ledger

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Schema is the ledger's DDL (ledger.sql). It is idempotent and is applied
// to the coordinator's database file on every Open.
//
//go:embed ledger.sql
var Schema string

// FileName is the coordinator database file under the data folder (the
// SQLite store.Locator's); the ledger shares it so that a step whose
// effects are coordinator rows can commit them together with its
// completion row.
const FileName = store.CoordinatorDB + ".db"

// DailySlot is the slot of a daily job instance: one per business date.
const DailySlot = "daily"

// Status of a run or a step.
type Status string

// Run and step statuses.
const (
	Started   Status = "STARTED"
	Completed Status = "COMPLETED"
	Failed    Status = "FAILED"
)

// Ledger is the job ledger on one store.DB handle.
type Ledger struct {
	db  *store.DB
	clk clock.Clock
}

// Path returns the ledger file for a data folder with SQLite storage (the
// coordinator's file); a node with a store block locates it with its
// store.Locator.
func Path(dataDir string) string {
	return store.Locator{Kind: store.SQLite, Dir: dataDir}.Location(store.CoordinatorDB)
}

// Open opens (creating if needed) the database at path and applies Schema.
func Open(ctx context.Context, path string, clk clock.Clock) (*Ledger, error) {
	db, err := store.Open(ctx, path, Schema)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return &Ledger{db: db, clk: clk}, nil
}

// DB is the underlying handle, for steps that write their effects in the
// same transaction as their completion row.
func (l *Ledger) DB() *store.DB { return l.db }

// Clock is the clock the ledger stamps rows with.
func (l *Ledger) Clock() clock.Clock { return l.clk }

// Close closes the handle.
func (l *Ledger) Close() error { return l.db.Close() }

// Lease is a runner's right to run one job, identified by its fencing
// token. Token only ever grows, so a lower token is a stale holder.
type Lease struct {
	Job       string
	Holder    string
	Token     int64
	ExpiresAt time.Time
}

// AcquireLease takes the job's lease for holder for ttl, when nobody holds
// an unexpired lease (the same holder included: one lease is one run). It
// increments the fencing token with a guarded UPDATE. It fails with
// ErrLeaseHeld otherwise.
func (l *Ledger) AcquireLease(ctx context.Context, job, holder string, ttl time.Duration) (Lease, error) {
	if holder == "" || ttl <= 0 {
		return Lease{}, fmt.Errorf("ledger: acquire lease on %s: holder and a positive ttl are required", job)
	}
	var lease Lease
	err := l.db.Write(ctx, func(tx *store.Tx) error {
		now := l.clk.Now()
		var curHolder, expires string
		var token int64
		err := tx.QueryRowContext(ctx, `SELECT holder, token, expires_at FROM JobLeases WHERE job = ?`+tx.ForUpdate(), job).Scan(&curHolder, &token, &expires)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			// The first lease of the job: of racing acquirers (other nodes
			// on a shared database) exactly one inserts it.
			lease = Lease{Job: job, Holder: holder, Token: 1, ExpiresAt: now.Add(ttl)}
			ok, err := store.Insert(ctx, tx, "JobLeases", []string{"job", "holder", "token", "acquired_at", "expires_at"},
				job, holder, 1, clock.Stamp(now), clock.Stamp(lease.ExpiresAt))
			if err == nil && !ok {
				return domainerr.Wrap("CONCURRENCY_CONFLICT", ErrLeaseHeld, "job "+job+" was leased by another holder while acquiring", map[string]any{"job": job})
			}
			return err
		case err != nil:
			return err
		}
		exp, err := clock.ParseStamp(expires)
		if err != nil {
			return fmt.Errorf("ledger: lease of %s has a bad expires_at %q: %w", job, expires, err)
		}
		if curHolder != "" && exp.After(now) {
			return domainerr.Wrap("CONCURRENCY_CONFLICT", ErrLeaseHeld,
				fmt.Sprintf("job %s is leased by %s (token %d) until %s", job, curHolder, token, expires),
				map[string]any{"job": job, "holder": curHolder, "token": token, "expires_at": expires})
		}
		lease = Lease{Job: job, Holder: holder, Token: token + 1, ExpiresAt: now.Add(ttl)}
		res, err := tx.ExecContext(ctx, `UPDATE JobLeases SET holder = ?, token = token + 1, acquired_at = ?, expires_at = ?
			WHERE job = ? AND token = ?`, holder, clock.Stamp(now), clock.Stamp(lease.ExpiresAt), job, token)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return domainerr.Wrap("CONCURRENCY_CONFLICT", ErrLeaseHeld, "job "+job+" lease changed while acquiring", map[string]any{"job": job})
		}
		return nil
	})
	if err != nil {
		return Lease{}, wrapPlain(err, "ledger: acquire lease on "+job)
	}
	return lease, nil
}

func fenced(job string, want, have int64, holder string) error {
	return domainerr.Wrap("CONCURRENCY_CONFLICT", ErrFenced,
		fmt.Sprintf("job %s: fencing token %d is stale (current token %d held by %q)", job, want, have, holder),
		map[string]any{"job": job, "token": want, "current_token": have, "current_holder": holder})
}

// CheckFence fails with ErrFenced unless lease is still the job's current
// lease. Call it first in every transaction that writes for a run: inside
// a store.Write (BEGIN IMMEDIATE) nobody can take the lease over between
// the check and the commit.
func CheckFence(ctx context.Context, tx *store.Tx, lease Lease) error {
	var holder string
	var token int64
	err := tx.QueryRowContext(ctx, `SELECT holder, token FROM JobLeases WHERE job = ?`+tx.ForUpdate(), lease.Job).Scan(&holder, &token)
	if errors.Is(err, sql.ErrNoRows) {
		return fenced(lease.Job, lease.Token, 0, "")
	}
	if err != nil {
		return fmt.Errorf("ledger: check fence of %s: %w", lease.Job, err)
	}
	if token != lease.Token || holder != lease.Holder {
		return fenced(lease.Job, lease.Token, token, holder)
	}
	return nil
}

// WriteFenced runs fn in one write transaction after CheckFence: fn's
// writes commit only while lease is current.
func (l *Ledger) WriteFenced(ctx context.Context, lease Lease, fn func(tx *store.Tx) error) error {
	return l.db.Write(ctx, func(tx *store.Tx) error {
		if err := CheckFence(ctx, tx, lease); err != nil {
			return err
		}
		return fn(tx)
	})
}

// RenewLease extends the lease to now+ttl. It fails with ErrFenced when the
// lease was taken over (a guarded UPDATE on holder and token).
func (l *Ledger) RenewLease(ctx context.Context, lease Lease, ttl time.Duration) (Lease, error) {
	err := l.db.Write(ctx, func(tx *store.Tx) error {
		exp := l.clk.Now().Add(ttl)
		res, err := tx.ExecContext(ctx, `UPDATE JobLeases SET expires_at = ? WHERE job = ? AND holder = ? AND token = ?`,
			clock.Stamp(exp), lease.Job, lease.Holder, lease.Token)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return CheckFence(ctx, tx, lease)
		}
		lease.ExpiresAt = exp
		return nil
	})
	if err != nil {
		return lease, wrapPlain(err, "ledger: renew lease on "+lease.Job)
	}
	return lease, nil
}

// ReleaseLease gives the lease up (holder ” and expiry now); the token is
// kept so the next holder's token is higher. Releasing a lease that was
// taken over fails with ErrFenced and changes nothing.
func (l *Ledger) ReleaseLease(ctx context.Context, lease Lease) error {
	err := l.db.Write(ctx, func(tx *store.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE JobLeases SET holder = '', expires_at = ? WHERE job = ? AND holder = ? AND token = ?`,
			clock.Stamp(l.clk.Now()), lease.Job, lease.Holder, lease.Token)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return CheckFence(ctx, tx, lease)
		}
		return nil
	})
	if err != nil {
		return wrapPlain(err, "ledger: release lease on "+lease.Job)
	}
	return nil
}

// CurrentLease reads the job's lease row (ok false when it never had one).
func (l *Ledger) CurrentLease(ctx context.Context, job string) (lease Lease, ok bool, err error) {
	err = l.db.Read(ctx, func(tx *store.Tx) error {
		var exp string
		e := tx.QueryRowContext(ctx, `SELECT holder, token, expires_at FROM JobLeases WHERE job = ?`, job).Scan(&lease.Holder, &lease.Token, &exp)
		if errors.Is(e, sql.ErrNoRows) {
			return nil
		}
		if e != nil {
			return e
		}
		ok = true
		lease.Job = job
		lease.ExpiresAt, e = clock.ParseStamp(exp)
		return e
	})
	if err != nil {
		return Lease{}, false, fmt.Errorf("ledger: read lease of %s: %w", job, err)
	}
	return lease, ok, nil
}

// wrapPlain adds context to infrastructure errors and returns domain
// errors (refusals with a reason code) as they are, so their message is
// what an operator reads.
func wrapPlain(err error, context string) error {
	if _, ok := domainerr.As(err); ok {
		return err
	}
	return fmt.Errorf("%s: %w", context, err)
}
