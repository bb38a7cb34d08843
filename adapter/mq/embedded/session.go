package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/coordinator/store"
)

type pendingPut struct {
	queue string
	msg   *mq.Message
}

type session struct {
	c  *conn
	id int64

	mu     sync.Mutex
	closed bool
	puts   []pendingPut
	claims int64               // rows this session holds (claim_conn, claim_session)
	got    map[string]struct{} // queues with claimed rows, to wake getters on rollback
}

func (s *session) usable(op, queue string) error {
	if s.closed {
		return &mq.Error{Reason: mq.ReasonHConnError, Op: op, Queue: queue, Cause: errors.New("session closed")}
	}
	return s.c.usable(op, queue)
}

func (s *session) Put(ctx context.Context, queue string, msg *mq.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable("put", queue); err != nil {
		return err
	}
	if err := mq.ValidateForPut(queue, msg); err != nil {
		return err
	}
	if err := s.c.requireQueue(ctx, "put", queue); err != nil {
		return err
	}
	if msg.MsgID.IsZero() {
		msg.MsgID = mq.NewID()
	}
	msg.PutTime = s.c.t.opts.Clock.Now()
	cp := msg.Clone()
	cp.BackoutCount = 0
	s.puts = append(s.puts, pendingPut{queue: queue, msg: cp})
	return nil
}

func (s *session) Get(ctx context.Context, queue string, match mq.Match) (*mq.Message, error) {
	msgs, err := s.getN(ctx, "get", queue, 1, []mq.Match{match})
	if err != nil {
		return nil, err
	}
	return msgs[0], nil
}

// GetBatch takes up to max messages selected by any of matches in one
// claiming statement (mq.BatchGetter).
func (s *session) GetBatch(ctx context.Context, queue string, max int, matches ...mq.Match) ([]*mq.Message, error) {
	return s.getN(ctx, "get", queue, mq.BatchMax(max), matches)
}

// TakeBatch is mq.Taker's: GetBatch and Commit as one durable step. With
// no unit of work open it removes the messages with one DELETE …
// RETURNING in one write transaction (one commit where GetBatch's claim
// and Commit's removal are two); with one open it is GetBatch then Commit.
func (s *session) TakeBatch(ctx context.Context, queue string, max int, matches ...mq.Match) ([]*mq.Message, error) {
	s.mu.Lock()
	open := s.claims > 0 || len(s.puts) > 0
	s.mu.Unlock()
	if open {
		return mq.GetThenCommit(ctx, s, queue, max, matches...)
	}
	return s.getNMode(ctx, "get", queue, mq.BatchMax(max), matches, true)
}

// getN waits until at least one message selected by matches is there
// (woken by commits on this file in this process, or by the fallback poll
// for other processes) and claims up to n of them.
func (s *session) getN(ctx context.Context, op, queue string, n int, matches []mq.Match) ([]*mq.Message, error) {
	return s.getNMode(ctx, op, queue, n, matches, false)
}

// getNMode is getN; take=true removes the messages at once (TakeBatch)
// instead of claiming them for the unit of work.
func (s *session) getNMode(ctx context.Context, op, queue string, n int, matches []mq.Match, take bool) ([]*mq.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(op, queue); err != nil {
		return nil, err
	}
	if err := s.c.requireQueue(context.WithoutCancel(ctx), op, queue); err != nil {
		return nil, err
	}
	poll := time.NewTimer(s.c.t.opts.PollInterval)
	defer poll.Stop()
	for {
		wake := s.c.hub.wait(queue)
		msgs, err := s.tryGet(context.WithoutCancel(ctx), queue, matches, n, take)
		if err != nil || len(msgs) > 0 {
			return msgs, err
		}
		if ctx.Err() != nil {
			return nil, &mq.Error{Reason: mq.ReasonNoMsgAvailable, Op: op, Queue: queue, Cause: ctx.Err()}
		}
		poll.Reset(s.c.t.opts.PollInterval)
		select {
		case <-wake:
		case <-poll.C:
		case <-ctx.Done():
		}
		if err := s.usable(op, queue); err != nil {
			return nil, err
		}
	}
}

const claimSQL = `UPDATE mq_message SET claim_conn = ?, claim_session = ?, claimed_at = ?
WHERE claim_conn IS NULL AND seq IN (
  SELECT seq FROM mq_message
  WHERE queue = ? AND claim_conn IS NULL AND (expires_at IS NULL OR expires_at > ?) %s
  ORDER BY priority DESC, seq LIMIT ?)
RETURNING seq, msg_id, correl_id, reply_to, persistent, priority, put_at, expires_at, backout_count, properties, body`

