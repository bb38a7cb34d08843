package mq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestErrorReasonAndMatching(t *testing.T) {
	err := fmt.Errorf("adapter: %w", &Error{Reason: ReasonNoMsgAvailable, Op: "get", Queue: "REPLY", Cause: context.DeadlineExceeded})
	if !errors.Is(err, ErrNoMessage) || errors.Is(err, ErrBackedOut) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("errors.Is mismatch for %v", err)
	}
	if ReasonOf(err) != 2033 || ReasonOf(nil) != ReasonNone || ReasonOf(errors.New("x")) != ReasonUnexpectedError {
		t.Fatal("ReasonOf")
	}
	if got := err.Error(); got != "adapter: mq: get REPLY: MQRC 2033 NO_MSG_AVAILABLE: context deadline exceeded" {
		t.Fatalf("message %q", got)
	}
	if Reason(9999).String() != "MQRC 9999 UNKNOWN" || ReasonBackedOut.String() != "MQRC 2003 BACKED_OUT" {
		t.Fatal("reason names")
	}
	te := &ReplyTimeoutError{RequestID: ID{1}, ReplyQueue: "R", Err: err}
	if !errors.Is(te, ErrNoMessage) || !strings.Contains(te.Error(), "no reply on R") {
		t.Fatalf("timeout error %v", te)
	}
}

func TestIDs(t *testing.T) {
	a, b := NewID(), NewID()
	if a == b || a.IsZero() {
		t.Fatal("NewID not unique")
	}
	if got, err := ParseID(a.String()); err != nil || got != a {
		t.Fatalf("ParseID(%s) = %s, %v", a, got, err)
	}
	for _, bad := range []string{"", "abc", strings.Repeat("g", 48), strings.Repeat("0", 50)} {
		if _, err := ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) accepted", bad)
		}
	}
}

func TestMatch(t *testing.T) {
	m := &Message{MsgID: ID{1}, CorrelID: ID{2}}
	cases := []struct {
		match Match
		want  bool
	}{
		{Any, true},
		{ByMsgID(ID{1}), true},
		{ByMsgID(ID{2}), false},
		{ByCorrelID(ID{2}), true},
		{ByCorrelID(ID{1}), false},
		{Match{MsgID: ID{1}, CorrelID: ID{2}}, true},
		{Match{MsgID: ID{1}, CorrelID: ID{3}}, false},
	}
	for i, c := range cases {
		if got := c.match.Matches(m); got != c.want {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
	}
}

func TestValidateForPut(t *testing.T) {
	cases := []struct {
		msg  *Message
		want Reason
	}{
		{&Message{}, ReasonNone},
		{&Message{Priority: 9, Expiry: time.Second, Properties: map[string]string{"a.b_c-1": "v"}}, ReasonNone},
		{nil, ReasonMDError},
		{&Message{Priority: 10}, ReasonPriorityError},
		{&Message{Expiry: -1}, ReasonExpiryError},
		{&Message{Properties: map[string]string{"": "v"}}, ReasonPropertyNameError},
		{&Message{Properties: map[string]string{"1abc": "v"}}, ReasonPropertyNameError},
		{&Message{Properties: map[string]string{"X-Death": "v"}}, ReasonPropertyNameError},
		{&Message{Properties: map[string]string{strings.Repeat("a", 65): "v"}}, ReasonPropertyNameError},
	}
	for i, c := range cases {
		if got := ReasonOf(ValidateForPut("Q", c.msg)); got != c.want {
			t.Errorf("case %d: %s, want %s", i, got, c.want)
		}
	}
}

func TestCloneIsDeep(t *testing.T) {
	m := &Message{Body: []byte("ab"), Properties: map[string]string{"k": "v"}}
	c := m.Clone()
	c.Body[0] = 'X'
	c.Properties["k"] = "w"
	if string(m.Body) != "ab" || m.Properties["k"] != "v" {
		t.Fatal("Clone shares memory with the original")
	}
}

func TestHelpersRefuseMissingQueues(t *testing.T) {
	ctx := context.Background()
	if err := Reply(ctx, nil, &Message{}, &Message{}); ReasonOf(err) != ReasonMissingReplyToQ {
		t.Fatalf("Reply without ReplyTo: %v", err)
	}
	if _, err := SendRequest(ctx, nil, "Q", "", &Message{}); ReasonOf(err) != ReasonMissingReplyToQ {
		t.Fatalf("SendRequest without reply queue: %v", err)
	}
	if _, err := AwaitReply(ctx, nil, "R", ID{}); ReasonOf(err) != ReasonMDError {
		t.Fatalf("AwaitReply without id: %v", err)
	}
	moved, err := HandlePoison(ctx, nil, "Q", &Message{BackoutCount: 3}, PoisonPolicy{Threshold: 3}, "r")
	if moved || ReasonOf(err) != ReasonUnknownObjectName {
		t.Fatalf("HandlePoison without backout queue: %v %v", moved, err)
	}
	if moved, err := HandlePoison(ctx, nil, "Q", &Message{BackoutCount: 2}, PoisonPolicy{Threshold: 3, BackoutQueue: "B"}, "r"); moved || err != nil {
		t.Fatalf("below threshold: %v %v", moved, err)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"amqp://zcgw:s3cret@mq.example:5672/vh": "amqp://zcgw@mq.example:5672/vh",
		"amqp://127.0.0.1:5672/":                "amqp://127.0.0.1:5672/",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
