package outbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/entitystate"
	"github.com/zcgw/zcgw/coordinator/failpoint"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/store"
)

// RunConfig configures Run and Pass.
type RunConfig struct {
	// Identity is the process whose claims Run makes: claim_owner is
	// Identity.Owner(Worker). At start Run takes back every claim of an
	// earlier start of Identity.Node (procid.Identity.IsEarlierSelf). Zero:
	// an ephemeral identity (nothing is taken back at start).
	Identity procid.Identity
	// Worker names the loop in the claim owner (default "outbox").
	Worker string
	// Idle is the longest sleep after a pass that found nothing to do
	// (default 1s). A posting queued in this process wakes Run at once
	// (Wake, after the enqueuing commit); Idle is how late Run notices one
	// queued by another process on the same file, or a claim whose lease
	// ran out. Run also wakes at the case-sweep pace.
	Idle time.Duration
	// Backoff is the pause after a pass that stopped because the core is
	// offline or not answering, or that failed (default 100ms, at least
	// Idle): each retry claims and records a posting, so retrying at Idle
	// would write two state-log rows every few milliseconds.
	Backoff time.Duration
	// Accounts is how many accounts one pass serves, one posting each
	// (default 64).
	Accounts int
	// CaseSweepEvery is how often Run opens the Cases a crash left
	// unopened (default 1s).
	CaseSweepEvery time.Duration
	// DrainLease is how long Run's drain lease lasts unrenewed (default
	// DefaultDrainLease): how long a killed holder keeps this outbox from
	// the other nodes. Run renews it every third of it.
	DrainLease time.Duration
	// Pipeline is how many passes Run keeps going at once (default 2):
	// while one batch waits for the core's replies the next is claimed and
	// sent (of other accounts: an account's head in flight is not
	// claimable). 1: one pass at a time.
	Pipeline int
}

func (cfg RunConfig) withDefaults(clk clock.Clock) RunConfig {
	if cfg.Identity.Node == "" {
		cfg.Identity = procid.Ephemeral("outbox", clk)
	}
	if cfg.Worker == "" {
		cfg.Worker = "outbox"
	}
	if cfg.Idle <= 0 {
		cfg.Idle = time.Second
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 100 * time.Millisecond
	}
	if cfg.Accounts <= 0 {
		cfg.Accounts = 64
	}
	if cfg.CaseSweepEvery <= 0 {
		cfg.CaseSweepEvery = time.Second
	}
	if cfg.Pipeline <= 0 {
		cfg.Pipeline = 2
	}
	if cfg.DrainLease <= 0 {
		cfg.DrainLease = DefaultDrainLease
	}
	return cfg
}

// Run is the outbox's own loop: it moves postings to the core until ctx is
// done, while it holds the outbox's drain lease (one node at a time per
// bank: AcquireDrainLease). Without the lease it waits, reading the lease
// every Idle, and takes it once it is released, expired, or held by an
// earlier start of this node. Holding it, it renews it every third of
// DrainLease; a lease lost to another holder stops the passes (their
// claims released as at a stop) and Run waits again.
//
// Under the lease: at start it takes back, at once, every claim an
// earlier start of this node held (each becomes IN_DOUBT and is settled by
// an inquiry by reference before anything is resent); claims of other
// owners wait for their lease (RecoverExpiredClaims). Then it repeats
// Pass: fair across accounts, one posting per account per pass, each
// bounded by the posting timeout. When ctx is done it releases whatever
// claims it still holds and the drain lease, in a context of its own, and
// returns nil.
func (o *Outbox) Run(ctx context.Context, cfg RunConfig) error {
	if o.core == nil {
		return errors.New("outbox: run: no Core configured")
	}
	cfg = cfg.withDefaults(o.clk)
	owner := cfg.Identity.Owner(cfg.Worker)
	waiting := ""
	for ctx.Err() == nil {
		holder, err := o.DrainLeaseHolder(ctx)
		if err == nil && (holder == "" || holder == owner || cfg.Identity.IsEarlierSelf(holder)) {
			var lease DrainLease
			if lease, err = o.AcquireDrainLease(ctx, cfg.Identity, owner, cfg.DrainLease); err == nil {
				o.log.InfoContext(ctx, "outbox.drain_lease_acquired", "owner", owner, "token", lease.Token)
				waiting = ""
				o.drainHeld(ctx, cfg, owner, lease)
				continue
			}
			if held, ok := errors.AsType[*LeaseHeldError](err); ok {
				holder, err = held.Holder, nil
			}
		}
		switch {
		case err != nil && ctx.Err() == nil:
			o.log.WarnContext(ctx, "outbox.drain_lease_failed", "err", err.Error())
		case err == nil && holder != waiting:
			waiting = holder
			o.log.InfoContext(ctx, "outbox.drain_lease_waiting", "holder", holder)
		}
		if !clock.Sleep(ctx, cfg.Idle) {
			return nil
		}
	}
	return nil
}

