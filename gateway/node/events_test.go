package node

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/zcgw/zcgw/coordinator/store"
)

// TestEventsFanOutToKafka: with brokers in node.json the node publishes
// every FinalityLog event of a settled transfer to Kafka, keyed by the
// transfer's chain, in event_seq order; the broker is an in-process
// Kafka-protocol broker (kfake) on loopback.
func TestEventsFanOutToKafka(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	const topic = "zc.events.node-test"
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second}
	if _, err := cl.CreateTopics(context.Background(), &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}}}); err != nil {
		t.Fatal(err)
	}

	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Kafka = &KafkaConfig{Brokers: brokers, DefaultTopic: topic}
	n, err := Start(context.Background(), Options{DataDir: scratch(t), Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	a := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody("kafka-1", 700, "h:001-0001", "h:002-0001"))
	if a.status != 201 {
		t.Fatalf("POST: %d %s", a.status, a.body)
	}
	txid := a.field("txid")
	n.waitState(t, txid, "SETTLED", 20*time.Second)
	var logged int
	if err := n.DB.Read(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM FinalityLog WHERE txid = ?", txid).Scan(&logged)
	}); err != nil || logged < 2 {
		t.Fatalf("FinalityLog entries of %s: %d %v", txid, logged, err)
	}

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: 0, MaxWait: 250 * time.Millisecond})
	defer r.Close()
	var types []string
	var seqs []int
	deadline := time.Now().Add(20 * time.Second)
	for len(seqs) < logged && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		m, err := r.ReadMessage(ctx)
		cancel()
		if err != nil {
			continue
		}
		if string(m.Key) != txid {
			continue
		}
		var seq int
		var typ string
		for _, h := range m.Headers {
			switch h.Key {
			case "event_seq":
				seq, _ = strconv.Atoi(string(h.Value))
			case "event_type":
				typ = string(h.Value)
			}
		}
		if !json.Valid(m.Value) {
			t.Fatalf("message value is not JSON: %q", m.Value)
		}
		types = append(types, typ)
		seqs = append(seqs, seq)
	}
	if len(seqs) != logged {
		t.Fatalf("got %d events for %s from Kafka, the FinalityLog has %d (types %v)", len(seqs), txid, logged, types)
	}
	for i, s := range seqs {
		if s != i+1 {
			t.Fatalf("event_seq headers %v: want 1..%d in order", seqs, logged)
		}
	}
	if types[0] != "PaymentInitiated" {
		t.Fatalf("first event %q, want PaymentInitiated (all: %v)", types[0], types)
	}
}
