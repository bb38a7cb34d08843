package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/ident"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

// The idempotency scopes of the requests a participant starts with a
// client key: IdempotencyKeys.key is "<scope>:<issuer>:<client key>"
// (onceKey), so two issuers, or two kinds of request, never share a key.
const (
	scopeTransfer = "PI"   // POST /api/transfers (and SubmitBulk)
	scopeGtid     = "GT"   // POST /api/gtid/register
	scopeRtp      = "RTP"  // POST /api/rtp/request
	scopeHtlc     = "HTLC" // POST /api/htlc/create
)

// onceKey is the stored idempotency key of a client key.
func onceKey(scope, issuer, key string) string { return scope + ":" + issuer + ":" + key }

// registerOnce is the one "register once" of those requests: the client
// key is checked (MISSING_FIELD, INVALID_REQUEST), the issuer must be
// identified (UNAUTHORIZED), and create runs once per (scope, issuer,
// key) in one write transaction behind the writable gate, its answer
// stored with the key (idem.Keys.Once). The same key and body answer the
// stored result (replayed true, create not run); the same key with
// another body is IDEMPOTENCY_KEY_CONFLICT; a create that fails stores
// nothing and leaves the key free. create gets the request as stored
// (its JSON body).
func registerOnce[T any](ctx context.Context, o *Orchestrator, scope, issuer, key string, req any,
	create func(tx *store.Tx, body []byte) (T, error)) (out T, replayed bool, err error) {
	if strings.TrimSpace(key) == "" {
		return out, false, missingField("idempotency_key")
	}
	if err := ident.Check(ident.IdempotencyKey, "idempotency_key", key); err != nil {
		return out, false, err
	}
	if strings.TrimSpace(issuer) == "" {
		return out, false, domainerr.New("UNAUTHORIZED", "the issuing participant is not identified", nil)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return out, false, fmt.Errorf("orchestrator: encode %s request: %w", scope, err)
	}
	resp, replayed, err := o.keys.Once(ctx, o.db, onceKey(scope, issuer, key), body, func(tx *store.Tx) ([]byte, error) {
		if err := (sysmode.Gate{}).CheckWritable(ctx, tx); err != nil {
			return nil, err
		}
		v, err := create(tx, body)
		if err != nil {
			return nil, err
		}
		return json.Marshal(v)
	})
	if err != nil {
		return out, false, err
	}
	if err := json.Unmarshal(resp, &out); err != nil {
		return out, false, fmt.Errorf("orchestrator: stored %s response: %w", scope, err)
	}
	return out, replayed, nil
}
