package signing

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/readcache"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Owner types of KeyRegistry keys.
const (
	OwnerZC          = "ZC"
	OwnerParticipant = "PARTICIPANT"
)

// Key statuses.
const (
	KeyActive   = "ACTIVE"
	KeyInactive = "INACTIVE"
)

// Key is one KeyRegistry row.
type Key struct {
	KeyID     string            `json:"key_id"`
	OwnerType string            `json:"owner_type"`
	OwnerRef  string            `json:"owner_ref"`
	PublicKey ed25519.PublicKey `json:"-"`
	Status    string            `json:"status"`
	ValidFrom time.Time         `json:"valid_from"`
	ValidTo   *time.Time        `json:"valid_to,omitempty"`
	RevokedAt *time.Time        `json:"revoked_at,omitempty"`
}

// Registry reads and writes KeyRegistry on the coordinator database.
type Registry struct {
	db  *store.DB
	clk clock.Clock
}

// NewRegistry returns a Registry (clk nil: system clock).
func NewRegistry(db *store.DB, clk clock.Clock) *Registry {
	if clk == nil {
		clk = clock.System{}
	}
	return &Registry{db: db, clk: clk}
}

// Register stores a new ACTIVE Ed25519 public key. ValidFrom zero means now.
// An existing key_id is INVALID_REQUEST (keys are never replaced in place).
func (r *Registry) Register(ctx context.Context, k Key) error {
	if k.KeyID == "" || k.OwnerType == "" || k.OwnerRef == "" {
		return domainerr.New("MISSING_FIELD", "key_id, owner_type and owner_ref are required", nil)
	}
	if len(k.PublicKey) != ed25519.PublicKeySize {
		return domainerr.New("INVALID_REQUEST", fmt.Sprintf("public key must be %d bytes", ed25519.PublicKeySize),
			map[string]any{"key_id": k.KeyID})
	}
	now := r.clk.Now()
	if k.ValidFrom.IsZero() {
		k.ValidFrom = now
	}
	var validTo any
	if k.ValidTo != nil {
		validTo = clock.Stamp(*k.ValidTo)
	}
	return r.write(ctx, func(tx *store.Tx) error {
		ok, err := store.Insert(ctx, tx, "KeyRegistry",
			[]string{"key_id", "owner_type", "owner_ref", "alg", "public_key", "status", "valid_from", "valid_to", "created_at"},
			k.KeyID, k.OwnerType, k.OwnerRef, "Ed25519", base64.StdEncoding.EncodeToString(k.PublicKey), KeyActive,
			clock.Stamp(k.ValidFrom), validTo, clock.Stamp(now))
		if err != nil {
			return err
		}
		if !ok {
			return domainerr.New("INVALID_REQUEST", "key "+k.KeyID+" is already registered", map[string]any{"key_id": k.KeyID})
		}
		return nil
	})
}

// Revoke sets revoked_at (not retroactive: signatures made before it stay
// valid). Revoking twice keeps the first instant.
func (r *Registry) Revoke(ctx context.Context, keyID string, at time.Time) error {
	return r.write(ctx, func(tx *store.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE KeyRegistry SET revoked_at = COALESCE(revoked_at, ?) WHERE key_id = ?`,
			clock.Stamp(at), keyID)
		if ok, err := store.Applied(res, err); err != nil {
			return err
		} else if !ok {
			return domainerr.New("KEY_NOT_FOUND", "key "+keyID+" is not registered", map[string]any{"key_id": keyID})
		}
		return nil
	})
}

// SetStatus sets ACTIVE or INACTIVE.
func (r *Registry) SetStatus(ctx context.Context, keyID, status string) error {
	if status != KeyActive && status != KeyInactive {
		return domainerr.New("INVALID_REQUEST", "status must be ACTIVE or INACTIVE", map[string]any{"status": status})
	}
	return r.write(ctx, func(tx *store.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE KeyRegistry SET status = ? WHERE key_id = ?`, status, keyID)
		if ok, err := store.Applied(res, err); err != nil {
			return err
		} else if !ok {
			return domainerr.New("KEY_NOT_FOUND", "key "+keyID+" is not registered", map[string]any{"key_id": keyID})
		}
		return nil
	})
}

// keyCache holds the keys Get read, per coordinator database
// (readcache: exact while every KeyRegistry writer is a Registry method of
// this process, off on PostgreSQL). A verifier looks the signing key up on
// every signed request; the table changes when a key is registered,
// revoked or deactivated.
var keyCache = readcache.New[string, Key]()

// Get returns one key; a missing one is KEY_NOT_FOUND. A key found once
// is served from memory until a Registry write on the same database.
func (r *Registry) Get(ctx context.Context, keyID string) (Key, error) {
	if k, ok := keyCache.Get(r.db, keyID); ok {
		return k.clone(), nil
	}
	gen := keyCache.Gen(r.db)
	k, err := r.read(ctx, keyID)
	if err == nil {
		keyCache.Put(r.db, keyID, k.clone(), gen)
	}
	return k, err
}

