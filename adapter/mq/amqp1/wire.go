package amqp1

import (
	"fmt"
	"strings"
	"time"

	amqp "github.com/Azure/go-amqp"

	"github.com/zcgw/zcgw/adapter/mq"
)

// annDeliveryCount is the delivery counter RabbitMQ's quorum queues keep,
// passed on as a message annotation.
const annDeliveryCount = "x-delivery-count"

// idToWire is the AMQP form of an ID: its 24 bytes as binary, nil for
// MQMI_NONE.
func idToWire(id mq.ID) any {
	if id.IsZero() {
		return nil
	}
	return append([]byte(nil), id[:]...)
}

// idFromWire reads a message-id or correlation-id of any AMQP type: binary
// (ours) byte for byte; a string, UUID or ulong another client set as its
// bytes, truncated or zero-padded to 24 (as IBM MQ pads a short
// JMSCorrelationID).
func idFromWire(v any) mq.ID {
	var id mq.ID
	switch x := v.(type) {
	case []byte:
		copy(id[:], x)
	case string:
		copy(id[:], x)
	case amqp.UUID:
		copy(id[:], x[:])
	case uint64:
		copy(id[:], fmt.Sprint(x))
	}
	return id
}

// toWire builds the AMQP message for m at commit time now; ok is false
// when m has already expired (its expiry counts from Put).
func (t *Transport) toWire(m *mq.Message, now time.Time) (w *amqp.Message, ok bool) {
	w = &amqp.Message{
		Header: &amqp.MessageHeader{Durable: !m.NonPersistent, Priority: uint8(m.Priority)},
		Properties: &amqp.MessageProperties{
			MessageID:     idToWire(m.MsgID),
			CorrelationID: idToWire(m.CorrelID),
			CreationTime:  ptr(m.PutTime.UTC()),
		},
		Data: [][]byte{m.Body},
	}
	if m.ReplyTo != "" {
		w.Properties.ReplyTo = ptr(t.address(m.ReplyTo))
	}
	if m.Expiry > 0 {
		deadline := m.PutTime.Add(m.Expiry)
		left := deadline.Sub(now)
		if left <= 0 {
			return nil, false
		}
		w.Header.TTL = max(left, time.Millisecond)
		w.Properties.AbsoluteExpiryTime = ptr(deadline.UTC())
	}
	if len(m.Properties) > 0 {
		w.ApplicationProperties = make(map[string]any, len(m.Properties))
		for k, v := range m.Properties {
			w.ApplicationProperties[k] = v
		}
	}
	return w, true
}

// fromWire reads a delivery at time now. expired reports a message past
// its deadline; warn names an application property that is not a string
// (kept in its printed form).
func (t *Transport) fromWire(w *amqp.Message, now time.Time) (m *mq.Message, expired bool, warn error) {
	m = &mq.Message{Body: w.GetData(), Priority: 4}
	if len(w.Data) > 1 {
		for _, d := range w.Data[1:] {
			m.Body = append(m.Body, d...)
		}
	}
	if h := w.Header; h != nil {
		m.NonPersistent = !h.Durable
		m.Priority = min(int(h.Priority), mq.MaxPriority)
		m.BackoutCount = int(h.DeliveryCount)
		if m.BackoutCount == 0 && !h.FirstAcquirer {
			// A broker that keeps no count (RabbitMQ 3.x's plugin) still
			// says the message was delivered before: count that once.
			m.BackoutCount = 1
		}
	}
	if n, ok := w.Annotations[annDeliveryCount]; ok {
		switch x := n.(type) {
		case int64:
			m.BackoutCount = max(m.BackoutCount, int(x))
		case int32:
			m.BackoutCount = max(m.BackoutCount, int(x))
		case uint32:
			m.BackoutCount = max(m.BackoutCount, int(x))
		case uint64:
			m.BackoutCount = max(m.BackoutCount, int(x))
		}
	}
	if p := w.Properties; p != nil {
		m.MsgID = idFromWire(p.MessageID)
		m.CorrelID = idFromWire(p.CorrelationID)
		if p.ReplyTo != nil {
			m.ReplyTo = strings.TrimPrefix(*p.ReplyTo, t.opts.AddressPrefix)
		}
		if p.CreationTime != nil {
			m.PutTime = p.CreationTime.UTC()
		}
		if p.AbsoluteExpiryTime != nil && !p.AbsoluteExpiryTime.IsZero() {
			left := p.AbsoluteExpiryTime.Sub(now)
			if left <= 0 {
				return m, true, nil
			}
			m.Expiry = left
		}
	}
	for k, v := range w.ApplicationProperties {
		if m.Properties == nil {
			m.Properties = map[string]string{}
		}
		s, ok := v.(string)
		if !ok {
			s = fmt.Sprint(v)
			warn = fmt.Errorf("application property %s is a %T, not a string", k, v)
		}
		m.Properties[k] = s
	}
	return m, false, warn
}

func ptr[T any](v T) *T { return &v }
