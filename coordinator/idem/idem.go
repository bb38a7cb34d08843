package idem

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/zclog"
)

// Outcome classifies a request carrying an idempotency key.
type Outcome string

const (
	// Fresh: nobody holds the key; after Acquire the caller owns it and
	// must Complete (or Abandon) it.
	Fresh Outcome = "FRESH"
	// Replay: the key is DONE with the same body; return Response.
	Replay Outcome = "REPLAY"
	// InFlight: another caller owns the key and has not completed it.
	InFlight Outcome = "IN_FLIGHT"
	// Conflict: the key was used with a different body
	// (IDEMPOTENCY_KEY_CONFLICT; the stored response is not returned).
	Conflict Outcome = "CONFLICT"
)

// Key statuses stored in IdempotencyKeys.status.
const (
	StatusProcessing = "PROCESSING"
	StatusDone       = "DONE"
)

// Sweep ages (spec 003 IdempotencyKeys): PROCESSING orphans after 15
// minutes, DONE keys (the replay cache) after 24 hours.
const (
	OrphanAge = 15 * time.Minute
	DoneTTL   = 24 * time.Hour
)

// Resolution is what a key means for the request at hand.
type Resolution struct {
	Outcome Outcome
	// Response is the stored response, set only for Replay.
	Response []byte
}

// Keys runs idempotency-key operations with an injected clock.
type Keys struct {
	clk clock.Clock
	log *slog.Logger
}

// New returns Keys reading time from clk and logging to log (nil: discard).
func New(clk clock.Clock, log *slog.Logger) *Keys {
	return &Keys{clk: clk, log: zclog.OrDiscard(log)}
}

// HashBody is the body fingerprint stored in request_hash: SHA-256 hex of
// the whole body. A nil body has no fingerprint (single-use keys).
func HashBody(body []byte) sql.NullString {
	if body == nil {
		return sql.NullString{}
	}
	sum := sha256.Sum256(body)
	return sql.NullString{String: hex.EncodeToString(sum[:]), Valid: true}
}

// Acquire claims key inside tx: an INSERT first, so of N racing callers
// exactly one gets Fresh. Any other caller gets the key's Resolution
// (Replay, InFlight or Conflict). Conflict also returns an
// IDEMPOTENCY_KEY_CONFLICT error. body nil stores no hash (single-use keys
// never conflict).
func (k *Keys) Acquire(ctx context.Context, tx *store.Tx, key string, body []byte) (Resolution, error) {
	if key == "" {
		return Resolution{}, domainerr.New("MISSING_FIELD", "idempotency key is empty", map[string]any{"field": "idempotency_key"})
	}
	now := clock.Stamp(k.clk.Now())
	inserted, err := store.Insert(ctx, tx, "IdempotencyKeys",
		[]string{"key", "status", "created_at", "updated_at", "request_hash"},
		key, StatusProcessing, now, now, HashBody(body))
	if err != nil {
		return Resolution{}, fmt.Errorf("idem: acquire %s: %w", key, err)
	}
	if inserted {
		k.log.DebugContext(ctx, "idem.acquired", "idempotency_key", key)
		return Resolution{Outcome: Fresh}, nil
	}
	return k.Resolve(ctx, tx, key, body)
}

// Use claims a single-use key (no body, nothing to answer later, e.g. a
// signature nonce) inside tx and completes it at once: one INSERT of a
// DONE row with response. It reports false, writing nothing, when the key
// exists already (in any status). Acquire followed by Complete gives the
// same row in two statements.
func (k *Keys) Use(ctx context.Context, tx *store.Tx, key string, response []byte) (fresh bool, err error) {
	if key == "" {
		return false, domainerr.New("MISSING_FIELD", "idempotency key is empty", map[string]any{"field": "idempotency_key"})
	}
	if response == nil {
		response = []byte{}
	}
	now := clock.Stamp(k.clk.Now())
	fresh, err = store.Insert(ctx, tx, "IdempotencyKeys",
		[]string{"key", "status", "response_body", "created_at", "updated_at"},
		key, StatusDone, response, now, now)
	if err != nil {
		return false, fmt.Errorf("idem: use %s: %w", key, err)
	}
	return fresh, nil
}

