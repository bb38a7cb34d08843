package signing

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/store"
)

// NonceClaim is the nonce of a request whose signature verified, handed
// to the request's handler so that the handler consumes it in the same
// transaction as the command it authorises (one commit where the nonce
// and the command took two in series). The handler must consume it before
// it answers anything: UseTx inside the command's transaction and Used
// once that transaction committed, or Settle in a transaction of its own
// when the command writes nothing or failed. A nonce the handler finds
// already used (SIGNATURE_REPLAYED), or cannot store, is handed back with
// Refuse and the verifier answers it as any other signature refusal.
//
// The nonce is kept as the single-use idempotency key sig:{key_id}:{nonce}
// (HMAC path: sig:HMAC:{nonce}) in the handler's own IdempotencyKeys, as
// DBNonces keeps it: replay protection stays one INSERT-first claim per
// (key, nonce) in the database that serves the request's path. A claim is
// used by one request (one goroutine).
type NonceClaim struct {
	key   string // the IdempotencyKeys key
	keyID string // the request's key id ("" on the HMAC path)
	nonce string
	keys  *idem.Keys

	mu      sync.Mutex
	used    bool
	refused error
}

// NewNonceClaim returns the claim of (keyID, nonce), keyID "" for the HMAC
// path. The verifier makes one per verified request (Pending.VerifyDeferred);
// a transport that carries commands without the HTTP ingress may make its
// own.
func NewNonceClaim(keyID, nonce string, clk clock.Clock) (*NonceClaim, error) {
	owner := keyID
	if owner == "" {
		owner = hmacNonceKey
	}
	key, err := idem.SigKey(owner, nonce)
	if err != nil {
		return nil, domainerr.Wrap("EXTERNAL_SIGNATURE_INVALID", err, "bad signature nonce", map[string]any{"key_id": keyID})
	}
	if clk == nil {
		clk = clock.System{}
	}
	return &NonceClaim{key: key, keyID: keyID, nonce: nonce, keys: idem.New(clk, nil)}, nil
}

// Key is the IdempotencyKeys key the claim consumes.
func (c *NonceClaim) Key() string { return c.key }

// UseTx consumes the nonce inside the caller's transaction:
// SIGNATURE_REPLAYED when it is already used (the caller rolls back, and
// hands the error to Refuse). It does nothing when the claim is already
// used. The consumption holds only if tx commits: the caller calls Used
// after its commit.
func (c *NonceClaim) UseTx(ctx context.Context, tx *store.Tx) error {
	if c == nil || c.IsUsed() {
		return nil
	}
	fresh, err := c.keys.Use(ctx, tx, c.key, []byte("{}"))
	if err != nil {
		return err
	}
	if !fresh {
		return domainerr.New("SIGNATURE_REPLAYED", "nonce already used with key "+c.owner(),
			map[string]any{"key_id": c.owner(), "nonce": c.nonce})
	}
	return nil
}

func (c *NonceClaim) owner() string {
	if c.keyID == "" {
		return hmacNonceKey
	}
	return c.keyID
}

// Used records that the transaction in which UseTx ran has committed.
func (c *NonceClaim) Used() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.used = true
	c.mu.Unlock()
}

// IsUsed reports whether the nonce is consumed (a nil claim is: there is
// nothing to consume).
func (c *NonceClaim) IsUsed() bool {
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

// Settle consumes the nonce in a transaction of its own on db unless it is
// used already. An error (SIGNATURE_REPLAYED, storage) is also recorded
// with Refuse; the caller answers nothing more.
func (c *NonceClaim) Settle(ctx context.Context, db *store.DB) error {
	if c.IsUsed() {
		return nil
	}
	if err := db.Write(ctx, func(tx *store.Tx) error { return c.UseTx(ctx, tx) }); err != nil {
		c.Refuse(err)
		return err
	}
	c.Used()
	return nil
}

// Refuse hands the failure to consume the nonce back to the verifier,
// which answers the request as a refused signature. The handler writes no
// response of its own.
func (c *NonceClaim) Refuse(err error) {
	c.mu.Lock()
	if c.refused == nil {
		c.refused = err
	}
	c.mu.Unlock()
}

// Refused is the error handed to Refuse, nil when none was.
func (c *NonceClaim) Refused() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refused
}

