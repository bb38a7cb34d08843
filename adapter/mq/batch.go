package mq

import (
	"context"
	"errors"
	"time"
)

// BatchGetter is a Session that takes many messages in one call, inside
// its unit of work: the embedded backend claims them with one statement
// (one commit for all of them), RabbitMQ with one basic.get each, without
// waiting between them. Puts need no batch form: every backend buffers a
// unit's puts until Commit, so N Puts and one Commit are one unit of work
// (embedded: one transaction; RabbitMQ: N pipelined publishes, one wait
// for their confirms).
type BatchGetter interface {
	// GetBatch takes up to max messages on queue (max <= 0: 1), in the
	// order Get would return them one by one. A message is taken when it
	// satisfies any of matches (none: every message). When no message is
	// there it waits like Get until one arrives or ctx is done (then MQRC
	// 2033); once one is there it takes what else is there without
	// waiting. The messages are hidden from every other getter until the
	// unit ends: Commit removes them, Rollback restores each with
	// BackoutCount+1.
	GetBatch(ctx context.Context, queue string, max int, matches ...Match) ([]*Message, error)
}

// Taker is a Session that can take messages and commit in one durable
// step: TakeBatch is GetBatch followed by Commit, with nothing between
// them. The embedded backend removes the messages with one statement in
// one transaction when no unit of work is open (one commit instead of the
// claim's and the removal's). A crash can never leave such a message
// claimed: it is either still on the queue, never delivered, or gone.
type Taker interface {
	TakeBatch(ctx context.Context, queue string, max int, matches ...Match) ([]*Message, error)
}

// CommitGetter is a Session that can commit its unit of work and, in the
// same durable step, get (without waiting) the messages that start the
// next one. The messages it returns are the new unit's exactly as
// GetBatch's would be: hidden from every other getter, removed by the next
// Commit, restored with BackoutCount+1 by Rollback or a crash. The
// embedded backend does both in one transaction (one commit instead of the
// commit's and the next claim's).
type CommitGetter interface {
	CommitAndGet(ctx context.Context, queue string, max int, matches ...Match) ([]*Message, error)
}

// TakeBatch is Taker.TakeBatch on any Session: through the session's own
// when it has one, otherwise GetThenCommit.
func TakeBatch(ctx context.Context, s Session, queue string, max int, matches ...Match) ([]*Message, error) {
	if t, ok := s.(Taker); ok {
		return t.TakeBatch(ctx, queue, max, matches...)
	}
	return GetThenCommit(ctx, s, queue, max, matches...)
}

// GetThenCommit is GetBatch then Commit (the unit's other work is
// committed with the gets). A get that failed after taking some messages
// backs the unit out.
func GetThenCommit(ctx context.Context, s Session, queue string, max int, matches ...Match) ([]*Message, error) {
	msgs, err := GetBatch(ctx, s, queue, max, matches...)
	if err != nil {
		if len(msgs) > 0 {
			_ = s.Rollback(context.WithoutCancel(ctx))
		}
		return nil, err
	}
	if err := s.Commit(context.WithoutCancel(ctx)); err != nil {
		return nil, err
	}
	return msgs, nil
}

// CommitAndGet is CommitGetter.CommitAndGet on any Session: through the
// session's own when it has one, otherwise Commit and no message (the
// caller gets the next ones with GetBatch, as it would without).
func CommitAndGet(ctx context.Context, s Session, queue string, max int, matches ...Match) ([]*Message, error) {
	if cg, ok := s.(CommitGetter); ok {
		return cg.CommitAndGet(ctx, queue, max, matches...)
	}
	return nil, s.Commit(ctx)
}

// lookFor bounds each look after the first in GetBatch's fallback.
const lookFor = 25 * time.Millisecond