// Resolve classifies key for a request with body without claiming it:
// Fresh when no row exists, Replay (with the stored response) when DONE,
// InFlight when PROCESSING, Conflict with an IDEMPOTENCY_KEY_CONFLICT error
// when both the stored and the new body have a hash and they differ.
func (k *Keys) Resolve(ctx context.Context, tx *store.Tx, key string, body []byte) (Resolution, error) {
	var status string
	var response []byte
	var stored sql.NullString
	err := tx.QueryRowContext(ctx,
		"SELECT status, response_body, request_hash FROM IdempotencyKeys WHERE key = ?", key).
		Scan(&status, &response, &stored)
	if errors.Is(err, sql.ErrNoRows) {
		return Resolution{Outcome: Fresh}, nil
	}
	if err != nil {
		return Resolution{}, fmt.Errorf("idem: resolve %s: %w", key, err)
	}
	if h := HashBody(body); stored.Valid && h.Valid && stored.String != h.String {
		k.log.WarnContext(ctx, "idem.conflict", "idempotency_key", key)
		return Resolution{Outcome: Conflict}, domainerr.New("IDEMPOTENCY_KEY_CONFLICT",
			"idempotency key reused with a different request body",
			map[string]any{"idempotency_key": key})
	}
	switch status {
	case StatusDone:
		k.log.DebugContext(ctx, "idem.replay", "idempotency_key", key)
		return Resolution{Outcome: Replay, Response: response}, nil
	case StatusProcessing:
		return Resolution{Outcome: InFlight}, nil
	default:
		return Resolution{}, domainerr.New("INVARIANT_VIOLATION", "idempotency key has an unknown status",
			map[string]any{"idempotency_key": key, "status": status})
	}
}

// Complete stores the response of the owner of key and marks it DONE. It
// is guarded on PROCESSING: completing a key twice gives ALREADY_PROCESSED,
// completing a key that no longer exists (swept as an orphan) gives
// STATE_GUARD.
func (k *Keys) Complete(ctx context.Context, tx *store.Tx, key string, response []byte) error {
	if response == nil {
		response = []byte{}
	}
	ok, err := store.Applied(tx.ExecContext(ctx,
		"UPDATE IdempotencyKeys SET status = ?, response_body = ?, updated_at = ? WHERE key = ? AND status = ?",
		StatusDone, response, clock.Stamp(k.clk.Now()), key, StatusProcessing))
	if err != nil {
		return fmt.Errorf("idem: complete %s: %w", key, err)
	}
	if ok {
		return nil
	}
	var status string
	err = tx.QueryRowContext(ctx, "SELECT status FROM IdempotencyKeys WHERE key = ?", key).Scan(&status)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return domainerr.New("STATE_GUARD", "idempotency key is not held (swept or never acquired)",
			map[string]any{"idempotency_key": key})
	case err != nil:
		return fmt.Errorf("idem: complete %s: %w", key, err)
	default:
		return domainerr.New("ALREADY_PROCESSED", "idempotency key already completed",
			map[string]any{"idempotency_key": key, "status": status})
	}
}

// Abandon deletes a PROCESSING key whose owner gave up (its work failed
// before any side effect), so the client's retry is Fresh again. A DONE
// key is never deleted. It reports whether a row was removed.
func (k *Keys) Abandon(ctx context.Context, tx *store.Tx, key string) (bool, error) {
	ok, err := store.Applied(tx.ExecContext(ctx,
		"DELETE FROM IdempotencyKeys WHERE key = ? AND status = ?", key, StatusProcessing))
	if err != nil {
		return false, fmt.Errorf("idem: abandon %s: %w", key, err)
	}
	return ok, nil
}

// Swept counts the rows a sweep removed.
type Swept struct {
	Orphans int64 // PROCESSING keys created more than OrphanAge ago
	Expired int64 // DONE keys created more than DoneTTL ago
}

