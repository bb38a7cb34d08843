package adapter

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/zcgw/zcgw/coordinator/failpoint"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/uuid"
)

// A command that asks the core (name-check) cannot claim, ask and answer
// in one transaction: its PROCESSING record is committed before the core
// is asked. Such a record is never left without an owner:
//
//   - the claim commit writes AdapterRequestClaims: the owner (procid owner
//     string of this process), a token and a lease expiry (RequestLease);
//   - the answer commit completes (or abandons) the record only while its
//     token is still the claim's;
//   - a record whose owner is dead — its lease expired, or it was claimed
//     by an earlier start of this node (dead for certain: the node lock) —
//     is taken over: at once by a retry of the same request (it then asks
//     the core itself), and by RecoverRequests (RunRequestRecovery runs it
//     continuously in the node), which asks the core again and completes
//     the record (MATCH/MISMATCH cached) or abandons it (DEFERRED: the next
//     retry asks afresh).
//
// Asking again is the recovery of name-check because a name inquiry is
// read-only at the core: asking twice changes nothing. Every other command
// runs in one transaction (once) and never leaves a PROCESSING record.

// ErrRequestLease is New's refusal of a Config.RequestLease that is not
// longer than the inquiry timeout (the owner would be taken over while
// still asking) or not shorter than idem.OrphanAge (the orphan sweep would
// remove a record whose owner may still be alive).
var ErrRequestLease = errors.New("adapter: RequestLease must be longer than InquiryTimeout and shorter than idem.OrphanAge")

// DefaultRequestLease is the lease of an in-progress request record.
const DefaultRequestLease = 10 * time.Second

// twoPhase is once for commands that must talk to the core: the claim (with
// its owner and lease) is committed first (a duplicate meanwhile gets
// IN_FLIGHT, or takes the claim over when its owner is dead), then ask runs
// outside any transaction, then the answer is cached (final == true) or the
// claim is abandoned so a later retry asks again.
func twoPhase[R any](ctx context.Context, a *Adapter, command, requestID string, req any,
	ask func(ctx context.Context) (r R, final bool, err error)) (R, error) {
	var out R
	body, err := requestBody(command, req)
	if err != nil {
		return out, err
	}
	raw := body[len(command)+1:]
	key := a.requestKey(requestID)
	token := "CLM-" + uuid.New()
	replay := false
	err = a.db.Write(ctx, func(tx *store.Tx) error {
		res, err := a.claim(ctx, tx, command, requestID, body)
		switch {
		case res.Outcome == idem.InFlight: // err is IN_FLIGHT unless the owner is dead
			ok, terr := a.takeOverTx(ctx, tx, key, command, raw, token)
			if terr != nil {
				return terr
			}
			if !ok {
				return err
			}
			return nil
		case err != nil:
			return err
		case res.Outcome == idem.Replay:
			replay = true
			return json.Unmarshal(res.Response, &out)
		}
		return a.insertClaimTx(ctx, tx, key, command, raw, token)
	})
	if err != nil || replay {
		if replay {
			a.log.InfoContext(ctx, "adapter.replay", "command", command, "request_id", requestID)
		}
		return out, err
	}
	failpoint.Hit("adapter.after-claim")
	r, final, askErr := ask(ctx)
	var resp []byte
	if askErr == nil && final {
		if resp, err = json.Marshal(r); err != nil {
			return out, fmt.Errorf("adapter: encode %s response: %w", command, err)
		}
	}
	// The claim must be finished even if the caller's context has ended.
	lost, stored, err := a.finishClaim(context.WithoutCancel(ctx), key, token, resp, askErr == nil && final)
	switch {
	case err != nil || askErr != nil:
		return out, errors.Join(askErr, err)
	case lost && stored != nil: // taken over and answered meanwhile: that answer is the record
		return out, json.Unmarshal(stored, &out)
	case lost:
		return out, inFlight(requestID, command)
	}
	failpoint.Hit("adapter.after-record")
	return r, nil
}

func inFlight(requestID, command string) error {
	return domainerr.New("LEGACY_ADAPTER_REQUEST_IN_FLIGHT",
		"the same request_id is being processed by another call; retry later",
		map[string]any{"request_id": requestID, "command": command})
}

func (a *Adapter) insertClaimTx(ctx context.Context, tx *store.Tx, key, command string, raw []byte, token string) error {
	now := a.clk.Now()
	_, err := tx.ExecContext(ctx, `INSERT INTO AdapterRequestClaims (key, command, body, owner, token, expires_at, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(key) DO UPDATE SET command = excluded.command, body = excluded.body, owner = excluded.owner,
			token = excluded.token, expires_at = excluded.expires_at, created_at = excluded.created_at`,
		key, command, string(raw), a.owner, token, clock.Stamp(now.Add(a.lease)), clock.Stamp(now))
	if err != nil {
		return fmt.Errorf("adapter: claim %s: %w", key, err)
	}
	return nil
}

