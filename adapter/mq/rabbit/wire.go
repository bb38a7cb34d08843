package rabbit

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/zcgw/zcgw/adapter/mq"
)

// Transport headers; the x- prefix keeps them apart from application
// properties, which may not start with x-.
const (
	hdrPutTime   = "x-zcgw-put-time"   // RFC3339Nano UTC
	hdrExpiresAt = "x-zcgw-expires-at" // RFC3339Nano UTC, absent when unlimited
	hdrDelivery  = "x-delivery-count"  // set by quorum queues on redelivery
	hdrDeath     = "x-death"           // set by the broker when dead-lettering
)

// idToWire is the AMQP message-id/correlation-id form of an ID: 48 hex
// characters, or "" for MQMI_NONE.
func idToWire(id mq.ID) string {
	if id.IsZero() {
		return ""
	}
	return id.String()
}

// idFromWire reads an AMQP message-id or correlation-id. Our own form is
// 48 hex characters; an id set by another AMQP client is taken byte for
// byte, truncated or padded with zeros to 24 bytes, as IBM MQ pads a short
// JMSCorrelationID.
func idFromWire(s string) mq.ID {
	var id mq.ID
	if len(s) == 2*mq.IDLength {
		if _, err := hex.Decode(id[:], []byte(s)); err == nil {
			return id
		}
		id = mq.ID{}
	}
	copy(id[:], s)
	return id
}

// toPublishing builds the AMQP message for m at commit time now. ok is
// false when m has already expired (its expiry counts from Put).
func toPublishing(m *mq.Message, now time.Time) (p amqp.Publishing, ok bool) {
	headers := amqp.Table{hdrPutTime: m.PutTime.UTC().Format(time.RFC3339Nano)}
	for k, v := range m.Properties {
		headers[k] = v
	}
	p = amqp.Publishing{
		Headers:       headers,
		DeliveryMode:  amqp.Persistent,
		Priority:      uint8(m.Priority),
		CorrelationId: idToWire(m.CorrelID),
		ReplyTo:       m.ReplyTo,
		MessageId:     idToWire(m.MsgID),
		Timestamp:     m.PutTime,
		Body:          m.Body,
	}
	if m.NonPersistent {
		p.DeliveryMode = amqp.Transient
	}
	if m.Expiry > 0 {
		deadline := m.PutTime.Add(m.Expiry)
		left := deadline.Sub(now)
		if left <= 0 {
			return p, false
		}
		p.Expiration = strconv.FormatInt(int64((left+time.Millisecond-1)/time.Millisecond), 10)
		headers[hdrExpiresAt] = deadline.UTC().Format(time.RFC3339Nano)
	}
	return p, true
}

// fromDelivery reads a delivery into a Message. Headers other than x-*
// become string properties (non-string values are formatted with %v);
// x-delivery-count becomes BackoutCount; a broker dead-letter (x-death)
// is reported in the backout properties when they are not set already.
// It never fails: a malformed transport header is ignored, and the
// problem returned as warn for logging.
func fromDelivery(d *amqp.Delivery, now time.Time) (m *mq.Message, expired bool, warn error) {
	m = &mq.Message{
		MsgID:         idFromWire(d.MessageId),
		CorrelID:      idFromWire(d.CorrelationId),
		ReplyTo:       d.ReplyTo,
		NonPersistent: d.DeliveryMode == amqp.Transient,
		Priority:      min(int(d.Priority), mq.MaxPriority),
		Body:          d.Body,
		PutTime:       d.Timestamp,
	}
	if m.Body == nil {
		m.Body = []byte{}
	}
	var warns []string
	for k, v := range d.Headers {
		if strings.HasPrefix(strings.ToLower(k), "x-") {
			continue
		}
		if mq.ValidatePropertyName(k) != nil {
			warns = append(warns, fmt.Sprintf("header %q is not a valid property name; dropped", k))
			continue
		}
		if m.Properties == nil {
			m.Properties = map[string]string{}
		}
		switch v := v.(type) {
		case string:
			m.Properties[k] = v
		case []byte:
			m.Properties[k] = string(v)
		default:
			m.Properties[k] = fmt.Sprint(v)
		}
	}
	if s, ok := d.Headers[hdrPutTime].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			m.PutTime = t
		} else {
			warns = append(warns, fmt.Sprintf("%s %q: %v", hdrPutTime, s, err))
		}
	}
	if s, ok := d.Headers[hdrExpiresAt].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			if !t.After(now) {
				expired = true
			}
			m.Expiry = max(t.Sub(now), time.Nanosecond)
		} else {
			warns = append(warns, fmt.Sprintf("%s %q: %v", hdrExpiresAt, s, err))
		}
	}
	m.BackoutCount = deliveryCount(d.Headers[hdrDelivery])
	if deaths, ok := d.Headers[hdrDeath].([]any); ok && len(deaths) > 0 {
		if death, ok := deaths[0].(amqp.Table); ok {
			if m.Properties == nil {
				m.Properties = map[string]string{}
			}
			if _, set := m.Properties[mq.PropBackoutReason]; !set {
				m.Properties[mq.PropBackoutReason] = fmt.Sprintf("rabbitmq dead-lettered: %v", death["reason"])
				if q, ok := death["queue"].(string); ok {
					m.Properties[mq.PropBackoutSource] = q
				}
			}
		}
	}
	if len(warns) > 0 {
		warn = fmt.Errorf("mq/rabbit: %s", strings.Join(warns, "; "))
	}
	return m, expired, warn
}

func deliveryCount(v any) int {
	switch n := v.(type) {
	case int64:
		return int(max(n, 0))
	case int32:
		return int(max(n, 0))
	case int:
		return max(n, 0)
	case int16:
		return int(max(n, 0))
	case uint8:
		return int(n)
	case uint16:
		return int(n)
	case uint32:
		return int(n)
	}
	return 0
}