// drainHeld runs the passes while lease is held: until ctx is done (then
// it releases the lease) or the lease is lost.
func (o *Outbox) drainHeld(ctx context.Context, cfg RunConfig, owner string, lease DrainLease) {
	hctx, lost := context.WithCancel(ctx)
	defer lost()
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		for clock.Sleep(hctx, cfg.DrainLease/3) {
			next, err := o.RenewDrainLease(hctx, lease, cfg.DrainLease)
			switch {
			case errors.Is(err, ErrDrainLeaseLost):
				o.log.WarnContext(hctx, "outbox.drain_lease_lost", "owner", owner, "token", lease.Token)
				lost()
				return
			case err != nil:
				if hctx.Err() != nil {
					return
				}
				o.log.WarnContext(hctx, "outbox.drain_lease_renew_failed", "err", err.Error())
				if !o.clk.Now().Before(lease.Until) { // expired unrenewed: another node may hold it now
					o.log.WarnContext(hctx, "outbox.drain_lease_lost", "owner", owner, "token", lease.Token, "cause", "expired")
					lost()
					return
				}
			default:
				lease = next
			}
		}
	}()
	defer func() {
		lost()
		<-renewed
		rctx, cancel := o.detached(ctx)
		defer cancel()
		if n, err := o.ReleaseClaims(rctx, owner); err != nil {
			o.log.ErrorContext(rctx, "outbox.release_failed", "owner", owner, "err", err.Error())
		} else if n > 0 {
			o.log.WarnContext(rctx, "outbox.released", "owner", owner, "claims", n)
		}
		if ctx.Err() != nil { // a clean stop: the next node need not wait for expiry
			if err := o.ReleaseDrainLease(rctx, lease); err != nil {
				o.log.ErrorContext(rctx, "outbox.drain_lease_release_failed", "owner", owner, "err", err.Error())
			}
		}
	}()
	for {
		_, err := o.TakeBack(hctx, cfg.Identity)
		if err == nil {
			break
		}
		o.log.ErrorContext(hctx, "outbox.take_back_failed", "err", err.Error())
		if !clock.Sleep(hctx, cfg.Backoff) {
			return
		}
	}
	var wg sync.WaitGroup
	for range cfg.Pipeline - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.passLoop(hctx, cfg, owner, false)
		}()
	}
	o.passLoop(hctx, cfg, owner, true)
	wg.Wait()
}