// takeOverTx takes the PROCESSING record key over for this process under
// token when its owner is dead: its lease expired, it was written by an
// earlier start of this node, or (a record from a build that kept no owner)
// it is older than the lease. A live owner's record is not touched.
func (a *Adapter) takeOverTx(ctx context.Context, tx *store.Tx, key, command string, raw []byte, token string) (bool, error) {
	now := a.clk.Now()
	var owner, oldToken, expires string
	err := tx.QueryRowContext(ctx, `SELECT owner, token, expires_at FROM AdapterRequestClaims WHERE key = ?`, key).Scan(&owner, &oldToken, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		var created string
		err := tx.QueryRowContext(ctx, `SELECT created_at FROM IdempotencyKeys WHERE key = ? AND status = ?`, key, idem.StatusProcessing).Scan(&created)
		if errors.Is(err, sql.ErrNoRows) || err == nil && created > clock.Stamp(now.Add(-a.lease)) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("adapter: read %s: %w", key, err)
		}
		a.log.InfoContext(ctx, "adapter.request_taken_over", "key", key, "command", command, "previous_owner", "")
		return true, a.insertClaimTx(ctx, tx, key, command, raw, token)
	}
	if err != nil {
		return false, fmt.Errorf("adapter: read claim %s: %w", key, err)
	}
	if expires > clock.Stamp(now) && !a.id.IsEarlierSelf(owner) {
		return false, nil
	}
	ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE AdapterRequestClaims SET owner = ?, token = ?, expires_at = ?
		WHERE key = ? AND token = ?`, a.owner, token, clock.Stamp(now.Add(a.lease)), key, oldToken))
	if err != nil {
		return false, fmt.Errorf("adapter: take over %s: %w", key, err)
	}
	if ok {
		a.log.InfoContext(ctx, "adapter.request_taken_over", "key", key, "command", command, "previous_owner", owner,
			"lease_expired_at", expires)
	}
	return ok, nil
}

// finishClaim ends the claim key/token: it caches resp (final) or
// abandons the record so a retry asks again. lost reports that the claim
// was taken over meanwhile; stored is then the record's cached answer, if
// its new owner completed it.
func (a *Adapter) finishClaim(ctx context.Context, key, token string, resp []byte, final bool) (lost bool, stored []byte, err error) {
	err = a.db.Write(ctx, func(tx *store.Tx) error {
		lost, stored = false, nil
		ok, err := store.Applied(tx.ExecContext(ctx, `DELETE FROM AdapterRequestClaims WHERE key = ? AND token = ?`, key, token))
		if err != nil {
			return fmt.Errorf("adapter: finish claim %s: %w", key, err)
		}
		if !ok {
			lost = true
			var status string
			var body []byte
			err := tx.QueryRowContext(ctx, `SELECT status, COALESCE(response_body, '') FROM IdempotencyKeys WHERE key = ?`, key).Scan(&status, &body)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("adapter: read %s: %w", key, err)
			}
			if status == idem.StatusDone {
				stored = body
			}
			return nil
		}
		if final {
			err := a.keys.Complete(ctx, tx, key, resp)
			if domainerr.Has(err, "STATE_GUARD") { // swept as an orphan meanwhile: nothing left to cache
				return nil
			}
			return err
		}
		_, err = a.keys.Abandon(ctx, tx, key)
		return err
	})
	return lost, stored, err
}

// Recovered counts what one RecoverRequests did.
type Recovered struct {
	Completed int // records answered and cached
	Abandoned int // records released for a fresh ask (no final answer, or no body to ask with)
}

// RecoverRequests takes over every in-progress request record whose owner
// is dead (lease expired, or an earlier start of this node) and completes
// it: name-check is asked again (a read-only inquiry) and cached, or
// abandoned when the core gives no final answer. A record left by a build
// that kept no owner (no body to ask with) is abandoned once older than
// the lease, so the coordinator's retry asks afresh. Records of live
// owners are not touched.
func (a *Adapter) RecoverRequests(ctx context.Context) (Recovered, error) {
	var out Recovered
	type cand struct{ key, command, body, owner, token string }
	var cands []cand
	var legacy []string
	now := a.clk.Now()
	err := a.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT key, command, body, owner, token, expires_at FROM AdapterRequestClaims
			WHERE expires_at <= ?1 OR substr(owner, 1, length(?2)) = ?2`, clock.Stamp(now), a.id.NodePrefix())
		if err != nil {
			return fmt.Errorf("adapter: list request claims: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var c cand
			var expires string
			if err := rows.Scan(&c.key, &c.command, &c.body, &c.owner, &c.token, &expires); err != nil {
				return fmt.Errorf("adapter: list request claims: %w", err)
			}
			if expires <= clock.Stamp(now) || a.id.IsEarlierSelf(c.owner) {
				cands = append(cands, c)
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("adapter: list request claims: %w", err)
		}
		prefix := a.requestKey("")
		lrows, err := tx.QueryContext(ctx, `SELECT key FROM IdempotencyKeys WHERE status = ?1 AND substr(key, 1, length(?2)) = ?2
			AND created_at < ?3 AND key NOT IN (SELECT key FROM AdapterRequestClaims)`,
			idem.StatusProcessing, prefix, clock.Stamp(now.Add(-a.lease)))
		if err != nil {
			return fmt.Errorf("adapter: list ownerless requests: %w", err)
		}
		defer lrows.Close()
		for lrows.Next() {
			var k string
			if err := lrows.Scan(&k); err != nil {
				return fmt.Errorf("adapter: list ownerless requests: %w", err)
			}
			legacy = append(legacy, k)
		}
		return lrows.Err()
	})
	if err != nil {
		return out, err
	}
	for _, k := range legacy {
		var ok bool
		if err := a.db.Write(ctx, func(tx *store.Tx) error {
			var err error
			ok, err = a.keys.Abandon(ctx, tx, k)
			return err
		}); err != nil {
			return out, err
		}
		if ok {
			out.Abandoned++
			a.log.InfoContext(ctx, "adapter.request_abandoned", "key", k, "cause", "no owner recorded")
		}
	}
	for _, c := range cands {
		token := "CLM-" + uuid.New()
		var ok bool
		if err := a.db.Write(ctx, func(tx *store.Tx) error {
			var err error
			ok, err = store.Applied(tx.ExecContext(ctx, `UPDATE AdapterRequestClaims SET owner = ?, token = ?, expires_at = ?
				WHERE key = ? AND token = ?`, a.owner, token, clock.Stamp(a.clk.Now().Add(a.lease)), c.key, c.token))
			return err
		}); err != nil {
			return out, fmt.Errorf("adapter: take over %s: %w", c.key, err)
		}
		if !ok {
			continue // taken by someone else (a retry) meanwhile
		}
		resp, final, askErr := a.reask(ctx, c.command, []byte(c.body))
		final = final && askErr == nil
		if _, _, err := a.finishClaim(context.WithoutCancel(ctx), c.key, token, resp, final); err != nil {
			return out, err
		}
		if final {
			out.Completed++
		} else {
			out.Abandoned++
		}
		a.log.InfoContext(ctx, "adapter.request_recovered", "key", c.key, "command", c.command, "previous_owner", c.owner,
			"completed", final)
	}
	return out, nil
}

