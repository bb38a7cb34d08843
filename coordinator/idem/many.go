package idem

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
)

// manyRows bounds the keys of one statement of Existing and DoneAll (the
// placeholders stay well below SQLite's limit).
const manyRows = 256

// Existing returns which of keys have a row, in any status, read inside
// tx by one statement per manyRows keys (a bulk submission asks this of a
// whole batch instead of claiming key by key).
func (k *Keys) Existing(ctx context.Context, tx *store.Tx, keys []string) (map[string]bool, error) {
	found := map[string]bool{}
	args := make([]any, 0, manyRows)
	for lo := 0; lo < len(keys); lo += manyRows {
		part := keys[lo:min(lo+manyRows, len(keys))]
		args = args[:0]
		for _, key := range part {
			args = append(args, key)
		}
		q := "SELECT key FROM IdempotencyKeys WHERE key IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(part)), ", ") + ")"
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("idem: read %d keys: %w", len(part), err)
		}
		for rows.Next() {
			var key string
			if err := rows.Scan(&key); err != nil {
				rows.Close()
				return nil, fmt.Errorf("idem: read %d keys: %w", len(part), err)
			}
			found[key] = true
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("idem: read %d keys: %w", len(part), err)
		}
	}
	return found, nil
}

// Done is a fresh key, the hash of its request body (HashBody) and the
// response to store for it.
type Done struct {
	Key         string
	RequestHash sql.NullString
	Response    []byte
}

// ErrExists is DoneAll's error when one of its keys has a row already
// (nothing is decided for it: the caller rolls its transaction back).
var ErrExists = errors.New("idem: a key of the batch exists")

// DoneAll writes a DONE row with its response for each of ds, keys that
// have no row (Existing said so in the same transaction), by multi-row
// INSERTs: the rows Acquire then Complete leave for each, in one
// statement per manyRows keys instead of two per key. A key that exists
// returns an error wrapping ErrExists, and rows of ds may be written.
func (k *Keys) DoneAll(ctx context.Context, tx *store.Tx, ds []Done) error {
	cols := []string{"key", "status", "response_body", "created_at", "updated_at", "request_hash"}
	now := clock.Stamp(k.clk.Now())
	args := make([]any, 0, manyRows*len(cols))
	for lo := 0; lo < len(ds); lo += manyRows {
		part := ds[lo:min(lo+manyRows, len(ds))]
		args = args[:0]
		for _, d := range part {
			resp := d.Response
			if resp == nil {
				resp = []byte{}
			}
			args = append(args, d.Key, StatusDone, resp, now, now, d.RequestHash)
		}
		if _, err := tx.ExecContext(ctx, store.InsertRows("IdempotencyKeys", cols, len(part)), args...); err != nil {
			if store.IsUniqueViolation(err) {
				return fmt.Errorf("%w: %w", ErrExists, err)
			}
			return fmt.Errorf("idem: insert %d done keys: %w", len(part), err)
		}
	}
	return nil
}
