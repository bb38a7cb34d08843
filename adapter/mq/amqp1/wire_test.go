package amqp1

import (
	"bytes"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"

	"github.com/zcgw/zcgw/adapter/mq"
)

// A message survives toWire, the AMQP encoding and fromWire: ids as
// 24-byte binary, reply-to as an address, expiry counted from Put.
func TestWireRoundTrip(t *testing.T) {
	tr := New("amqp://h/", Options{})
	put := time.Date(2026, 12, 3, 1, 2, 3, 0, time.UTC)
	m := &mq.Message{MsgID: mq.NewID(), CorrelID: mq.NewID(), ReplyTo: "CORE.001.REPLY", NonPersistent: true, Priority: 7,
		Expiry: 10 * time.Second, Properties: map[string]string{"bank": "0001"}, Body: []byte{0xF0, 0x00, 0x0E}, PutTime: put}
	w, ok := tr.toWire(m, put.Add(4*time.Second))
	if !ok || w.Header.TTL != 6*time.Second || *w.Properties.ReplyTo != DefaultAddressPrefix+"CORE.001.REPLY" {
		t.Fatalf("wire: ok %v ttl %v reply-to %v", ok, w.Header.TTL, *w.Properties.ReplyTo)
	}
	raw, err := w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var back amqp.Message
	if err := back.UnmarshalBinary(raw); err != nil {
		t.Fatal(err)
	}
	got, expired, warn := tr.fromWire(&back, put.Add(5*time.Second))
	if expired || warn != nil || got.MsgID != m.MsgID || got.CorrelID != m.CorrelID || got.ReplyTo != m.ReplyTo ||
		!got.NonPersistent || got.Priority != 7 || got.Expiry != 5*time.Second || !bytes.Equal(got.Body, m.Body) ||
		got.Properties["bank"] != "0001" || !got.PutTime.Equal(put) {
		t.Fatalf("round trip: %+v expired %v warn %v", got, expired, warn)
	}
	if _, expired, _ := tr.fromWire(&back, put.Add(11*time.Second)); !expired {
		t.Fatal("a delivery past its deadline is not expired")
	}
	if _, ok := tr.toWire(m, put.Add(10*time.Second)); ok {
		t.Fatal("a message expired at commit is sent")
	}
	// Ids set by another client: string and UUID, byte for byte, padded.
	if id := idFromWire("ID:123"); !bytes.Equal(id[:6], []byte("ID:123")) || id[6] != 0 {
		t.Fatalf("string id: %x", id)
	}
	if id := idFromWire(amqp.UUID{1, 2, 3}); id[0] != 1 || id[2] != 3 || id[16] != 0 {
		t.Fatalf("uuid id: %x", id)
	}
}

// FuzzFromWire: any AMQP message the decoder accepts is read without a
// panic into a message whose ids are 24 bytes and whose priority is 0..9.
func FuzzFromWire(f *testing.F) {
	tr := New("amqp://h/", Options{})
	m := &mq.Message{MsgID: mq.NewID(), CorrelID: mq.NewID(), ReplyTo: "Q", Expiry: time.Second,
		Properties: map[string]string{"k": "v"}, Body: []byte("body"), PutTime: time.Unix(1, 0)}
	w, _ := tr.toWire(m, time.Unix(1, 0))
	raw, _ := w.MarshalBinary()
	f.Add(raw)
	f.Add([]byte{0x00, 0x53, 0x75, 0xa0, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		var w amqp.Message
		if err := w.UnmarshalBinary(b); err != nil {
			return
		}
		got, _, _ := tr.fromWire(&w, time.Unix(2, 0))
		if got.Priority < mq.MinPriority || got.Priority > mq.MaxPriority || got.BackoutCount < 0 {
			t.Fatalf("read %+v", got)
		}
	})
}
