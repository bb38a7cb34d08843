package adapter

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/failpoint"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/store"
)

// requestKey is the IdempotencyKeys key of an ingress request: request_id
// is unique per bank, whatever the command (the command is part of the
// body hash, so reusing a request_id for another command is a conflict).
func (a *Adapter) requestKey(requestID string) string { return "ZCREQ:" + a.bank + ":" + requestID }

// requestBody is what the body hash covers: the command and the body.
func requestBody(command string, req any) ([]byte, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("adapter: encode %s body: %w", command, err)
	}
	return append([]byte(command+"\n"), b...), nil
}

// claim is the atomic claim of spec 001 §18.1 (idem.Acquire: INSERT
// first, ownership decided by its row count alone — no read-then-decide
// gap). A loser gets the completed response (REPLAY), or
// LEGACY_ADAPTER_REQUEST_IN_FLIGHT (retryable) while the owner is still
// working, or IDEMPOTENCY_KEY_CONFLICT for another body.
func (a *Adapter) claim(ctx context.Context, tx *store.Tx, command, requestID string, body []byte) (idem.Resolution, error) {
	res, err := a.keys.Acquire(ctx, tx, a.requestKey(requestID), body)
	if err != nil {
		if de, ok := domainerr.As(err); ok && de.Details != nil {
			de.Details["request_id"], de.Details["command"] = requestID, command
		}
		return res, err
	}
	if res.Outcome == idem.InFlight {
		return res, inFlight(requestID, command)
	}
	return res, nil
}

// once runs fn exactly once per request_id, in one write transaction with
// the claim and the completion: the side effects of fn (shadow change,
// outbox rows) commit together with the cached response or not at all. An
// error from fn rolls everything back, claim included, so a retry
// re-evaluates. The request's signature nonce (signing.NonceClaim in ctx)
// is consumed first in the same transaction: one commit for the nonce and
// the command, and a replayed nonce runs nothing.
func once[R any](ctx context.Context, a *Adapter, command, requestID string, req any, fn func(tx *store.Tx) (R, error)) (R, error) {
	var out R
	body, err := requestBody(command, req)
	if err != nil {
		return out, err
	}
	replay := false
	nonce := signing.NonceClaimFrom(ctx)
	err = a.db.Write(ctx, func(tx *store.Tx) error {
		if err := nonce.UseTx(ctx, tx); err != nil {
			return err
		}
		res, err := a.claim(ctx, tx, command, requestID, body)
		if err != nil {
			return err
		}
		if res.Outcome == idem.Replay {
			replay = true
			return json.Unmarshal(res.Response, &out)
		}
		r, err := fn(tx)
		if err != nil {
			return err
		}
		resp, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("adapter: encode %s response: %w", command, err)
		}
		out = r
		return a.keys.Complete(ctx, tx, a.requestKey(requestID), resp)
	})
	if err != nil {
		var zero R
		if de, ok := domainerr.As(err); ok {
			a.log.InfoContext(ctx, "adapter.refuse", "command", command, "request_id", requestID, "reason_code", de.Code)
		}
		return zero, err
	}
	nonce.Used()
	failpoint.Hit("adapter.after-record")
	if replay {
		a.log.InfoContext(ctx, "adapter.replay", "command", command, "request_id", requestID)
	} else {
		// Whatever fn queued in the outbox is committed now: wake its loop
		// (a command that queued nothing costs it one look).
		a.ob.Wake()
	}
	return out, nil
}

// SweepRequests removes abandoned IN_FLIGHT claims (a caller that crashed
// mid-command, after idem.OrphanAge; RecoverRequests normally completes
// them long before), expired cached responses (after idem.DoneTTL;
// execute-debit/credit stay idempotent per txid beyond it), and the owner
// rows of claims whose record is gone. RunRecovery calls it.
func (a *Adapter) SweepRequests(ctx context.Context) (idem.Swept, error) {
	var s idem.Swept
	err := a.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		if s, err = a.keys.Sweep(ctx, tx); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM AdapterRequestClaims WHERE key NOT IN (SELECT key FROM IdempotencyKeys)`)
		if err != nil {
			return fmt.Errorf("adapter: sweep request claims: %w", err)
		}
		return nil
	})
	return s, err
}