// GetBatch is BatchGetter.GetBatch on any Session: through the session's
// own GetBatch when it has one, otherwise by one Get per message (the
// first one waiting; a session without GetBatch and with several matches
// looks for each in turn and re-looks every few milliseconds).
func GetBatch(ctx context.Context, s Session, queue string, max int, matches ...Match) ([]*Message, error) {
	if bg, ok := s.(BatchGetter); ok {
		return bg.GetBatch(ctx, queue, max, matches...)
	}
	max = BatchMax(max)
	if len(matches) == 0 {
		matches = []Match{Any}
	}
	var out []*Message
	pause := time.Millisecond
	for {
		for _, m := range matches {
			for len(out) < max {
				var msg *Message
				var err error
				if len(out) == 0 && len(matches) == 1 {
					msg, err = s.Get(ctx, queue, m) // the first one waits
				} else {
					// A short look, not a no-wait one: a broker that
					// delivers on credit (AMQP 1.0) needs a moment to hand
					// over a message that is there.
					look, cancel := context.WithTimeout(ctx, lookFor)
					msg, err = s.Get(look, queue, m)
					cancel()
				}
				if errors.Is(err, ErrNoMessage) {
					if len(matches) == 1 && len(out) == 0 {
						return nil, err
					}
					break
				}
				if err != nil {
					return out, err
				}
				out = append(out, msg)
			}
		}
		if len(out) > 0 {
			return out, nil
		}
		if !sleepCtx(ctx, pause) {
			return nil, &Error{Reason: ReasonNoMsgAvailable, Op: "get", Queue: queue, Cause: ctx.Err()}
		}
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// BatchMax is the batch bound a GetBatch implementation uses for max.
func BatchMax(max int) int {
	if max <= 0 {
		return 1
	}
	return max
}

// AnyOf reports whether m satisfies one of matches (none: true).
func AnyOf(m *Message, matches []Match) bool {
	if len(matches) == 0 {
		return true
	}
	for _, mt := range matches {
		if mt.Matches(m) {
			return true
		}
	}
	return false
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// SendRequests puts every request of reqs on queue as a persistent request
// whose reply is to go to replyQueue, in one unit of work, and commits it:
// all of them reach the responder, or (the commit failed) none. It returns
// their MsgIDs in order. Work already open in s is committed with them.
func SendRequests(ctx context.Context, s Session, queue, replyQueue string, reqs []*Message) ([]ID, error) {
	if replyQueue == "" {
		return nil, &Error{Reason: ReasonMissingReplyToQ, Op: "request", Queue: queue,
			Cause: errors.New("reply queue is empty")}
	}
	ids := make([]ID, len(reqs))
	for i, req := range reqs {
		req.ReplyTo = replyQueue
		req.NonPersistent = false
		if err := s.Put(ctx, queue, req); err != nil {
			_ = s.Rollback(context.WithoutCancel(ctx))
			return nil, err
		}
		ids[i] = req.MsgID
	}
	if err := s.Commit(ctx); err != nil {
		return nil, err
	}
	return ids, nil
}

// AwaitReplies gets the replies on replyQueue to the requests ids, waiting
// until all are there or ctx is done, and commits each batch of gets it
// takes (TakeBatch: one durable step per batch where the backend can). It returns the replies it got by request id; a request missing
// from the map got no reply in time (its outcome is in doubt; a late reply
// stays on the queue). The error is nil when every reply came, a
// *ReplyTimeoutError (for the first missing id) when the wait ran out,
// or the transport's error.
func AwaitReplies(ctx context.Context, s Session, replyQueue string, ids []ID) (map[ID]*Message, error) {
	got := make(map[ID]*Message, len(ids))
	for {
		var matches []Match
		for _, id := range ids {
			if _, ok := got[id]; !ok {
				if id.IsZero() {
					return got, &Error{Reason: ReasonMDError, Op: "await-reply", Queue: replyQueue,
						Cause: errors.New("request id is MQMI_NONE")}
				}
				matches = append(matches, ByCorrelID(id))
			}
		}
		if len(matches) == 0 {
			return got, nil
		}
		msgs, err := TakeBatch(ctx, s, replyQueue, len(matches), matches...)
		if err != nil {
			if errors.Is(err, ErrNoMessage) {
				return got, &ReplyTimeoutError{RequestID: matches[0].CorrelID, ReplyQueue: replyQueue, Err: err}
			}
			return got, err
		}
		for _, m := range msgs {
			got[m.CorrelID] = m
		}
	}
}
