package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox/events/kafkapub"
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

// Without kafka.create_topics a missing topic refuses the start, naming the
// topic and the setting; with it the node creates the missing topics with
// the layout it gives.
func TestKafkaTopicsAtStart(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Kafka = &KafkaConfig{Brokers: brokers, DefaultTopic: "zc.missing", Topics: map[string]string{"Dns": "zc.dns.missing"}}
	n, err := Start(context.Background(), Options{DataDir: scratch(t), Config: &cfg})
	var mt *kafkapub.MissingTopicError
	if err == nil {
		n.Close()
		t.Fatal("a node whose topics are missing started")
	}
	if !errors.As(err, &mt) || !strings.Contains(err.Error(), "zc.dns.missing, zc.missing") || !strings.Contains(err.Error(), "kafka.create_topics") {
		t.Fatalf("start with missing topics: %v", err)
	}

	cfg.Kafka.CreateTopics = &KafkaTopicLayout{Partitions: 3, Replication: 1}
	n, err = Start(context.Background(), Options{DataDir: scratch(t), Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second}
	md, err := cl.Metadata(context.Background(), &kafka.MetadataRequest{Topics: []string{"zc.missing", "zc.dns.missing"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range md.Topics {
		if tp.Error != nil || len(tp.Partitions) != 3 {
			t.Errorf("topic %s: %d partitions, error %v", tp.Name, len(tp.Partitions), tp.Error)
		}
	}
	if len(md.Topics) != 2 {
		t.Errorf("metadata names %d topics", len(md.Topics))
	}
}

// A publisher that cannot publish shows in /readyz and in the metrics, and
// recovers in both once the broker is back.
func TestKafkaOutageInReadinessAndMetrics(t *testing.T) {
	port := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}()
	dir := t.TempDir()
	broker := func() *kfake.Cluster {
		var c *kfake.Cluster
		var err error
		for i := 0; i < 50; i++ {
			if c, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.DataDir(dir)); err == nil {
				return c
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal(err)
		return nil
	}
	c := broker()
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Kafka = &KafkaConfig{Brokers: []string{fmt.Sprintf("127.0.0.1:%d", port)}, DefaultTopic: "zc.events", CreateTopics: &KafkaTopicLayout{Partitions: 1, Replication: 1}}
	n, err := Start(context.Background(), Options{DataDir: scratch(t), Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	secret := map[string]string{"X-Cron-Secret": n.Config.CronSecret}
	ready := func() (int, string) {
		a := n.do(t, "GET", "/readyz", "", nil, "")
		return a.status, string(a.body)
	}
	metric := func(name string) string {
		m := n.do(t, "GET", "/internal/metrics", "", secret, "")
		for _, line := range strings.Split(string(m.body), "\n") {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				return v
			}
		}
		return ""
	}
	if st, body := ready(); st != 200 || metric("zcgw_event_publisher_failing") != "0" {
		t.Fatalf("healthy: readyz %d %s, failing=%q", st, body, metric("zcgw_event_publisher_failing"))
	}
	c.Close()
	a := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody("kafka-outage", 700, "h:001-0001", "h:002-0001"))
	if a.status != 201 {
		t.Fatalf("POST: %d %s", a.status, a.body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for metric("zcgw_event_publisher_failing") != "1" {
		if time.Now().After(deadline) {
			t.Fatal("the publisher never reported failing during the outage")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st, body := ready(); st != 503 || !strings.Contains(body, `"name":"kafka","ok":false`) {
		t.Fatalf("readyz during the outage: %d %s", st, body)
	}
	if f := metric("zcgw_event_publish_failures_total"); f == "" || f == "0" {
		t.Errorf("failures_total %q during the outage", f)
	}
	c = broker()
	defer c.Close()
	for metric("zcgw_event_publisher_failing") != "0" || metric("zcgw_event_outbox_unsent") != "0" {
		if time.Now().After(deadline.Add(30 * time.Second)) {
			t.Fatalf("no recovery: failing=%s unsent=%s", metric("zcgw_event_publisher_failing"), metric("zcgw_event_outbox_unsent"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st, body := ready(); st != 200 {
		t.Fatalf("readyz after recovery: %d %s", st, body)
	}
	if p := metric("zcgw_events_published_total"); p == "" || p == "0" {
		t.Errorf("published_total %q after recovery", p)
	}
}
