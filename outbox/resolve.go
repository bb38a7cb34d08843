package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ResolveInDoubt settles IN_DOUBT rows, oldest first, one claim at a time.
// For each it asks the core by reference before anything else:
//   - the core has applied it: APPLIED, nothing is sent;
//   - the core refused it: BLOCKED, and a Case is opened;
//   - the core has no trace of it: only then is it sent again, by the same
//     claimer, and the new outcome recorded as in Drain;
//   - the inquiry is not answered: the row goes back to IN_DOUBT and the
//     call stops (the core is not answering; nothing is resent).
func (o *Outbox) ResolveInDoubt(ctx context.Context) (DrainResult, error) {
	var res DrainResult
	if o.core == nil {
		return res, errors.New("outbox: resolve: no Core configured")
	}
	for {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		c, ok, err := o.claimOne(ctx, InDoubt)
		if err != nil {
			return res, err
		}
		if !ok {
			return res, nil
		}
		if stop, err := o.resolveClaimed(ctx, c, &res); err != nil || stop {
			return res, err
		}
	}
}

func (o *Outbox) resolve(ctx context.Context, c claim) (res DrainResult, stop bool, err error) {
	lr, lerr := o.core.Lookup(ctx, c.p.Ref)
	if lerr != nil {
		fenced, err := o.finish(ctx, c, InDoubt, "OutboxLookupUnanswered", "", lerr.Error(), "", false, true)
		if fenced {
			res.Fenced++
		} else if err == nil {
			res.InDoubt++
		}
		o.log.WarnContext(ctx, "outbox.lookup_failed", "id", c.id, "ref", c.p.Ref, "err", lerr.Error())
		return res, true, err
	}
	o.log.InfoContext(ctx, "outbox.lookup", "id", c.id, "ref", c.p.Ref, "state", string(lr.State))
	switch lr.State {
	case LookupApplied:
		fenced, err := o.finish(ctx, c, Applied, "OutboxResolvedApplied", "", "", lr.CoreRef, false, true)
		if fenced {
			res.Fenced++
		} else if err == nil {
			res.Applied++
			o.log.InfoContext(ctx, "outbox.apply", "id", c.id, "ref", c.p.Ref, "txid", c.p.TxID, "core_ref", lr.CoreRef, "via", "lookup")
		}
		return res, false, err
	case LookupRefused:
		fenced, err := o.finish(ctx, c, Blocked, "OutboxResolvedBlocked", lr.ReasonCode, "core refused (found by inquiry)", "", false, true)
		if fenced {
			res.Fenced++
		} else if err == nil {
			res.Blocked++
			o.log.WarnContext(ctx, "outbox.blocked", "id", c.id, "ref", c.p.Ref, "txid", c.p.TxID, "reason_code", lr.ReasonCode, "via", "lookup")
			o.openCase(ctx, c.id, c.token, c.p, lr.ReasonCode, "core refused the posting (found by inquiry)")
		}
		return res, false, err
	case LookupUnknown:
		o.log.InfoContext(ctx, "outbox.resend", "id", c.id, "ref", c.p.Ref, "txid", c.p.TxID)
		res.Resent++
		r, err := o.send(ctx, c, true)
		res.add(r)
		return res, r.InDoubt > 0 || r.NotSent > 0, err
	default:
		// An answer we do not understand proves nothing: keep it in doubt.
		msg := fmt.Sprintf("unrecognised inquiry answer %q", lr.State)
		fenced, err := o.finish(ctx, c, InDoubt, "OutboxLookupUnanswered", "", msg, "", false, true)
		if fenced {
			res.Fenced++
		} else if err == nil {
			res.InDoubt++
		}
		return res, true, err
	}
}

// RecoverStaleClaims hands CLAIMED rows whose claim is older than
// olderThan to the in-doubt resolution: they become IN_DOUBT (never
// PENDING), because a claimer that died may have sent the posting before
// dying. Its old claim token stops matching, so a late outcome from the
// old claimer is discarded (fenced). olderThan must exceed the longest
// time a live claimer can spend between claiming and handing the posting
// to the transport plus the reply timeout; see docs/outbox.md.
func (o *Outbox) RecoverStaleClaims(ctx context.Context, olderThan time.Duration) (int, error) {
	if olderThan <= 0 {
		return 0, fmt.Errorf("outbox: recover: olderThan must be positive, got %s", olderThan)
	}
	n, err := o.takeOver(ctx, `claimed_at < ?`, []any{sortableStamp(o.clk.Now().Add(-olderThan))}, nil,
		"OutboxClaimRecovered", "claim abandoned; outcome unknown", "older_than "+olderThan.String())
	if err != nil {
		return 0, fmt.Errorf("outbox: recover stale claims: %w", err)
	}
	return n, nil
}