// takeSQL removes what claimSQL would claim (TakeBatch).
const takeSQL = `DELETE FROM mq_message
WHERE claim_conn IS NULL AND seq IN (
  SELECT seq FROM mq_message
  WHERE queue = ? AND claim_conn IS NULL AND (expires_at IS NULL OR expires_at > ?) %s
  ORDER BY priority DESC, seq LIMIT ?)
RETURNING seq, msg_id, correl_id, reply_to, persistent, priority, put_at, expires_at, backout_count, properties, body`

// matchFilter is the SQL condition selecting the messages any of matches
// takes ("" for every message), with its arguments.
func matchFilter(matches []mq.Match) (string, []any) {
	var conds []string
	var args []any
	for _, m := range matches {
		var c []string
		if !m.MsgID.IsZero() {
			c = append(c, "msg_id = ?")
			args = append(args, m.MsgID[:])
		}
		if !m.CorrelID.IsZero() {
			c = append(c, "correl_id = ?")
			args = append(args, m.CorrelID[:])
		}
		if len(c) == 0 {
			return "", nil // Any
		}
		conds = append(conds, "("+strings.Join(c, " AND ")+")")
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " AND (" + strings.Join(conds, " OR ") + ")", args
}

// getFilter is the condition every get adds to its selection: never a
// message of a queue another connection claimed as its exclusive consumer,
// and only messages matches selects.
func (s *session) getFilter(queue string, matches []mq.Match) (string, []any) {
	filter := " AND NOT EXISTS (SELECT 1 FROM mq_consumer k WHERE k.queue = ? AND k.conn <> ?)"
	fargs := []any{queue, s.c.id}
	mf, margs := matchFilter(matches)
	return filter + mf, append(fargs, margs...)
}

// gotRow is one message row a get claimed or took, before decoding.
type gotRow struct {
	seq             int64
	msg             *mq.Message
	msgID, correlID []byte
	persistent      bool
	putAt           string
	expiresAt       sql.NullString
	props           []byte
}

// claimTx discards the queue's expired messages and claims (take=false)
// or removes (take=true) up to n of those the filter selects, in tx.
func (s *session) claimTx(ctx context.Context, tx *store.Tx, queue, filter string, fargs []any, n int, take bool, nowS string) (got []gotRow, expired int64, err error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM mq_message
		WHERE queue = ? AND claim_conn IS NULL AND expires_at IS NOT NULL AND expires_at <= ?`, queue, nowS)
	if err != nil {
		return nil, 0, err
	}
	if expired, err = res.RowsAffected(); err != nil {
		return nil, 0, err
	}
	q, args := claimSQL, append([]any{s.c.id, s.id, nowS}, queue, nowS)
	if take {
		q, args = takeSQL, []any{queue, nowS}
	}
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(q, filter), append(append(args, fargs...), n)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		r := gotRow{msg: &mq.Message{}}
		m := r.msg
		if err := rows.Scan(&r.seq, &r.msgID, &r.correlID, &m.ReplyTo, &r.persistent, &m.Priority, &r.putAt,
			&r.expiresAt, &m.BackoutCount, &r.props, &m.Body); err != nil {
			return nil, 0, err
		}
		got = append(got, r)
	}
	return got, expired, rows.Err()
}

// tryGet discards the queue's expired messages and claims up to n
// matching ones (take: removes them), in one write transaction. It returns
// none when there is none.
func (s *session) tryGet(ctx context.Context, queue string, matches []mq.Match, n int, take bool) ([]*mq.Message, error) {
	now := s.c.t.opts.Clock.Now()
	nowS := stamp(now)
	// Never take a message of a queue another connection claimed as its
	// exclusive consumer: the look below reports the claim's holder, and the
	// claiming UPDATE re-checks it.
	filter, fargs := s.getFilter(queue, matches)
	// Look first on the read pool, so that an idle poller never takes the
	// file's write lock.
	var available bool
	var holder string
	if err := s.c.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM mq_message
			WHERE queue = ? AND claim_conn IS NULL %s), COALESCE((SELECT conn FROM mq_consumer WHERE queue = ?), '')`, filter),
			append(append([]any{queue}, fargs...), queue)...).Scan(&available, &holder)
	}); err != nil {
		return nil, &mq.Error{Reason: mq.ReasonUnexpectedError, Op: "get", Queue: queue, Cause: err}
	}
	if holder != "" && holder != s.c.id {
		if err := s.c.heldByOther(ctx, queue); err != nil {
			return nil, err
		}
		return nil, nil // released meanwhile: look again at the next wake-up
	}
	if !available {
		return nil, nil
	}
	var (
		got     []gotRow
		expired int64
		taken   []*mq.Message
	)
	err := s.c.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		got, expired, err = s.claimTx(ctx, tx, queue, filter, fargs, n, take, nowS)
		if err != nil || !take {
			return err
		}
		// A take removes the rows in this transaction: decode them here,
		// so that a message that does not decode rolls the removal back
		// and every message of the batch stays on its queue.
		taken, err = decodeRows(queue, got, now)
		return err
	})
	var me *mq.Error
	if errors.As(err, &me) {
		return nil, me
	}
	if err != nil {
		return nil, &mq.Error{Reason: mq.ReasonUnexpectedError, Op: "get", Queue: queue, Cause: err}
	}
	if take {
		s.logExpired(queue, expired)
		return taken, nil
	}
	return s.delivered(queue, got, expired, now)
}