// reask runs command's core question again from its recorded body.
func (a *Adapter) reask(ctx context.Context, command string, body []byte) ([]byte, bool, error) {
	switch bankapi.Command(command) {
	case bankapi.NameCheck:
		var req bankapi.NameCheckRequest
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, false, fmt.Errorf("adapter: decode recorded name-check: %w", err)
		}
		r, final, err := a.askNameCheck(ctx, req)
		if err != nil || !final {
			return nil, false, err
		}
		resp, err := json.Marshal(r)
		return resp, err == nil, err
	}
	return nil, false, nil // a command without a core question: released for a fresh call
}

// RequestSweepEvery is how often RunRequestRecovery sweeps the request
// records (SweepRequests): it removes PROCESSING orphans after
// idem.OrphanAge (15 minutes) and answers after idem.DoneTTL (24 hours),
// so a minute is far finer than the work needs.
const RequestSweepEvery = time.Minute

// RunRequestRecovery runs RecoverRequests at once (taking back what an
// earlier start of this node left in progress) and then every `every`
// (default half the request lease, the only delay its work has), and
// SweepRequests at once and then every RequestSweepEvery, until ctx is
// done. The node runs it for every bank; it returns ctx's error.
func (a *Adapter) RunRequestRecovery(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		every = a.lease / 2
	}
	recoverAt, sweepAt := time.NewTimer(0), time.NewTimer(0)
	defer recoverAt.Stop()
	defer sweepAt.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-recoverAt.C:
			if _, err := a.RecoverRequests(ctx); err != nil && ctx.Err() == nil {
				a.log.ErrorContext(ctx, "adapter.request_recovery_failed", "error", err.Error())
			}
			recoverAt.Reset(every)
		case <-sweepAt.C:
			if _, err := a.SweepRequests(ctx); err != nil && ctx.Err() == nil {
				a.log.ErrorContext(ctx, "adapter.request_sweep_failed", "error", err.Error())
			}
			sweepAt.Reset(RequestSweepEvery)
		}
	}
}
