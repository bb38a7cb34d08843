package mq

import (
	"context"
	"errors"
	"strconv"
)

// Properties HandlePoison sets on a message it moves to the backout queue.
const (
	PropBackoutReason = "zcgw.backout.reason" // why the message was moved
	PropBackoutSource = "zcgw.backout.source" // the queue it was got from
	PropBackoutCount  = "zcgw.backout.count"  // its BackoutCount at the move
)

// PoisonPolicy is a queue's BOTHRESH and BOQNAME as applied by the
// application (IBM MQ itself only advertises them).
type PoisonPolicy struct {
	Threshold    int    // move when BackoutCount >= Threshold; 0 disables
	BackoutQueue string // where to move it
}

// PolicyFor returns the policy declared on a queue.
func PolicyFor(spec QueueSpec) PoisonPolicy {
	return PoisonPolicy{Threshold: spec.BackoutThreshold, BackoutQueue: spec.BackoutQueue}
}

// HandlePoison checks msg, just got from source inside s's open unit of
// work. When msg.BackoutCount is at or above the policy threshold it puts a
// copy on the backout queue (same MsgID, CorrelID, body and properties,
// plus PropBackoutReason/Source/Count) and commits, which removes the
// original from source in the same unit; it then reports moved=true and
// the caller must not process msg. Otherwise it does nothing and reports
// false. If the move fails the unit is rolled back and the error returned.
func HandlePoison(ctx context.Context, s Session, source string, msg *Message, p PoisonPolicy, reason string) (moved bool, err error) {
	if p.Threshold <= 0 || msg.BackoutCount < p.Threshold {
		return false, nil
	}
	if p.BackoutQueue == "" {
		return false, &Error{Reason: ReasonUnknownObjectName, Op: "backout", Queue: source,
			Cause: errors.New("backout threshold reached but no backout queue is declared")}
	}
	cp := PoisonCopy(source, msg, p, reason)
	if err := s.Put(ctx, p.BackoutQueue, cp); err != nil {
		return false, errors.Join(err, s.Rollback(context.WithoutCancel(ctx)))
	}
	if err := s.Commit(ctx); err != nil {
		return false, err
	}
	return true, nil
}

// PoisonCopy is the copy HandlePoison puts on the backout queue, or nil
// when msg is below the policy's threshold (or the policy names no backout
// queue). A caller that handles a batch in one unit of work puts it on
// p.BackoutQueue itself, in that unit, instead of processing msg.
func PoisonCopy(source string, msg *Message, p PoisonPolicy, reason string) *Message {
	if p.Threshold <= 0 || msg.BackoutCount < p.Threshold || p.BackoutQueue == "" {
		return nil
	}
	cp := msg.Clone()
	if cp.Properties == nil {
		cp.Properties = map[string]string{}
	}
	if reason == "" {
		reason = "backout threshold reached"
	}
	cp.Properties[PropBackoutReason] = reason
	cp.Properties[PropBackoutSource] = source
	cp.Properties[PropBackoutCount] = strconv.Itoa(msg.BackoutCount)
	cp.Expiry = 0 // a poison message is kept for a person to look at
	return cp
}