// passLoop repeats passes until ctx is done; the lead loop also sweeps for
// missing Cases and unreported postings at the case-sweep pace.
func (o *Outbox) passLoop(ctx context.Context, cfg RunConfig, owner string, lead bool) {
	var lastCases time.Time
	for ctx.Err() == nil {
		sweep := false
		if now := o.clk.Now(); lead && (now.Sub(lastCases) >= cfg.CaseSweepEvery || now.Before(lastCases)) {
			lastCases, sweep = now, true
			if _, err := o.OpenMissingCases(ctx); err != nil && ctx.Err() == nil {
				o.log.WarnContext(ctx, "outbox.case_sweep_failed", "err", err.Error())
			}
		}
		woken := o.wakes()
		res, err := o.pass(ctx, owner, cfg.Accounts)
		if err != nil && ctx.Err() == nil {
			o.log.ErrorContext(ctx, "outbox.pass_failed", "err", err.Error())
		}
		// Final statuses are reported as soon as a pass produced some, and
		// at the sweep's pace for those a failed report or another path
		// (an overnight result file, an operator) left behind. One loop
		// reports at a time; what another loop skips the next report takes.
		if (sweep || res.Applied+res.Blocked > 0) && o.reporting.TryLock() {
			if _, err := o.ReportMissing(ctx); err != nil && ctx.Err() == nil {
				o.log.WarnContext(ctx, "outbox.report_failed", "err", err.Error())
			}
			o.reporting.Unlock()
		}
		switch {
		case err != nil || res.Stopped:
			if !clock.Sleep(ctx, cfg.Backoff) {
				return
			}
			continue
		case res.Claimed > 0:
			// The accounts it served may have their next postings
			// claimable now: a sleeping loop of this Run takes them.
			o.Wake()
			continue
		}
		// Nothing to do: sleep until a posting is queued here (Wake, also
		// one that came during the pass), the next case sweep, or Idle.
		pause := cfg.Idle
		if lead {
			pause = min(pause, cfg.CaseSweepEvery-o.clk.Now().Sub(lastCases))
		}
		if !o.sleep(ctx, woken, max(pause, time.Millisecond)) {
			return
		}
	}
}

// sleep waits for d, a Wake after the one numbered seen, or ctx's end
// (false).
func (o *Outbox) sleep(ctx context.Context, seen uint64, d time.Duration) bool {
	o.wakeMu.Lock()
	seq, ch := o.wakeSeq, o.wakeCh
	o.wakeMu.Unlock()
	if seq != seen {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ch:
	case <-ctx.Done():
		return false
	}
	return true
}

// wakes is the number of Wake calls so far.
func (o *Outbox) wakes() uint64 {
	o.wakeMu.Lock()
	defer o.wakeMu.Unlock()
	return o.wakeSeq
}

// Pass is one fair round over the outbox, as Run does it: claims whose
// lease ran out become IN_DOUBT; every IN_DOUBT posting is settled by an
// inquiry (up to cfg.Accounts); then the next posting of each account (up
// to cfg.Accounts accounts, taking turns from where the previous pass
// stopped) is sent. An account with thousands of postings waiting gets one
// per pass like every other, so it cannot starve the rest. The pass stops
// early when the core is offline or not answering. It is what the
// outbox-drain job repeats.
func (o *Outbox) Pass(ctx context.Context, cfg RunConfig) (DrainResult, error) {
	if o.core == nil {
		return DrainResult{}, errors.New("outbox: pass: no Core configured")
	}
	cfg = cfg.withDefaults(o.clk)
	return o.pass(ctx, cfg.Identity.Owner(cfg.Worker), cfg.Accounts)
}

func (o *Outbox) pass(ctx context.Context, owner string, accounts int) (DrainResult, error) {
	var res DrainResult
	if _, err := o.RecoverExpiredClaims(ctx); err != nil {
		return res, err
	}
	var doubt []int64
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		doubt, err = queryIDs(ctx, tx, `SELECT id FROM AdapterOutbox WHERE status = 'IN_DOUBT' AND route = 'MQ' ORDER BY id LIMIT ?`, accounts)
		return err
	})
	if err != nil {
		return res, fmt.Errorf("outbox: pass: %w", err)
	}
	for _, id := range doubt {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		c, ok, err := o.claimPicked(ctx, InDoubt, owner, `SELECT CAST(? AS BIGINT)`, id)
		if err != nil {
			return res, err
		}
		if !ok {
			continue // another claimer settled it first
		}
		if stop, err := o.resolveClaimed(ctx, c, &res); err != nil || stop {
			return res, err
		}
	}
	heads, err := o.heads(ctx, accounts)
	if err != nil {
		return res, err
	}
	// After a pass that stopped on an offline or silent core, the next one
	// probes with single postings (stopping at the first that fails again)
	// instead of claiming and releasing a whole batch every Backoff.
	o.mu.Lock()
	probe := o.probing
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		o.probing = res.Stopped
		o.mu.Unlock()
	}()
	if bc, ok := o.core.(BatchCore); ok && len(heads) > 1 && !probe {
		cs, err := o.claimHeads(ctx, owner, heads)
		if err != nil || len(cs) == 0 {
			return res, err
		}
		_, err = o.sendBatch(ctx, bc, cs, &res)
		return res, err
	}
	for _, h := range heads {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		c, ok, err := o.claimPicked(ctx, Pending, owner, `SELECT o.id FROM AdapterOutbox o WHERE o.id = ? AND `+claimable, h.id)
		if err != nil {
			return res, err
		}
		o.mu.Lock()
		o.cursor = h.key
		o.mu.Unlock()
		if !ok {
			continue
		}
		if stop, err := o.sendClaimed(ctx, c, &res); err != nil || stop {
			return res, err
		}
	}
	return res, nil
}

