package signing

import (
	"context"
	"log/slog"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/zclog"
)

// Nonces consumes single-use signature nonces.
type Nonces interface {
	// Use consumes (keyID, nonce); a second use is SIGNATURE_REPLAYED.
	Use(ctx context.Context, keyID, nonce string) error
}

// DBNonces keeps nonces as single-use idempotency keys sig:{key_id}:{nonce}
// (spec 002 §12.4 rule 5: no body hash, never a body conflict) in the
// coordinator's IdempotencyKeys, claimed and completed in one transaction.
// They are kept idem.DoneTTL (24h), far longer than any accepted skew, so a
// replayed signature is refused either as a replay or as skewed.
type DBNonces struct {
	db   *store.DB
	keys *idem.Keys
}

// NewDBNonces returns nonces stored in db (coordinator schema).
func NewDBNonces(db *store.DB, clk clock.Clock) *DBNonces {
	return &DBNonces{db: db, keys: idem.New(clk, nil)}
}

// Use consumes the nonce.
func (n *DBNonces) Use(ctx context.Context, keyID, nonce string) error {
	key, err := idem.SigKey(keyID, nonce)
	if err != nil {
		return domainerr.Wrap("EXTERNAL_SIGNATURE_INVALID", err, "bad signature nonce", map[string]any{"key_id": keyID})
	}
	return n.db.Write(ctx, func(tx *store.Tx) error {
		fresh, err := n.keys.Use(ctx, tx, key, []byte("{}"))
		if err != nil {
			return err
		}
		if !fresh {
			return domainerr.New("SIGNATURE_REPLAYED", "nonce already used with key "+keyID,
				map[string]any{"key_id": keyID, "nonce": nonce})
		}
		return nil
	})
}

// NonceSchema is the DDL of a database that holds only signature nonces
// (the IdempotencyKeys table of spec 003), for a verifier that keeps its
// nonces apart from the coordinator database (the bank-side ingress
// verifier does, so nonce writes never queue behind coordinator writes).
const NonceSchema = `
CREATE TABLE IF NOT EXISTS IdempotencyKeys (
  key           TEXT PRIMARY KEY,
  status        TEXT NOT NULL DEFAULT 'PROCESSING',
  response_body TEXT,
  created_at    TEXT NOT NULL,
  updated_at    TEXT,
  request_hash  TEXT
);
`

// Sweep removes nonces older than idem.DoneTTL.
func (n *DBNonces) Sweep(ctx context.Context) error {
	_, err := n.keys.SweepDB(ctx, n.db)
	return err
}

// NonceSweepEvery is how often a node sweeps its ingress nonces: a nonce
// lives idem.DoneTTL (24h), so a minute is far finer than the work needs
// and costs one DELETE a minute.
const NonceSweepEvery = time.Minute

// RunSweep sweeps the nonces every interval (NonceSweepEvery when <= 0)
// until ctx ends, and returns ctx's error. A failed sweep is logged
// (signing.nonce_sweep_failed) and tried again at the next interval: the
// rows it left are only older than they need to be.
func (n *DBNonces) RunSweep(ctx context.Context, every time.Duration, log *slog.Logger) error {
	if every <= 0 {
		every = NonceSweepEvery
	}
	log = zclog.OrDiscard(log)
	for clock.Sleep(ctx, every) {
		if err := n.Sweep(ctx); err != nil && ctx.Err() == nil {
			log.ErrorContext(ctx, "signing.nonce_sweep_failed", "error", err.Error())
		}
	}
	return ctx.Err()
}
