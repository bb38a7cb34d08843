package events

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

// Stream is the EventPublisher row of the outbox: one stream, every
// EventOutbox row in outbox_seq order.
const Stream = "events"

// Lease is a publisher's hold on the outbox stream: while it holds it, it
// alone moves the stream's acknowledged cursor (EventPublisher.acked_seq).
// Token grows with every acquisition, so a publisher that was taken over
// (its lease expired and another acquired it) is fenced: its Advance
// changes nothing and reports *LeaseLostError.
type Lease struct {
	Owner string        // coordinator/procid Owner form
	Token int64         // fencing token
	Until time.Time     // expiry on the Outbox's clock
	TTL   time.Duration // how far each Advance or Renew moves Until
	Acked int64         // acked_seq as of the last acquisition or Advance
}

// ErrLeaseHeld and ErrLeaseLost are what *LeaseHeldError and
// *LeaseLostError match with errors.Is.
var (
	ErrLeaseHeld = errors.New("events: the publisher lease is held by another publisher")
	ErrLeaseLost = errors.New("events: the publisher lease was taken over")
)

// LeaseHeldError: another publisher holds an unexpired lease; try again
// after Until (or when it releases the lease).
type LeaseHeldError struct {
	Owner string
	Token int64
	Until time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("events: publisher lease of stream %s held by %s (token %d) until %s", Stream, e.Owner, e.Token, clock.Stamp(e.Until))
}

func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

// LeaseLostError: the lease (Owner, Token) is no longer the stream's; the
// current holder is Holder with token Current. Nothing was changed.
type LeaseLostError struct {
	Owner   string
	Token   int64
	Holder  string
	Current int64
}

func (e *LeaseLostError) Error() string {
	return fmt.Sprintf("events: publisher lease of stream %s: %s (token %d) was fenced; the lease is now %q (token %d)", Stream, e.Owner, e.Token, e.Holder, e.Current)
}

func (e *LeaseLostError) Unwrap() error { return ErrLeaseLost }

// PublisherState is the stream's EventPublisher row.
type PublisherState struct {
	Acked   int64     // every row with outbox_seq <= Acked was acknowledged by the broker
	AckedAt time.Time // when Acked last moved (zero: never)
	Owner   string    // lease holder ("" when released or never taken)
	Token   int64
	Until   time.Time // lease expiry (zero when released)
}

func parseOptionalStamp(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := clock.ParseStamp(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("events: EventPublisher.%s %q: %w", field, s, err)
	}
	return t, nil
}

func readStateTx(ctx context.Context, tx *store.Tx, lock bool) (PublisherState, error) {
	var st PublisherState
	var ackedAt, until string
	q := `SELECT acked_seq, acked_at, owner, token, lease_until FROM EventPublisher WHERE stream = ?`
	if lock {
		q += tx.ForUpdate()
	}
	err := tx.QueryRowContext(ctx, q, Stream).Scan(&st.Acked, &ackedAt, &st.Owner, &st.Token, &until)
	if errors.Is(err, sql.ErrNoRows) {
		return st, fmt.Errorf("events: EventPublisher row %q is missing (the coordinator schema seeds it)", Stream)
	}
	if err != nil {
		return st, err
	}
	if st.AckedAt, err = parseOptionalStamp("acked_at", ackedAt); err != nil {
		return st, err
	}
	st.Until, err = parseOptionalStamp("lease_until", until)
	return st, err
}

// State reads the stream's cursor and lease.
func (o *Outbox) State(ctx context.Context) (PublisherState, error) {
	var st PublisherState
	err := o.db.Read(ctx, func(tx *store.Tx) (err error) {
		st, err = readStateTx(ctx, tx, false)
		return err
	})
	if err != nil {
		return PublisherState{}, fmt.Errorf("events: read publisher state: %w", err)
	}
	return st, nil
}

// Takeable reports whether owner may take the lease st describes at now:
// it is released, expired, owner's own, or held by an earlier start of
// owner's node (procid: same node, another epoch — that process is gone,
// so a restarted node does not wait for its own old lease to expire).
func (st PublisherState) Takeable(owner string, now time.Time) bool {
	if st.Owner == "" || st.Owner == owner || !st.Until.After(now) {
		return true
	}
	node, epoch, _, ok := procid.ParseOwner(owner)
	if !ok {
		return false
	}
	return procid.Identity{Node: node, Epoch: epoch}.IsEarlierSelf(st.Owner)
}

