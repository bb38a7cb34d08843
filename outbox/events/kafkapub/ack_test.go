package kafkapub

import (
	"errors"
	"fmt"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/zcgw/zcgw/outbox/events"
)

// The cursor moves only past the acknowledged prefix of a step's rows (in
// outbox order, gaps in outbox_seq included).
func TestAcknowledgedThroughIsThePrefixTheBrokerAcknowledged(t *testing.T) {
	rows := []events.Pending{
		{OutboxSeq: 1, ChainID: "A"}, {OutboxSeq: 2, ChainID: "B"}, {OutboxSeq: 4, ChainID: "A"},
		{OutboxSeq: 5, ChainID: "B"}, {OutboxSeq: 6, ChainID: "A"}, {OutboxSeq: 9, ChainID: "C"},
	}
	fail := errors.New("not leader")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"all acknowledged", nil, "9 6"},
		{"nothing known", errors.New("dial: connection refused"), "0 0"},
		{"per-message errors", kafka.WriteErrors{nil, nil, fail, nil, nil, nil}, "2 2"},
		{"first fails", kafka.WriteErrors{fail, nil, nil, nil, nil, nil}, "0 0"},
		{"last fails", kafka.WriteErrors{nil, nil, nil, nil, nil, fail}, "6 5"},
		{"wrapped, none failed", fmt.Errorf("write: %w", kafka.WriteErrors{nil, nil, nil, nil, nil, nil}), "9 6"},
		{"length mismatch", kafka.WriteErrors{nil}, "0 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			through, n := acknowledgedThrough(rows, tc.err)
			if got := fmt.Sprint(through, n); got != tc.want {
				t.Errorf("acknowledgedThrough = %s, want %s", got, tc.want)
			}
		})
	}
}
