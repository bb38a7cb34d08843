package mq

import (
	"context"
	"errors"
	"fmt"
)

// SendRequest puts req on queue as a persistent request whose reply is to
// go to replyQueue, and commits the unit of work, so the request is
// visible to the responder before anyone waits for its reply. It returns
// the request's MsgID (assigned by Put when req.MsgID is zero), which is
// the CorrelID the reply will carry. Work already open in s is committed
// with it.
func SendRequest(ctx context.Context, s Session, queue, replyQueue string, req *Message) (ID, error) {
	if replyQueue == "" {
		return ID{}, &Error{Reason: ReasonMissingReplyToQ, Op: "request", Queue: queue,
			Cause: errors.New("reply queue is empty")}
	}
	req.ReplyTo = replyQueue
	req.NonPersistent = false
	if err := s.Put(ctx, queue, req); err != nil {
		_ = s.Rollback(context.WithoutCancel(ctx))
		return ID{}, err
	}
	if err := s.Commit(ctx); err != nil {
		return ID{}, err
	}
	return req.MsgID, nil
}

// AwaitReply gets the reply on replyQueue whose CorrelID is requestID,
// waiting until ctx is done, and commits the get. When no reply came it
// returns a *ReplyTimeoutError (which also matches ErrNoMessage); the
// request's outcome is then in doubt. A reply arriving later stays on the
// queue and can still be taken by another AwaitReply with the same ID.
func AwaitReply(ctx context.Context, s Session, replyQueue string, requestID ID) (*Message, error) {
	if requestID.IsZero() {
		return nil, &Error{Reason: ReasonMDError, Op: "await-reply", Queue: replyQueue,
			Cause: errors.New("request id is MQMI_NONE")}
	}
	reply, err := s.Get(ctx, replyQueue, ByCorrelID(requestID))
	if err != nil {
		if errors.Is(err, ErrNoMessage) {
			return nil, &ReplyTimeoutError{RequestID: requestID, ReplyQueue: replyQueue, Err: err}
		}
		return nil, err
	}
	if err := s.Commit(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("mq: commit reply %s: %w", requestID, err)
	}
	return reply, nil
}

// Request sends req to queue and waits, bounded by ctx, for the reply on
// replyQueue whose CorrelID equals the request's MsgID (SendRequest, then
// AwaitReply). The request is committed before the wait, so it stays sent
// even when the wait times out.
func Request(ctx context.Context, s Session, queue, replyQueue string, req *Message) (*Message, error) {
	id, err := SendRequest(ctx, s, queue, replyQueue, req)
	if err != nil {
		return nil, err
	}
	return AwaitReply(ctx, s, replyQueue, id)
}

// Reply is the responder's half: it sets reply.CorrelID to request.MsgID
// and puts reply on request.ReplyTo inside s's unit of work, without
// committing, so the caller commits the request's get, its own work and
// the reply together. The reply is persistent unless request was not.
func Reply(ctx context.Context, s Session, request, reply *Message) error {
	if request.ReplyTo == "" {
		return &Error{Reason: ReasonMissingReplyToQ, Op: "reply",
			Cause: fmt.Errorf("request %s has no ReplyTo", request.MsgID)}
	}
	reply.CorrelID = request.MsgID
	reply.NonPersistent = request.NonPersistent
	return s.Put(ctx, request.ReplyTo, reply)
}
