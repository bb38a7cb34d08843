package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/failpoint"
	"github.com/zcgw/zcgw/coordinator/store"
)

// DrainResult counts what one Drain (or ResolveInDoubt) call did.
type DrainResult struct {
	Claimed  int // rows this call won
	Applied  int // rows that became APPLIED
	Blocked  int // rows the core refused (BLOCKED, Case requested)
	InDoubt  int // rows left IN_DOUBT (sent, no answer; or inquiry unanswered)
	NotSent  int // rows put back to PENDING because they were provably not sent
	Resent   int // in-doubt rows sent again after the core proved it had no trace
	Fenced   int // outcomes discarded because the claim had been recovered by someone else
	Stopped  bool
	StopNote string // why the call stopped early (core offline, not answering)
}

func (r *DrainResult) add(o DrainResult) {
	r.Claimed += o.Claimed
	r.Applied += o.Applied
	r.Blocked += o.Blocked
	r.InDoubt += o.InDoubt
	r.NotSent += o.NotSent
	r.Resent += o.Resent
	r.Fenced += o.Fenced
}

// claimable is the guard that keeps per-account order: a PENDING row may be
// claimed only when no earlier row of the same account is still PENDING,
// CLAIMED or IN_DOUBT, and (for a reversal) when the reversed posting is
// neither unsent, in flight, in doubt nor BLOCKED awaiting an operator.
// BLOCKED rows do not hold back later postings of the account.
//
// Only RouteMQ rows are claimable. FILE rows (PENDING or IN_FILE) still
// hold back every later posting of their account, whatever its route.
const claimable = `o.status = 'PENDING' AND o.route = 'MQ'
	AND NOT EXISTS (SELECT 1 FROM AdapterOutbox e
		WHERE e.bank = o.bank AND e.account = o.account AND e.id < o.id
		  AND e.status IN ('PENDING','CLAIMED','IN_DOUBT','IN_FILE'))
	AND (o.reversal_of IS NULL OR NOT EXISTS (SELECT 1 FROM AdapterOutbox r
		WHERE r.ref = o.reversal_of AND r.status IN ('PENDING','CLAIMED','IN_DOUBT','BLOCKED','IN_FILE')))`

const claimedCols = `id, ref, txid, bank, account, kind, amount, COALESCE(reversal_of,''), route`

type claim struct {
	id    int64
	p     Posting
	token string
}

// claimOne moves one row from `from` to CLAIMED for this Outbox's own
// owner (Drain, ResolveInDoubt) and returns it, or ok=false when nothing is
// claimable.
func (o *Outbox) claimOne(ctx context.Context, from Status) (c claim, ok bool, err error) {
	pick := `SELECT o.id FROM AdapterOutbox o WHERE ` + claimable + ` ORDER BY o.id LIMIT 1`
	if from == InDoubt {
		pick = `SELECT id FROM AdapterOutbox WHERE status = 'IN_DOUBT' AND route = 'MQ' ORDER BY id LIMIT 1`
	}
	return o.claimPicked(ctx, from, o.owner, pick)
}

// claimPicked moves the row that the query pick selects from `from` to
// CLAIMED for owner with a guarded UPDATE, stamping the claim's lease
// (claim_until). The UPDATE both picks and guards the row, so two claimers
// can never win the same row.
func (o *Outbox) claimPicked(ctx context.Context, from Status, owner, pick string, args ...any) (c claim, ok bool, err error) {
	c.token = newToken()
	t := o.clk.Now()
	now, at, until := clock.Stamp(t), sortableStamp(t), sortableStamp(t.Add(o.lease))
	err = o.db.Write(ctx, func(tx *store.Tx) error {
		var kind, route string
		row := tx.QueryRowContext(ctx, `UPDATE AdapterOutbox
			SET status = 'CLAIMED', claim_token = ?, claimed_at = ?, claim_owner = ?, claim_until = ?, updated_at = ?
			WHERE id = (`+pick+`) AND status = ?
			RETURNING `+claimedCols, append(append([]any{c.token, at, owner, until, now}, args...), string(from))...)
		err := row.Scan(&c.id, &c.p.Ref, &c.p.TxID, &c.p.Bank, &c.p.Account, &kind, &c.p.Amount, &c.p.ReversalOf, &route)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		c.p.Kind, c.p.Route = Kind(kind), Route(route)
		ok = true
		return o.stateLog(ctx, tx, c.id, "OutboxClaimed", from, Claimed, "", o.actor, map[string]any{"ref": c.p.Ref, "owner": owner})
	})
	if err != nil {
		return c, false, fmt.Errorf("outbox: claim: %w", err)
	}
	if ok {
		o.log.InfoContext(ctx, "outbox.claim", "id", c.id, "ref", c.p.Ref, "txid", c.p.TxID, "from", string(from), "owner", owner)
		failpoint.Hit("outbox.after-claim")
	}
	return c, ok, nil
}

