package mq

import (
	"errors"
	"fmt"
	"net/url"
)

// Reason is an MQRC-like reason code. The numbers are IBM MQ's, so logs and
// runbooks read the same whichever backend carried the message.
type Reason int

// Reason codes used by zcgw's transports.
const (
	ReasonNone              Reason = 0
	ReasonBackedOut         Reason = 2003 // MQRC_BACKED_OUT: the commit failed and the unit was backed out
	ReasonConnectionBroken  Reason = 2009 // MQRC_CONNECTION_BROKEN
	ReasonExpiryError       Reason = 2013 // MQRC_EXPIRY_ERROR
	ReasonHConnError        Reason = 2018 // MQRC_HCONN_ERROR: the session or connection is closed
	ReasonMDError           Reason = 2026 // MQRC_MD_ERROR: malformed message descriptor
	ReasonMissingReplyToQ   Reason = 2027 // MQRC_MISSING_REPLY_TO_Q
	ReasonNoMsgAvailable    Reason = 2033 // MQRC_NO_MSG_AVAILABLE: the wait ended without a message
	ReasonObjectInUse       Reason = 2042 // MQRC_OBJECT_IN_USE: another connection is the queue's exclusive consumer
	ReasonPriorityError     Reason = 2050 // MQRC_PRIORITY_ERROR
	ReasonUnknownObjectName Reason = 2085 // MQRC_UNKNOWN_OBJECT_NAME: no such queue
	ReasonUnexpectedError   Reason = 2195 // MQRC_UNEXPECTED_ERROR: the backend failed (storage, protocol)
	ReasonPropertyNameError Reason = 2442 // MQRC_PROPERTY_NAME_ERROR
)

var reasonNames = map[Reason]string{
	ReasonNone:              "NONE",
	ReasonBackedOut:         "BACKED_OUT",
	ReasonConnectionBroken:  "CONNECTION_BROKEN",
	ReasonExpiryError:       "EXPIRY_ERROR",
	ReasonHConnError:        "HCONN_ERROR",
	ReasonMDError:           "MD_ERROR",
	ReasonMissingReplyToQ:   "MISSING_REPLY_TO_Q",
	ReasonNoMsgAvailable:    "NO_MSG_AVAILABLE",
	ReasonObjectInUse:       "OBJECT_IN_USE",
	ReasonPriorityError:     "PRIORITY_ERROR",
	ReasonUnknownObjectName: "UNKNOWN_OBJECT_NAME",
	ReasonUnexpectedError:   "UNEXPECTED_ERROR",
	ReasonPropertyNameError: "PROPERTY_NAME_ERROR",
}

// Name is the reason's MQRC name without the MQRC_ prefix.
func (r Reason) Name() string {
	if n, ok := reasonNames[r]; ok {
		return n
	}
	return "UNKNOWN"
}

// String is "MQRC <number> <NAME>".
func (r Reason) String() string { return fmt.Sprintf("MQRC %d %s", int(r), r.Name()) }

// Error is every failure a transport returns: the reason code, the
// operation (put, get, commit, ...), the queue where one is involved, and
// the underlying cause.
type Error struct {
	Reason Reason
	Op     string
	Queue  string
	Cause  error
}

func (e *Error) Error() string {
	s := "mq: " + e.Op
	if e.Queue != "" {
		s += " " + e.Queue
	}
	s += ": " + e.Reason.String()
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// Is makes errors.Is(err, mq.ErrNoMessage) (and the other sentinels) match
// any *Error with the same reason.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) && t.Op == "" && t.Queue == "" && t.Cause == nil {
		return t.Reason == e.Reason
	}
	return false
}

// Sentinels for errors.Is; they compare by reason only.
var (
	ErrNoMessage        = &Error{Reason: ReasonNoMsgAvailable}
	ErrBackedOut        = &Error{Reason: ReasonBackedOut}
	ErrConnectionBroken = &Error{Reason: ReasonConnectionBroken}
	ErrUnknownQueue     = &Error{Reason: ReasonUnknownObjectName}
	ErrClosed           = &Error{Reason: ReasonHConnError}
	ErrInUse            = &Error{Reason: ReasonObjectInUse}
)

// ReasonOf returns the reason of the first *Error in err's chain, or
// ReasonNone when err is nil and ReasonUnexpectedError when err carries no
// reason.
func ReasonOf(err error) Reason {
	if err == nil {
		return ReasonNone
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ReasonUnexpectedError
}

// ReplyTimeoutError says that no reply to a request arrived before the
// context ended. It wraps the MQRC 2033 *Error, so errors.Is(err,
// ErrNoMessage) also holds. The request was sent and committed: the
// responder may still have processed it (the outcome is in doubt).
type ReplyTimeoutError struct {
	RequestID  ID
	ReplyQueue string
	Err        error
}

func (e *ReplyTimeoutError) Error() string {
	return fmt.Sprintf("mq: no reply on %s for request %s: %v", e.ReplyQueue, e.RequestID, e.Err)
}

// Unwrap returns the underlying no-message error.
func (e *ReplyTimeoutError) Unwrap() error { return e.Err }

// RedactURL drops the password from a broker URL, for errors, logs and
// what a command prints.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = url.User(u.User.Username())
	return u.String()
}