// AcquireLease takes the stream's lease for owner for ttl, when nobody else
// holds an unexpired one (an expired or released lease, or one of an
// earlier start of owner's node, is taken over: Takeable),
// with a guarded UPDATE on the token: of racing acquirers (publishers of
// several nodes on one database) exactly one wins; the others get
// *LeaseHeldError. The returned Lease carries the stream's cursor: the
// new holder publishes from the row after it.
func (o *Outbox) AcquireLease(ctx context.Context, owner string, ttl time.Duration) (Lease, error) {
	if owner == "" || ttl <= 0 {
		return Lease{}, fmt.Errorf("events: acquire publisher lease: owner %q and ttl %s: both are required", owner, ttl)
	}
	var lease Lease
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		now := o.clk.Now()
		st, err := readStateTx(ctx, tx, true)
		if err != nil {
			return err
		}
		if !st.Takeable(owner, now) {
			return &LeaseHeldError{Owner: st.Owner, Token: st.Token, Until: st.Until}
		}
		lease = Lease{Owner: owner, Token: st.Token + 1, Until: now.Add(ttl), TTL: ttl, Acked: st.Acked}
		ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE EventPublisher SET owner = ?, token = ?, lease_until = ? WHERE stream = ? AND token = ?`,
			owner, lease.Token, clock.Stamp(lease.Until), Stream, st.Token))
		if err == nil && !ok {
			return &LeaseHeldError{Owner: "(a concurrent acquirer)", Token: st.Token + 1, Until: now.Add(ttl)}
		}
		return err
	})
	if err != nil {
		var held *LeaseHeldError
		if errors.As(err, &held) {
			return Lease{}, held
		}
		return Lease{}, fmt.Errorf("events: acquire publisher lease for %s: %w", owner, err)
	}
	return lease, nil
}

// fencedTx reports *LeaseLostError for l with the stream's current holder.
func fencedTx(ctx context.Context, tx *store.Tx, l Lease) error {
	st, err := readStateTx(ctx, tx, false)
	if err != nil {
		return err
	}
	return &LeaseLostError{Owner: l.Owner, Token: l.Token, Holder: st.Owner, Current: st.Token}
}

// Advance records that every row with outbox_seq <= acked was acknowledged
// by the broker, and renews the lease for its TTL, in one guarded UPDATE
// (WHERE owner and token are l's): one commit however many rows the step
// acknowledged. Call it only after the acknowledgement. A fenced lease
// changes nothing and gets *LeaseLostError. acked never moves back.
func (o *Outbox) Advance(ctx context.Context, l Lease, acked int64) (Lease, error) {
	return o.update(ctx, l, acked, true)
}

// Renew extends the lease for its TTL without moving the cursor (an idle
// holder keeps its lease); *LeaseLostError when fenced.
func (o *Outbox) Renew(ctx context.Context, l Lease) (Lease, error) {
	return o.update(ctx, l, l.Acked, false)
}

func (o *Outbox) update(ctx context.Context, l Lease, acked int64, advance bool) (Lease, error) {
	out := l
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		now := o.clk.Now()
		out.Until = now.Add(l.TTL)
		var ok bool
		var err error
		if advance {
			out.Acked = max(acked, l.Acked)
			ok, err = store.Applied(tx.ExecContext(ctx, `UPDATE EventPublisher SET acked_seq = ?, acked_at = ?, lease_until = ?
				WHERE stream = ? AND owner = ? AND token = ? AND acked_seq <= ?`,
				out.Acked, clock.Stamp(now), clock.Stamp(out.Until), Stream, l.Owner, l.Token, out.Acked))
		} else {
			ok, err = store.Applied(tx.ExecContext(ctx, `UPDATE EventPublisher SET lease_until = ? WHERE stream = ? AND owner = ? AND token = ?`,
				clock.Stamp(out.Until), Stream, l.Owner, l.Token))
		}
		if err == nil && !ok {
			return fencedTx(ctx, tx, l)
		}
		return err
	})
	if err != nil {
		var lost *LeaseLostError
		if errors.As(err, &lost) {
			return l, lost
		}
		return l, fmt.Errorf("events: publisher %s: move cursor to %d: %w", l.Owner, acked, err)
	}
	return out, nil
}

// ReleaseLease gives the lease up (a clean stop), so another publisher
// takes over at once instead of after expiry. Releasing a lease that was
// already taken over changes nothing and is not an error.
func (o *Outbox) ReleaseLease(ctx context.Context, l Lease) error {
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE EventPublisher SET owner = '', lease_until = '' WHERE stream = ? AND owner = ? AND token = ?`,
			Stream, l.Owner, l.Token)
		return err
	})
	if err != nil {
		return fmt.Errorf("events: release publisher lease of %s: %w", l.Owner, err)
	}
	return nil
}