// clone copies k's slices and pointers, so that a caller changing its Key
// changes nothing cached.
func (k Key) clone() Key {
	k.PublicKey = append(ed25519.PublicKey(nil), k.PublicKey...)
	if k.ValidTo != nil {
		t := *k.ValidTo
		k.ValidTo = &t
	}
	if k.RevokedAt != nil {
		t := *k.RevokedAt
		k.RevokedAt = &t
	}
	return k
}

// write runs fn in a write transaction and then drops the cached keys.
func (r *Registry) write(ctx context.Context, fn func(tx *store.Tx) error) error {
	defer keyCache.Invalidate(r.db)
	return r.db.Write(ctx, fn)
}

// read reads one key in its own read transaction.
func (r *Registry) read(ctx context.Context, keyID string) (Key, error) {
	var k Key
	err := r.db.Read(ctx, func(tx *store.Tx) error {
		var pub, from string
		var to, rev sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT key_id, owner_type, owner_ref, public_key, status, valid_from, valid_to, revoked_at
			FROM KeyRegistry WHERE key_id = ?`, keyID).Scan(&k.KeyID, &k.OwnerType, &k.OwnerRef, &pub, &k.Status, &from, &to, &rev)
		if errors.Is(err, sql.ErrNoRows) {
			return domainerr.New("KEY_NOT_FOUND", "key "+keyID+" is not registered", map[string]any{"key_id": keyID})
		}
		if err != nil {
			return err
		}
		raw, err := base64.StdEncoding.DecodeString(pub)
		if err != nil || len(raw) != ed25519.PublicKeySize {
			return domainerr.New("KEY_EXPIRED", "key "+keyID+" has an unreadable public key", map[string]any{"key_id": keyID})
		}
		k.PublicKey = raw
		if k.ValidFrom, err = time.Parse(time.RFC3339Nano, from); err != nil {
			return fmt.Errorf("KeyRegistry %s valid_from: %w", keyID, err)
		}
		if k.ValidTo, err = parseOpt(to); err != nil {
			return fmt.Errorf("KeyRegistry %s valid_to: %w", keyID, err)
		}
		if k.RevokedAt, err = parseOpt(rev); err != nil {
			return fmt.Errorf("KeyRegistry %s revoked_at: %w", keyID, err)
		}
		return nil
	})
	return k, err
}

func parseOpt(s sql.NullString) (*time.Time, error) {
	if !s.Valid || s.String == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s.String)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// HasActiveKey reports whether owner has at least one ACTIVE, unrevoked key
// of ownerType valid at the registry clock's now. Spec 004: a participant
// with such a key must sign its queries.
func (r *Registry) HasActiveKey(ctx context.Context, ownerType, ownerRef string) (bool, error) {
	now := clock.Stamp(r.clk.Now())
	var n int
	err := r.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM KeyRegistry
			WHERE owner_type = ? AND owner_ref = ? AND status = 'ACTIVE'
			  AND valid_from <= ? AND (valid_to IS NULL OR valid_to > ?)
			  AND (revoked_at IS NULL OR revoked_at > ?)`, ownerType, ownerRef, now, now, now).Scan(&n)
	})
	return n > 0, err
}

// CheckUsable checks that k may verify a signature made at signedAt:
// ACTIVE and within [valid_from, valid_to) (else KEY_EXPIRED), and signed
// before revoked_at (else KEY_REVOKED). A verifier of a request it
// receives uses CheckUsableAt with its receive time as well.
func (k Key) CheckUsable(signedAt time.Time) error {
	return k.CheckUsableAt(signedAt, signedAt)
}

// CheckUsableAt checks that k is usable at both instants: signedAt (what
// the signer claims) and receivedAt (the verifier's clock when the request
// arrived). Revocation and validity are judged at each, so a signer that
// sets its signing time back before revoked_at or valid_to gains nothing:
// a key revoked at R verifies no request received at or after R.
func (k Key) CheckUsableAt(signedAt, receivedAt time.Time) error {
	d := map[string]any{"key_id": k.KeyID}
	for _, at := range []time.Time{signedAt, receivedAt} {
		if k.RevokedAt != nil && !at.Before(*k.RevokedAt) {
			return domainerr.New("KEY_REVOKED", "key "+k.KeyID+" was revoked at "+clock.Stamp(*k.RevokedAt), d)
		}
	}
	if k.Status != KeyActive {
		return domainerr.New("KEY_EXPIRED", "key "+k.KeyID+" is "+k.Status, d)
	}
	for _, at := range []time.Time{signedAt, receivedAt} {
		if at.Before(k.ValidFrom) || (k.ValidTo != nil && !at.Before(*k.ValidTo)) {
			return domainerr.New("KEY_EXPIRED", "key "+k.KeyID+" is outside its validity period", d)
		}
	}
	return nil
}