// claimHeads claims every claimable head in one write transaction (each
// row by its own guarded UPDATE, as claimPicked does; their state-log
// rows by one multi-row INSERT) and moves the turn cursor past the last
// of them.
func (o *Outbox) claimHeads(ctx context.Context, owner string, heads []head) ([]claim, error) {
	var cs []claim
	t := o.clk.Now()
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		cs = cs[:0]
		var facts []entitystate.Fact
		for _, h := range heads {
			c, ok, err := o.claimTx(ctx, tx, &facts, t, Pending, owner, `SELECT o.id FROM AdapterOutbox o WHERE o.id = ? AND `+claimable, h.id)
			if err != nil {
				return err
			}
			if ok {
				cs = append(cs, c)
			}
		}
		return o.recordFacts(ctx, tx, facts)
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: claim a batch: %w", err)
	}
	o.mu.Lock()
	o.cursor = heads[len(heads)-1].key
	o.mu.Unlock()
	for _, c := range cs {
		o.log.InfoContext(ctx, "outbox.claim", "id", c.id, "ref", c.p.Ref, "txid", c.p.TxID, "from", string(Pending), "owner", owner)
		failpoint.Hit("outbox.after-claim") // once per claim, as claimPicked: the chaos suite counts claims
	}
	return cs, nil
}

type head struct {
	id  int64
	key string // bank + NUL + account: the turn order
}

