package rabbit

import (
	"bytes"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/zcgw/zcgw/adapter/mq"
)

func TestIDWireForm(t *testing.T) {
	id := mq.NewID()
	if got := idFromWire(idToWire(id)); got != id {
		t.Fatalf("round trip %s -> %s", id, got)
	}
	if idToWire(mq.ID{}) != "" || !idFromWire("").IsZero() {
		t.Fatal("MQMI_NONE must travel as an empty id")
	}
	// A foreign client's id is taken byte for byte, padded with zeros.
	got := idFromWire("ORDER-42")
	if !bytes.Equal(got[:8], []byte("ORDER-42")) || !bytes.Equal(got[8:], make([]byte, 16)) {
		t.Fatalf("foreign id = %x", got)
	}
	long := strings.Repeat("z", 30)
	if got := idFromWire(long); string(got[:]) != long[:24] {
		t.Fatalf("long foreign id = %q", got[:])
	}
}

func TestPublishingRoundTrip(t *testing.T) {
	put := time.Date(2026, 12, 2, 1, 2, 3, 456789000, time.UTC)
	m := &mq.Message{MsgID: mq.NewID(), CorrelID: mq.NewID(), ReplyTo: "R", Priority: 7,
		Expiry: 10 * time.Second, Properties: map[string]string{"bank": "0001"}, Body: []byte{0, 0x0e, 0xff}, PutTime: put}
	pub, ok := toPublishing(m, put.Add(4*time.Second))
	if !ok || pub.Expiration != "6000" || pub.DeliveryMode != amqp.Persistent || pub.Priority != 7 {
		t.Fatalf("publishing: ok=%v expiration=%q mode=%d prio=%d", ok, pub.Expiration, pub.DeliveryMode, pub.Priority)
	}
	if _, ok := toPublishing(m, put.Add(10*time.Second)); ok {
		t.Fatal("a message whose expiry passed before commit was published")
	}
	d := &amqp.Delivery{Headers: pub.Headers, DeliveryMode: pub.DeliveryMode, Priority: pub.Priority,
		CorrelationId: pub.CorrelationId, ReplyTo: pub.ReplyTo, MessageId: pub.MessageId, Body: pub.Body}
	d.Headers[hdrDelivery] = int64(2)
	got, expired, warn := fromDelivery(d, put.Add(5*time.Second))
	if expired || warn != nil {
		t.Fatalf("expired=%v warn=%v", expired, warn)
	}
	if got.MsgID != m.MsgID || got.CorrelID != m.CorrelID || got.ReplyTo != "R" || got.Priority != 7 ||
		!bytes.Equal(got.Body, m.Body) || got.Properties["bank"] != "0001" || len(got.Properties) != 1 ||
		!got.PutTime.Equal(put) || got.Expiry != 5*time.Second || got.BackoutCount != 2 {
		t.Fatalf("received %+v", got)
	}
	if _, expired, _ := fromDelivery(d, put.Add(11*time.Second)); !expired {
		t.Fatal("delivery past its expiry not reported expired")
	}
}

func TestDeadLetterReason(t *testing.T) {
	d := &amqp.Delivery{Headers: amqp.Table{hdrDeath: []any{amqp.Table{"reason": "delivery_limit", "queue": "IN"}}}}
	m, _, _ := fromDelivery(d, time.Now())
	if m.Properties[mq.PropBackoutReason] != "rabbitmq dead-lettered: delivery_limit" || m.Properties[mq.PropBackoutSource] != "IN" {
		t.Fatalf("props %v", m.Properties)
	}
	// The poison handler's own reason wins over the broker's.
	d.Headers[mq.PropBackoutReason] = "bad record"
	m, _, _ = fromDelivery(d, time.Now())
	if m.Properties[mq.PropBackoutReason] != "bad record" {
		t.Fatalf("props %v", m.Properties)
	}
}

// FuzzFromDelivery feeds arbitrary ids, transport headers and one
// application header to the delivery decoder: it must never panic, must
// keep every property name valid, and must keep BackoutCount >= 0.
func FuzzFromDelivery(f *testing.F) {
	f.Add(mq.NewID().String(), "", "2026-12-02T01:02:03Z", "", int64(0), "bank", "0001")
	f.Add("ORDER-42", "zz", "not a time", "2026-12-02T01:02:03.5Z", int64(-5), "x-death", "v")
	f.Add("", strings.Repeat("0", 48), "", "garbage", int64(1<<40), "has space", "\xff")
	f.Fuzz(func(t *testing.T, msgID, correlID, putTime, expiresAt string, count int64, name, value string) {
		d := &amqp.Delivery{MessageId: msgID, CorrelationId: correlID, Priority: 200,
			Headers: amqp.Table{hdrPutTime: putTime, hdrExpiresAt: expiresAt, hdrDelivery: count, name: value}}
		m, _, _ := fromDelivery(d, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
		if m.BackoutCount < 0 || m.Priority > mq.MaxPriority || m.Body == nil {
			t.Fatalf("count %d priority %d body %v", m.BackoutCount, m.Priority, m.Body)
		}
		for k := range m.Properties {
			if err := mq.ValidatePropertyName(k); err != nil {
				t.Fatalf("invalid property name let through: %v", err)
			}
		}
		if len(msgID) == 48 {
			if id, err := mq.ParseID(msgID); err == nil && id != m.MsgID {
				t.Fatalf("hex id %s decoded to %s", msgID, m.MsgID)
			}
		}
	})
}
