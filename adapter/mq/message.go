package mq

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// IDLength is the size of MsgID and CorrelID, as in the MQMD.
const IDLength = 24

// ID is a 24-byte message or correlation identifier. The zero ID means
// "none" (MQMI_NONE / MQCI_NONE).
type ID [IDLength]byte

// IsZero reports whether id is MQMI_NONE.
func (id ID) IsZero() bool { return id == ID{} }

// String is the lower-case hex form (48 characters).
func (id ID) String() string { return hex.EncodeToString(id[:]) }

// ParseID parses the 48-character hex form produced by String.
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) != 2*IDLength {
		return id, fmt.Errorf("mq: id %q: want %d hex characters, got %d", s, 2*IDLength, len(s))
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return ID{}, fmt.Errorf("mq: id %q: %w", s, err)
	}
	return id, nil
}

// NewID returns a fresh random ID, the way a queue manager assigns MsgID
// on put when the caller leaves it as MQMI_NONE.
func NewID() ID {
	var id ID
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails (Go 1.24+)
	return id
}

// Priority bounds, as in IBM MQ (0 lowest, 9 highest).
const (
	MinPriority = 0
	MaxPriority = 9
)

// Message is one MQ message: an MQMD-like descriptor plus an opaque body.
//
// On Put the caller sets the descriptor fields; Put fills MsgID when it is
// zero (like MQPUT without MQPMO_NEW_MSG_ID) and PutTime. On Get every
// field is filled from the stored message, including BackoutCount.
type Message struct {
	// MsgID identifies the message (24 bytes). Zero on Put means "assign one".
	MsgID ID
	// CorrelID correlates a reply with its request (the request's MsgID).
	CorrelID ID
	// ReplyTo is the queue the responder should put the reply on.
	ReplyTo string
	// NonPersistent marks a message that may be lost on a broker restart
	// (MQPER_NOT_PERSISTENT). The zero value is persistent: losing a
	// posting must be asked for explicitly.
	NonPersistent bool
	// Expiry is the message's lifetime counted from Put (not Commit);
	// zero means unlimited (MQEI_UNLIMITED). Expired messages are
	// discarded lazily, when a get would otherwise return them. On Get it
	// holds the remaining lifetime (zero if unlimited).
	Expiry time.Duration
	// Priority is 0..9; higher is delivered first where the backend
	// supports priority (see docs/mq.md).
	Priority int
	// Properties are string message properties. Names match
	// [A-Za-z][A-Za-z0-9._-]{0,63} and must not start with "x-" (reserved
	// for brokers).
	Properties map[string]string
	// Body is the application data, carried byte for byte (MQFMT_NONE).
	Body []byte

	// BackoutCount is how often this message was got inside a unit of work
	// that was then backed out. Set on Get; ignored on Put.
	BackoutCount int
	// PutTime is when the message was put. Set by Put and on Get.
	PutTime time.Time
}

// Clone returns a deep copy of m (body and properties are copied).
func (m *Message) Clone() *Message {
	c := *m
	c.Body = append([]byte(nil), m.Body...)
	if m.Properties != nil {
		c.Properties = make(map[string]string, len(m.Properties))
		for k, v := range m.Properties {
			c.Properties[k] = v
		}
	}
	return &c
}

// Stamp is what Put does to a message on a backend that buffers puts until
// Commit: it assigns msg.MsgID when zero and msg.PutTime (now), and returns
// the copy to buffer, its BackoutCount cleared.
func Stamp(msg *Message, now time.Time) *Message {
	if msg.MsgID.IsZero() {
		msg.MsgID = NewID()
	}
	msg.PutTime = now
	cp := msg.Clone()
	cp.BackoutCount = 0
	return cp
}

// Match selects which message a Get returns. The zero Match takes the
// next message in priority-then-arrival order (MQMO_NONE). With MsgID or
// CorrelID set, only a message with that MsgID (MQMO_MATCH_MSG_ID) or
// CorrelID (MQMO_MATCH_CORREL_ID) is returned; with both, both must match.
type Match struct {
	MsgID    ID
	CorrelID ID
}

// Any matches every message.
var Any = Match{}

// ByCorrelID matches the message whose CorrelID is id.
func ByCorrelID(id ID) Match { return Match{CorrelID: id} }

// ByMsgID matches the message whose MsgID is id.
func ByMsgID(id ID) Match { return Match{MsgID: id} }

// Matches reports whether m is selected by the match.
func (mt Match) Matches(m *Message) bool {
	if !mt.MsgID.IsZero() && mt.MsgID != m.MsgID {
		return false
	}
	if !mt.CorrelID.IsZero() && mt.CorrelID != m.CorrelID {
		return false
	}
	return true
}

// MaxPropertyNameLength bounds property names.
const MaxPropertyNameLength = 64

// ValidatePropertyName reports whether name is an allowed property name.
func ValidatePropertyName(name string) error {
	if name == "" || len(name) > MaxPropertyNameLength {
		return fmt.Errorf("property name %q: length must be 1..%d", name, MaxPropertyNameLength)
	}
	if len(name) >= 2 && (name[0] == 'x' || name[0] == 'X') && name[1] == '-' {
		return fmt.Errorf("property name %q: the x- prefix is reserved for brokers", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		letter := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
		if i == 0 && !letter {
			return fmt.Errorf("property name %q: byte 0 must be a letter", name)
		}
		if !letter && !(c >= '0' && c <= '9') && c != '.' && c != '_' && c != '-' {
			return fmt.Errorf("property name %q: byte %d (%q) not allowed", name, i, c)
		}
	}
	return nil
}

// ValidateForPut checks the descriptor fields a backend must accept on Put
// and returns a typed *Error (MQRC_PRIORITY_ERROR, MQRC_EXPIRY_ERROR,
// MQRC_PROPERTY_NAME_ERROR) naming the queue. Backends call it; callers
// need not.
func ValidateForPut(queue string, m *Message) error {
	if m == nil {
		return &Error{Reason: ReasonMDError, Op: "put", Queue: queue, Cause: fmt.Errorf("nil message")}
	}
	if m.Priority < MinPriority || m.Priority > MaxPriority {
		return &Error{Reason: ReasonPriorityError, Op: "put", Queue: queue,
			Cause: fmt.Errorf("priority %d outside %d..%d", m.Priority, MinPriority, MaxPriority)}
	}
	if m.Expiry < 0 {
		return &Error{Reason: ReasonExpiryError, Op: "put", Queue: queue,
			Cause: fmt.Errorf("expiry %s is negative", m.Expiry)}
	}
	for name := range m.Properties {
		if err := ValidatePropertyName(name); err != nil {
			return &Error{Reason: ReasonPropertyNameError, Op: "put", Queue: queue, Cause: err}
		}
	}
	return nil
}