// delivered logs the expired discards, counts claimed rows as the
// session's (not taken ones: they are gone) and decodes the rows.
func (s *session) delivered(queue string, got []gotRow, expired int64, now time.Time) ([]*mq.Message, error) {
	s.logExpired(queue, expired)
	if len(got) == 0 {
		return nil, nil
	}
	s.claims += int64(len(got))
	s.got[queue] = struct{}{}
	// Claimed rows are now the session's; a decode failure below still
	// leaves them to Commit/Rollback, so nothing is lost. (Taken rows are
	// decoded inside their removing transaction: tryGet.)
	return decodeRows(queue, got, now)
}

// logExpired logs the expired messages a get discarded.
func (s *session) logExpired(queue string, expired int64) {
	if expired > 0 {
		s.c.log.Info("mq.expired_discarded", "queue", queue, "messages", expired)
	}
}

// decodeRows decodes the claimed or taken rows into messages, in the order
// the claim selected them.
func decodeRows(queue string, got []gotRow, now time.Time) ([]*mq.Message, error) {
	if len(got) == 0 {
		return nil, nil
	}
	// RETURNING does not promise an order: put them back in the order
	// the claim selected them.
	sort.Slice(got, func(i, j int) bool {
		if got[i].msg.Priority != got[j].msg.Priority {
			return got[i].msg.Priority > got[j].msg.Priority
		}
		return got[i].seq < got[j].seq
	})
	out := make([]*mq.Message, 0, len(got))
	for _, r := range got {
		msg := r.msg
		if len(r.msgID) != mq.IDLength || len(r.correlID) != mq.IDLength {
			return nil, &mq.Error{Reason: mq.ReasonMDError, Op: "get", Queue: queue, Cause: errors.New("stored id is not 24 bytes")}
		}
		copy(msg.MsgID[:], r.msgID)
		copy(msg.CorrelID[:], r.correlID)
		msg.NonPersistent = !r.persistent
		var err error
		if msg.PutTime, err = parseStamp(r.putAt); err != nil {
			return nil, &mq.Error{Reason: mq.ReasonMDError, Op: "get", Queue: queue, Cause: fmt.Errorf("put_at: %w", err)}
		}
		if r.expiresAt.Valid {
			exp, err := parseStamp(r.expiresAt.String)
			if err != nil {
				return nil, &mq.Error{Reason: mq.ReasonMDError, Op: "get", Queue: queue, Cause: fmt.Errorf("expires_at: %w", err)}
			}
			msg.Expiry = max(exp.Sub(now), time.Nanosecond)
		}
		if msg.Properties, err = decodeProperties(r.props); err != nil {
			return nil, &mq.Error{Reason: mq.ReasonMDError, Op: "get", Queue: queue, Cause: err}
		}
		if msg.Body == nil {
			msg.Body = []byte{}
		}
		out = append(out, msg)
	}
	return out, nil
}

var errClaimsLost = errors.New("messages got in this unit of work were restored to their queue (connection lease expired)")

func (s *session) Commit(ctx context.Context) error {
	_, err := s.commit(ctx, nil)
	return err
}

// nextGet is the get CommitAndGet makes in the commit's transaction.
type nextGet struct {
	queue   string
	n       int
	matches []mq.Match
}

// CommitAndGet is mq.CommitGetter's: the unit's commit and a no-wait
// GetBatch that starts the next unit, in one write transaction. The
// messages it returns are claimed by the new unit exactly as GetBatch's
// are (hidden from every other getter; Commit removes them, Rollback or a
// crash restores them with BackoutCount+1).
func (s *session) CommitAndGet(ctx context.Context, queue string, max int, matches ...mq.Match) ([]*mq.Message, error) {
	return s.commit(ctx, &nextGet{queue: queue, n: mq.BatchMax(max), matches: matches})
}