// detached is the context an outcome is recorded in: not the caller's, so a
// deadline or a cancel that ends the posting's work still lets the claim be
// released (PENDING or IN_DOUBT, as the outcome demands), bounded by the
// record timeout.
func (o *Outbox) detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), o.recTO)
}

// work bounds one posting's work under its claim (inquiry, send, reply).
func (o *Outbox) work(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, o.postTO)
}

// finish records the outcome of a claim with an UPDATE fenced by the claim
// token, in a context detached from ctx (see detached). fenced=true means the claim had been taken away (stale-claim
// recovery) and the row was left to whoever holds it now.
func (o *Outbox) finish(ctx context.Context, c claim, to Status, event, reason, lastErr, coreRef string, sent, looked bool) (fenced bool, err error) {
	ctx, cancel := o.detached(ctx)
	defer cancel()
	t := o.clk.Now()
	now := clock.Stamp(t)
	err = o.db.Write(ctx, func(tx *store.Tx) error {
		var applied, caseTok, caseAt any
		if to == Applied {
			applied = now
		}
		if to == Blocked {
			caseTok, caseAt = c.token, sortableStamp(t)
		}
		res, err := tx.ExecContext(ctx, `UPDATE AdapterOutbox SET status = ?, claim_token = NULL, claimed_at = NULL,
			claim_owner = NULL, claim_until = NULL, updated_at = ?, sends = sends + ?, lookups = lookups + ?,
			reason_code = COALESCE(?, reason_code), last_error = ?, core_ref = COALESCE(?, core_ref),
			applied_at = COALESCE(?, applied_at),
			case_token = COALESCE(?, case_token), case_claimed_at = COALESCE(?, case_claimed_at)
			WHERE id = ? AND status = 'CLAIMED' AND claim_token = ?`,
			string(to), now, b2i(sent), b2i(looked), nullStr(reason), nullStr(lastErr), nullStr(coreRef),
			applied, caseTok, caseAt, c.id, c.token)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			fenced = true
			return nil
		}
		return o.stateLog(ctx, tx, c.id, event, Claimed, to, reason, o.actor, map[string]any{"ref": c.p.Ref, "txid": c.p.TxID})
	})
	if err != nil {
		return false, fmt.Errorf("outbox: record %s for %d: %w", to, c.id, err)
	}
	if fenced {
		o.log.WarnContext(ctx, "outbox.fenced", "id", c.id, "ref", c.p.Ref, "outcome", string(to))
	}
	return fenced, nil
}

// Drain sends up to limit claimable postings, one claim at a time. It
// first opens any Case still missing for a BLOCKED row. It stops early when
// the core is offline (a row went back to PENDING) or not answering (a row
// went IN_DOUBT): the next Drain, ResolveInDoubt or sweep continues. It is
// safe to run from many goroutines and processes at once.
func (o *Outbox) Drain(ctx context.Context, limit int) (DrainResult, error) {
	var res DrainResult
	if o.core == nil {
		return res, errors.New("outbox: drain: no Core configured")
	}
	if _, err := o.OpenMissingCases(ctx); err != nil {
		o.log.WarnContext(ctx, "outbox.case_sweep_failed", "err", err.Error())
	}
	for res.Claimed < limit {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		c, ok, err := o.claimOne(ctx, Pending)
		if err != nil {
			return res, err
		}
		if !ok {
			return res, nil
		}
		if stop, err := o.sendClaimed(ctx, c, &res); err != nil || stop {
			return res, err
		}
	}
	return res, nil
}