// heads returns the claimable first posting of up to n accounts, in turn
// order starting after the account the previous pass ended with.
func (o *Outbox) heads(ctx context.Context, n int) ([]head, error) {
	var all []head
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT o.id, o.bank, o.account FROM AdapterOutbox o
			WHERE o.id IN (SELECT MIN(id) FROM AdapterOutbox WHERE status IN ('PENDING','CLAIMED','IN_DOUBT','IN_FILE') GROUP BY bank, account)
			  AND `+claimable)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var h head
			var bank, account string
			if err := rows.Scan(&h.id, &bank, &account); err != nil {
				return err
			}
			h.key = bank + "\x00" + account
			all = append(all, h)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: pass: heads: %w", err)
	}
	// Ordered here, by bytes as the cursor is compared: a PostgreSQL
	// database's collation may order text otherwise.
	slices.SortFunc(all, func(a, b head) int { return strings.Compare(a.key, b.key) })
	o.mu.Lock()
	cursor := o.cursor
	o.mu.Unlock()
	start := 0
	for start < len(all) && all[start].key <= cursor {
		start++
	}
	out := make([]head, 0, min(n, len(all)))
	for i := 0; i < len(all) && len(out) < n; i++ {
		out = append(out, all[(start+i)%len(all)])
	}
	return out, nil
}

func queryIDs(ctx context.Context, tx *store.Tx, q string, args ...any) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// TakeBack hands every claim made by an earlier start of id's node to
// in-doubt resolution at once, without waiting for its lease: that process
// is dead (this start holds the node's lock). Each row becomes IN_DOUBT
// (it may have been sent before the process died) and is settled by an
// inquiry by reference before anything is resent. Claims of other owners
// are left to their lease.
func (o *Outbox) TakeBack(ctx context.Context, id procid.Identity) (int, error) {
	if id.Node == "" {
		return 0, nil
	}
	prefix := id.NodePrefix()
	n, err := o.takeOver(ctx, `substr(claim_owner, 1, ?) = ?`, []any{len(prefix), prefix}, id.IsEarlierSelf,
		"OutboxClaimRecovered", "claim of an earlier start of this node taken back at restart; outcome unknown", "earlier_start")
	if err != nil {
		return 0, fmt.Errorf("outbox: take back claims of earlier starts: %w", err)
	}
	return n, nil
}

// RecoverExpiredClaims hands every CLAIMED row whose lease has run out to
// in-doubt resolution (IN_DOUBT, never PENDING: a claimer that died may
// have sent the posting). A row claimed before leases were stored is judged
// by claimed_at and this Outbox's lease.
func (o *Outbox) RecoverExpiredClaims(ctx context.Context) (int, error) {
	now := o.clk.Now()
	n, err := o.takeOver(ctx, `(claim_until < ? OR (claim_until IS NULL AND claimed_at < ?))`,
		[]any{sortableStamp(now), sortableStamp(now.Add(-o.lease))}, nil,
		"OutboxClaimRecovered", "claim lease expired; outcome unknown", "lease_expired")
	if err != nil {
		return 0, fmt.Errorf("outbox: recover expired claims: %w", err)
	}
	return n, nil
}

// ReleaseClaims gives up every claim owner still holds (a stopping loop):
// the rows become IN_DOUBT, so whatever the claimer may have sent is asked
// for by reference before anything is resent. The loop's own postings
// release their claims as they end (finish); this catches a claim whose
// commit outlived its caller's context.
func (o *Outbox) ReleaseClaims(ctx context.Context, owner string) (int, error) {
	n, err := o.takeOver(ctx, `claim_owner = ?`, []any{owner}, nil,
		"OutboxClaimReleased", "claim released when its holder stopped; outcome unknown", "released")
	if err != nil {
		return 0, fmt.Errorf("outbox: release claims of %s: %w", owner, err)
	}
	return n, nil
}

// takeOver moves the CLAIMED MQ rows matching where (and keep, when set,
// on their owner) to IN_DOUBT. It reads first, so a pass that finds
// nothing never takes the write lock; each row's UPDATE is guarded by the
// claim token it read, so a claim that changed meanwhile is left alone.
func (o *Outbox) takeOver(ctx context.Context, where string, args []any, keep func(owner string) bool,
	event, lastErr, cause string) (int, error) {
	type cand struct {
		id           int64
		owner, token string
	}
	var cands []cand
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, COALESCE(claim_owner,''), claim_token FROM AdapterOutbox
			WHERE status = 'CLAIMED' AND route = 'MQ' AND `+where+` ORDER BY id`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c cand
			if err := rows.Scan(&c.id, &c.owner, &c.token); err != nil {
				return err
			}
			if keep == nil || keep(c.owner) {
				cands = append(cands, c)
			}
		}
		return rows.Err()
	})
	if err != nil || len(cands) == 0 {
		return 0, err
	}
	var done []cand
	now := clock.Stamp(o.clk.Now())
	err = o.db.Write(ctx, func(tx *store.Tx) error {
		done = done[:0]
		for _, c := range cands {
			res, err := tx.ExecContext(ctx, `UPDATE AdapterOutbox SET status = 'IN_DOUBT', claim_token = NULL, claimed_at = NULL,
				claim_owner = NULL, claim_until = NULL, updated_at = ?, last_error = ?
				WHERE id = ? AND status = 'CLAIMED' AND claim_token = ?`, now, lastErr, c.id, c.token)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				continue
			}
			if err := o.stateLog(ctx, tx, c.id, event, Claimed, InDoubt, "", o.actor,
				map[string]any{"owner": c.owner, "cause": cause}); err != nil {
				return err
			}
			done = append(done, c)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, c := range done {
		o.log.WarnContext(ctx, "outbox.recover", "id", c.id, "owner", c.owner, "cause", cause)
	}
	return len(done), nil
}