// commit commits the unit; with next, it also claims next's messages in
// the same transaction (a queue another connection consumes, or none
// there: none).
func (s *session) commit(ctx context.Context, next *nextGet) ([]*mq.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	op, queue := "commit", ""
	if next != nil {
		op, queue = "get", next.queue
	}
	if err := s.usable(op, queue); err != nil {
		return nil, err
	}
	if next != nil {
		if err := s.c.requireQueue(context.WithoutCancel(ctx), "get", next.queue); err != nil {
			return nil, err
		}
	}
	if s.claims == 0 && len(s.puts) == 0 && next == nil {
		return nil, nil
	}
	ctx = context.WithoutCancel(ctx) // a started commit is finished
	now := s.c.t.opts.Clock.Now()
	var (
		got     []gotRow
		expired int64
	)
	err := s.c.db.Write(ctx, func(tx *store.Tx) error {
		got, expired = nil, 0
		if s.claims > 0 {
			res, err := tx.ExecContext(ctx, `DELETE FROM mq_message WHERE claim_conn = ? AND claim_session = ?`, s.c.id, s.id)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			if n != s.claims {
				return fmt.Errorf("%w: held %d, found %d", errClaimsLost, s.claims, n)
			}
		}
		for _, p := range s.puts {
			m := p.msg
			var expires any
			if m.Expiry > 0 {
				expires = stamp(m.PutTime.Add(m.Expiry))
			}
			body := m.Body
			if body == nil {
				body = []byte{}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO mq_message
				(queue, msg_id, correl_id, reply_to, persistent, priority, put_at, expires_at, properties, body)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				p.queue, m.MsgID[:], m.CorrelID[:], m.ReplyTo, persistentFlag(m), m.Priority,
				stamp(m.PutTime), expires, encodeProperties(m.Properties), body); err != nil {
				return fmt.Errorf("insert into %s: %w", p.queue, err)
			}
		}
		if next != nil {
			filter, fargs := s.getFilter(next.queue, next.matches)
			var err error
			got, expired, err = s.claimTx(ctx, tx, next.queue, filter, fargs, next.n, false, stamp(now))
			return err
		}
		return nil
	})
	if err != nil {
		rbErr := s.backout(ctx)
		s.c.log.Warn("mq.commit_backed_out", "session", s.id, "error", err.Error())
		return nil, &mq.Error{Reason: mq.ReasonBackedOut, Op: "commit", Cause: errors.Join(err, rbErr)}
	}
	queues := map[string]struct{}{}
	for _, p := range s.puts {
		queues[p.queue] = struct{}{}
	}
	s.reset()
	for q := range queues {
		s.c.hub.notify(q)
	}
	if next == nil {
		return nil, nil
	}
	return s.delivered(next.queue, got, expired, now)
}

func (s *session) Rollback(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable("rollback", ""); err != nil {
		return err
	}
	return s.backout(context.WithoutCancel(ctx))
}

// backout restores the session's claimed rows with backout_count+1 and
// forgets its puts. Called with s.mu held.
func (s *session) backout(ctx context.Context) error {
	if s.claims > 0 {
		err := s.c.db.Write(ctx, func(tx *store.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE mq_message
				SET claim_conn = NULL, claim_session = NULL, claimed_at = NULL, backout_count = backout_count + 1
				WHERE claim_conn = ? AND claim_session = ?`, s.c.id, s.id)
			return err
		})
		if err != nil {
			// The rows stay claimed by this connection; they are restored
			// when it closes or its lease expires.
			return &mq.Error{Reason: mq.ReasonUnexpectedError, Op: "rollback", Cause: err}
		}
		for q := range s.got {
			s.c.hub.notify(q)
		}
	}
	s.reset()
	return nil
}

func (s *session) reset() {
	s.puts = nil
	s.claims = 0
	clear(s.got)
}

func (s *session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	var err error
	if !s.c.broken.Load() { // a broken connection's claims are restored by the reaper
		err = s.backout(context.Background())
	}
	s.closed = true
	s.c.mu.Lock()
	delete(s.c.sessions, s)
	s.c.mu.Unlock()
	return err
}

// persistentFlag is mq_message.persistent: an INTEGER 0 or 1 (a Go bool
// is no integer to PostgreSQL).
func persistentFlag(m *mq.Message) int {
	if m.NonPersistent {
		return 0
	}
	return 1
}