type claimKey struct{}

// WithNonceClaim returns ctx carrying c for the request's handler.
func WithNonceClaim(ctx context.Context, c *NonceClaim) context.Context {
	return context.WithValue(ctx, claimKey{}, c)
}

// NonceClaimFrom is the claim ctx carries, nil when none (the verifier
// consumed the nonce itself, or the call did not come through a verifier).
func NonceClaimFrom(ctx context.Context) *NonceClaim {
	c, _ := ctx.Value(claimKey{}).(*NonceClaim)
	return c
}

// NonceConsumer is an ingress handler that consumes each request's
// NonceClaim itself (adapter.Handler). The gateway hands a claim only to
// such a handler; in front of any other it consumes the nonce through the
// Verifier's Nonces before the handler runs, as before.
type NonceConsumer interface {
	http.Handler
	// ConsumesNonceClaims promises that ServeHTTP consumes the claim of
	// every request before it answers, or hands its failure to Refuse and
	// answers nothing.
	ConsumesNonceClaims()
}

// VerifyDeferred is Verify without consuming the nonce: the signature
// over this method, path and body, then the claim the handler must
// consume (NonceConsumer).
func (p Pending) VerifyDeferred(method, path string, body []byte) (*NonceClaim, error) {
	if err := p.verifySignature(method, path, body); err != nil {
		return nil, err
	}
	return NewNonceClaim(p.keyID, p.nonce, p.v.Clock)
}

// moveBatch bounds the nonces MoveNonces reads and writes per transaction.
const moveBatch = 1000

// MoveNonces moves every nonce kept in from (a DBNonces database) into
// each of to (the databases where NonceClaims are consumed), so that a
// nonce consumed before the move stays consumed after it: each batch is
// inserted into every destination (INSERT OR IGNORE, created_at kept, so
// the 24h sweep ages it as before) and only then deleted from from. A
// crash between leaves the rows in from and the next move copies them
// again. It returns how many nonces it moved.
func MoveNonces(ctx context.Context, from *store.DB, to []*store.DB) (int, error) {
	moved := 0
	for {
		type row struct{ key, status, created, updated string }
		var rows []row
		err := from.Read(ctx, func(tx *store.Tx) error {
			rs, err := tx.QueryContext(ctx, `SELECT key, status, created_at, COALESCE(updated_at, created_at)
				FROM IdempotencyKeys WHERE key LIKE 'sig:%' ORDER BY key LIMIT ?`, moveBatch)
			if err != nil {
				return err
			}
			defer rs.Close()
			for rs.Next() {
				var r row
				if err := rs.Scan(&r.key, &r.status, &r.created, &r.updated); err != nil {
					return err
				}
				rows = append(rows, r)
			}
			return rs.Err()
		})
		if err != nil {
			return moved, fmt.Errorf("signing: read nonces to move: %w", err)
		}
		if len(rows) == 0 {
			return moved, nil
		}
		for _, db := range to {
			err := db.Write(ctx, func(tx *store.Tx) error {
				for _, r := range rows {
					if _, err := store.Insert(ctx, tx, "IdempotencyKeys",
						[]string{"key", "status", "response_body", "created_at", "updated_at"},
						r.key, r.status, []byte("{}"), r.created, r.updated); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return moved, fmt.Errorf("signing: copy nonces: %w", err)
			}
		}
		err = from.Write(ctx, func(tx *store.Tx) error {
			for _, r := range rows {
				if _, err := tx.ExecContext(ctx, `DELETE FROM IdempotencyKeys WHERE key = ?`, r.key); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return moved, fmt.Errorf("signing: delete moved nonces: %w", err)
		}
		moved += len(rows)
	}
}
