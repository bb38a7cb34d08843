package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/entitystate"
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
	t := o.clk.Now()
	err = o.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		c, ok, err = o.claimTx(ctx, tx, nil, t, from, owner, pick, args...)
		return err
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

// claimTx is claimPicked's guarded UPDATE and state-log line, in tx (the
// line appended to facts when not nil: stateLogTo).
func (o *Outbox) claimTx(ctx context.Context, tx *store.Tx, facts *[]entitystate.Fact, t time.Time, from Status, owner, pick string, args ...any) (c claim, ok bool, err error) {
	c.token = newToken()
	now, at, until := clock.Stamp(t), sortableStamp(t), sortableStamp(t.Add(o.lease))
	var kind, route string
	row := tx.QueryRowContext(ctx, `UPDATE AdapterOutbox
		SET status = 'CLAIMED', claim_token = ?, claimed_at = ?, claim_owner = ?, claim_until = ?, updated_at = ?
		WHERE id = (`+pick+`) AND status = ?
		RETURNING `+claimedCols, append(append([]any{c.token, at, owner, until, now}, args...), string(from))...)
	err = row.Scan(&c.id, &c.p.Ref, &c.p.TxID, &c.p.Bank, &c.p.Account, &kind, &c.p.Amount, &c.p.ReversalOf, &route)
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, err
	}
	c.p.Kind, c.p.Route = Kind(kind), Route(route)
	return c, true, o.stateLogTo(ctx, tx, facts, c.id, "OutboxClaimed", from, Claimed, "", o.actor, map[string]any{"ref": c.p.Ref, "owner": owner})
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
	err = o.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		fenced, err = o.finishTx(ctx, tx, nil, t, c, to, event, reason, lastErr, coreRef, sent, looked)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("outbox: record %s for %d: %w", to, c.id, err)
	}
	if fenced {
		o.log.WarnContext(ctx, "outbox.fenced", "id", c.id, "ref", c.p.Ref, "outcome", string(to))
	}
	return fenced, nil
}

// finishTx is finish's guarded UPDATE and state-log line, in tx (the line
// appended to facts when not nil: stateLogTo).
func (o *Outbox) finishTx(ctx context.Context, tx *store.Tx, facts *[]entitystate.Fact, t time.Time, c claim, to Status, event, reason, lastErr, coreRef string,
	sent, looked bool) (fenced bool, err error) {
	now := clock.Stamp(t)
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
		return false, err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return true, nil
	}
	return false, o.stateLogTo(ctx, tx, facts, c.id, event, Claimed, to, reason, o.actor, map[string]any{"ref": c.p.Ref, "txid": c.p.TxID})
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
	ar, err := o.core.Apply(ctx, c.p)
	oc := outcomeOf(c, ar, err, looked)
	fenced, ferr := o.finish(ctx, c, oc.to, oc.event, oc.reason, oc.lastErr, oc.coreRef, oc.sent, looked)
	var res DrainResult
	if ferr == nil {
		o.recorded(ctx, c, oc, fenced, &res)
	}
	return res, ferr
}

// outcome is how a claim's Apply answer is recorded.
type outcome struct {
	kind                                  outcomeKind
	to                                    Status
	event, reason, lastErr, coreRef, note string
	sent                                  bool
	refused                               *RefusedError
}

func outcomeOf(c claim, ar ApplyResult, err error, looked bool) outcome {
	kind, refused := classify(err)
	switch kind {
	case outApplied:
		return outcome{kind: kind, to: Applied, event: "OutboxApplied", coreRef: ar.CoreRef, sent: true}
	case outRefused:
		return outcome{kind: kind, to: Blocked, event: "OutboxBlocked", reason: refused.ReasonCode, lastErr: refused.Message,
			sent: true, refused: refused}
	case outNotSent:
		return outcome{kind: kind, to: Pending, event: "OutboxNotSent", lastErr: err.Error()}
	}
	return outcome{kind: kind, to: InDoubt, event: "OutboxInDoubt", lastErr: err.Error(), sent: true}
}

// recorded counts and logs an outcome whose record committed, and opens
// the Case of a refusal.
func (o *Outbox) recorded(ctx context.Context, c claim, oc outcome, fenced bool, res *DrainResult) {
	if fenced {
		res.Fenced++
		return
	}
	switch oc.kind {
	case outApplied:
		res.Applied++
		o.log.InfoContext(ctx, "outbox.apply", "id", c.id, "ref", c.p.Ref, "txid", c.p.TxID, "core_ref", oc.coreRef)
	case outRefused:
		res.Blocked++
		o.log.WarnContext(ctx, "outbox.blocked", "id", c.id, "ref", c.p.Ref, "txid", c.p.TxID, "reason_code", oc.reason)
		o.openCase(ctx, c.id, c.token, c.p, oc.reason, oc.refused.Message)
	case outNotSent:
		res.NotSent++
		o.log.InfoContext(ctx, "outbox.not_sent", "id", c.id, "ref", c.p.Ref, "err", oc.lastErr)
	default:
		res.InDoubt++
		o.log.WarnContext(ctx, "outbox.in_doubt", "id", c.id, "ref", c.p.Ref, "txid", c.p.TxID, "err", oc.lastErr)
	}
}

// sendBatch hands claimed postings (of distinct accounts) to a BatchCore
// in one go and records every outcome in one write transaction (each
// row's UPDATE fenced by its own claim token, as finish does). stop is
// true when the core is offline or not answering.
func (o *Outbox) sendBatch(ctx context.Context, bc BatchCore, cs []claim, res *DrainResult) (stop bool, err error) {
	res.Claimed += len(cs)
	ps := make([]Posting, len(cs))
	for i, c := range cs {
		ps[i] = c.p
	}
	wctx, cancel := o.work(ctx)
	answers := bc.ApplyBatch(wctx, ps)
	cancel()
	ocs := make([]outcome, len(cs))
	for i, c := range cs {
		ocs[i] = outcomeOf(c, answers[i].ApplyResult, answers[i].Err, false)
	}
	rctx, rcancel := o.detached(ctx)
	defer rcancel()
	fenced := make([]bool, len(cs))
	t := o.clk.Now()
	err = o.db.Write(rctx, func(tx *store.Tx) error {
		var facts []entitystate.Fact
		for i, c := range cs {
			oc := ocs[i]
			var err error
			if fenced[i], err = o.finishTx(rctx, tx, &facts, t, c, oc.to, oc.event, oc.reason, oc.lastErr, oc.coreRef, oc.sent, false); err != nil {
				return err
			}
		}
		return o.recordFacts(rctx, tx, facts)
	})
	if err != nil {
		return true, fmt.Errorf("outbox: record a batch of %d outcomes: %w", len(cs), err)
	}
	for i, c := range cs {
		if fenced[i] {
			o.log.WarnContext(rctx, "outbox.fenced", "id", c.id, "ref", c.p.Ref, "outcome", string(ocs[i].to))
		}
		o.recorded(rctx, c, ocs[i], fenced[i], res)
	}
	for _, oc := range ocs {
		if oc.kind == outNotSent || oc.kind == outInDoubt {
			res.Stopped, res.StopNote = true, "core offline or not answering"
			return true, nil
		}
	}
	return false, nil
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