// sendClaimed counts the claim c into res, sends it under the posting's
// work deadline and adds the outcome. stop is true when the pass must end
// because the core is offline or not answering (res says so).
func (o *Outbox) sendClaimed(ctx context.Context, c claim, res *DrainResult) (stop bool, err error) {
	res.Claimed++
	wctx, cancel := o.work(ctx)
	r, err := o.send(wctx, c, false)
	cancel()
	res.add(r)
	if err != nil {
		return true, err
	}
	if r.NotSent > 0 || r.InDoubt > 0 {
		res.Stopped, res.StopNote = true, "core offline or not answering"
		return true, nil
	}
	return false, nil
}

// resolveClaimed is sendClaimed for an IN_DOUBT claim: it asks the core by
// reference first (resolve).
func (o *Outbox) resolveClaimed(ctx context.Context, c claim, res *DrainResult) (stop bool, err error) {
	res.Claimed++
	wctx, cancel := o.work(ctx)
	r, stop, err := o.resolve(wctx, c)
	cancel()
	res.add(r)
	if err != nil {
		return true, err
	}
	if stop {
		res.Stopped, res.StopNote = true, "core not answering inquiries"
		return true, nil
	}
	return false, nil
}

// send hands a claimed posting to the core and records the outcome.
func (o *Outbox) send(ctx context.Context, c claim, looked bool) (DrainResult, error) {
	var res DrainResult
	ar, err := o.core.Apply(ctx, c.p)
	kind, refused := classify(err)
	var fenced bool
	var ferr error
	switch kind {
	case outApplied:
		fenced, ferr = o.finish(ctx, c, Applied, "OutboxApplied", "", "", ar.CoreRef, true, looked)
		if ferr == nil && !fenced {
			res.Applied++
			o.log.InfoContext(ctx, "outbox.apply", "id", c.id, "ref", c.p.Ref, "txid", c.p.TxID, "core_ref", ar.CoreRef)
		}
	case outRefused:
		fenced, ferr = o.finish(ctx, c, Blocked, "OutboxBlocked", refused.ReasonCode, refused.Message, "", true, looked)
		if ferr == nil && !fenced {
			res.Blocked++
			o.log.WarnContext(ctx, "outbox.blocked", "id", c.id, "ref", c.p.Ref, "txid", c.p.TxID, "reason_code", refused.ReasonCode)
			o.openCase(ctx, c.id, c.token, c.p, refused.ReasonCode, refused.Message)
		}
	case outNotSent:
		fenced, ferr = o.finish(ctx, c, Pending, "OutboxNotSent", "", err.Error(), "", false, looked)
		if ferr == nil && !fenced {
			res.NotSent++
			o.log.InfoContext(ctx, "outbox.not_sent", "id", c.id, "ref", c.p.Ref, "err", err.Error())
		}
	default:
		fenced, ferr = o.finish(ctx, c, InDoubt, "OutboxInDoubt", "", err.Error(), "", true, looked)
		if ferr == nil && !fenced {
			res.InDoubt++
			o.log.WarnContext(ctx, "outbox.in_doubt", "id", c.id, "ref", c.p.Ref, "txid", c.p.TxID, "err", err.Error())
		}
	}
	if fenced {
		res.Fenced++
	}
	return res, ferr
}

// sortableStamp is a fixed-width UTC instant for the columns this package
// compares as strings (claimed_at, case_claimed_at): clock.Stamp trims
// trailing zeros of the fraction, so two of its stamps within the same
// second do not always sort in time order.
func sortableStamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z") }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}
