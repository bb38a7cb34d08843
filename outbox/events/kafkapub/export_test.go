package kafkapub

import (
	"github.com/segmentio/kafka-go"

	"github.com/zcgw/zcgw/outbox/events"
)

// Messages is messages for the benchmarks: the records (and the rows they
// use) one step would write of rows.
func (p *Publisher) Messages(rows []events.Pending) ([]kafka.Message, []events.Pending) {
	return p.messages(rows)
}