// Sweep removes PROCESSING orphans older than OrphanAge and DONE keys
// older than DoneTTL ("older" = created_at strictly before now - age).
func (k *Keys) Sweep(ctx context.Context, tx *store.Tx) (Swept, error) {
	now := k.clk.Now()
	orphans, err := deleteOlder(ctx, tx, StatusProcessing, now.Add(-OrphanAge))
	if err != nil {
		return Swept{}, err
	}
	expired, err := deleteOlder(ctx, tx, StatusDone, now.Add(-DoneTTL))
	if err != nil {
		return Swept{}, err
	}
	s := Swept{Orphans: orphans, Expired: expired}
	if s.Orphans+s.Expired > 0 {
		k.log.InfoContext(ctx, "idem.swept", "orphans", s.Orphans, "expired", s.Expired)
	}
	return s, nil
}

// deleteOlder deletes keys of status created strictly before cutoff.
// Stored instants are clock.Stamp (fixed nine-digit fraction), so string
// order is time order and SQL compares them directly.
func deleteOlder(ctx context.Context, tx *store.Tx, status string, cutoff time.Time) (int64, error) {
	res, err := tx.ExecContext(ctx,
		"DELETE FROM IdempotencyKeys WHERE status = ? AND created_at < ?", status, clock.Stamp(cutoff))
	if err != nil {
		return 0, fmt.Errorf("idem: sweep %s: %w", status, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("idem: sweep %s: %w", status, err)
	}
	return n, nil
}

// AcquireDB is Acquire in its own write transaction (a Conflict writes
// nothing, so its rollback loses nothing).
func (k *Keys) AcquireDB(ctx context.Context, db *store.DB, key string, body []byte) (r Resolution, err error) {
	err = db.Write(ctx, func(tx *store.Tx) error {
		var e error
		r, e = k.Acquire(ctx, tx, key, body)
		return e
	})
	return r, err
}

// CompleteDB is Complete in its own write transaction.
func (k *Keys) CompleteDB(ctx context.Context, db *store.DB, key string, response []byte) error {
	return db.Write(ctx, func(tx *store.Tx) error { return k.Complete(ctx, tx, key, response) })
}

// ResolveDB is Resolve on a read snapshot.
func (k *Keys) ResolveDB(ctx context.Context, db *store.DB, key string, body []byte) (r Resolution, err error) {
	err = db.Read(ctx, func(tx *store.Tx) error {
		var e error
		r, e = k.Resolve(ctx, tx, key, body)
		return e
	})
	return r, err
}

// AbandonDB is Abandon in its own write transaction.
func (k *Keys) AbandonDB(ctx context.Context, db *store.DB, key string) (ok bool, err error) {
	err = db.Write(ctx, func(tx *store.Tx) error {
		var e error
		ok, e = k.Abandon(ctx, tx, key)
		return e
	})
	return ok, err
}

// SweepDB is Sweep in its own write transaction.
func (k *Keys) SweepDB(ctx context.Context, db *store.DB) (s Swept, err error) {
	err = db.Write(ctx, func(tx *store.Tx) error {
		var e error
		s, e = k.Sweep(ctx, tx)
		return e
	})
	return s, err
}

// Once runs fn exactly once per key, in one write transaction with the
// claim and the stored response: on Fresh it runs fn and stores what fn
// returns; on Replay it returns the stored response without running fn
// (replayed = true). InFlight (a multi-transaction owner still working)
// returns IDEMPOTENCY_REPLAY so the client retries later; a changed body
// returns IDEMPOTENCY_KEY_CONFLICT. If fn fails, nothing is stored and the
// key stays free.
//
// The call shares a commit with concurrent writers of db (group commit):
// a call that fails leaves no trace and does not affect its neighbours,
// and Once returns only after the claim and the response are durable.
func (k *Keys) Once(ctx context.Context, db *store.DB, key string, body []byte, fn func(tx *store.Tx) ([]byte, error)) (response []byte, replayed bool, err error) {
	err = db.Write(ctx, func(tx *store.Tx) error {
		r, err := k.Acquire(ctx, tx, key, body)
		if err != nil {
			return err
		}
		switch r.Outcome {
		case Replay:
			response, replayed = r.Response, true
			return nil
		case InFlight:
			return domainerr.New("IDEMPOTENCY_REPLAY", "a request with this idempotency key is still being processed",
				map[string]any{"idempotency_key": key, "status": StatusProcessing})
		}
		out, err := fn(tx)
		if err != nil {
			return err
		}
		if err := k.Complete(ctx, tx, key, out); err != nil {
			return err
		}
		response = out
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return response, replayed, nil
}
