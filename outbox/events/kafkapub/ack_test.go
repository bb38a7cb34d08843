package kafkapub

import (
	"errors"
	"fmt"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/zcgw/zcgw/outbox/events"
)

func TestAcknowledgedMarksEachChainOnlyUpToItsFirstFailure(t *testing.T) {
	rows := []events.Pending{
		{OutboxSeq: 1, ChainID: "A"}, {OutboxSeq: 2, ChainID: "B"}, {OutboxSeq: 3, ChainID: "A"},
		{OutboxSeq: 4, ChainID: "B"}, {OutboxSeq: 5, ChainID: "A"}, {OutboxSeq: 6, ChainID: "C"},
	}
	msgs := make([]kafka.Message, len(rows))
	for i := range msgs {
		msgs[i].Topic = "t"
	}
	fail := errors.New("not leader")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"all acknowledged", nil, "[1 2 3 4 5 6]"},
		{"nothing known", errors.New("dial: connection refused"), "[]"},
		{"per-message errors", kafka.WriteErrors{nil, nil, fail, nil, nil, nil}, "[1 2 4 6]"}, // A's 5 waits for 3
		{"first of a chain fails", kafka.WriteErrors{nil, fail, nil, nil, nil, fail}, "[1 3 5]"},
		{"wrapped", fmt.Errorf("write: %w", kafka.WriteErrors{fail, nil, nil, nil, nil, nil}), "[2 4 6]"},
		{"length mismatch", kafka.WriteErrors{nil}, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int64
			for _, a := range acknowledged(rows, msgs, tc.err) {
				got = append(got, a.OutboxSeq)
			}
			if fmt.Sprint(got) != tc.want {
				t.Errorf("acknowledged = %v, want %s", got, tc.want)
			}
		})
	}
}
