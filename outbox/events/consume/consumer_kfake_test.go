package consume

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox/events"
)

// brokers is the in-process broker (kfake, one broker on 127.0.0.1).
var brokers []string

func TestMain(m *testing.M) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
	brokers = c.ListenAddrs()
	code := m.Run()
	c.Close()
	os.Exit(code)
}

func createTopic(t testing.TB, topic string, partitions int) {
	t.Helper()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second}
	resp, err := cl.CreateTopics(context.Background(), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range resp.Errors {
		if e != nil {
			t.Fatal(e)
		}
	}
}

func produce(t testing.TB, msgs ...kafka.Message) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Balancer: &kafka.Murmur2Balancer{}, BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
}

func onTopic(topic string, ms ...kafka.Message) []kafka.Message {
	out := make([]kafka.Message, len(ms))
	for i, m := range ms {
		m.Topic, m.Partition, m.Offset = topic, 0, 0
		out[i] = m
	}
	return out
}

// A corrupt record and a rewind between good ones: without SkipRefused the
// consumer stops at the first refused record; with it, both are recorded
// in EventConsumerRejected, committed past, and the good events applied.
func TestConsumerRefusedRecords(t *testing.T) {
	topic := fmt.Sprintf("refused.%s.%d", t.Name(), time.Now().UnixNano())
	createTopic(t, topic, 1)
	corrupt := record("TX-1", 2)
	corrupt.Value = corrupt.Value[:30]
	produce(t, onTopic(topic, record("TX-1", 1), corrupt, record("TX-1", 3), record("TX-1", 2), record("TX-1", 4))...)

	ctx := context.Background()
	db := openConsumerDB(t)
	p := NewProcessor(db, "ledger", nil, nil)
	strict, err := NewConsumer(Config{Brokers: brokers, GroupID: topic + ".strict", Topics: []string{topic}, FetchTimeout: 5 * time.Second}, p, addAmount)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	err = strict.Run(rctx)
	cancel()
	strict.Close()
	var de *DecodeError
	if !errors.As(err, &de) || de.KafkaOff != 1 || de.Offset != 30 {
		t.Fatalf("strict Run ended with %v, want the decode error of offset 1", err)
	}
	if got := effects(t, db); got != "[TX-1/1]" {
		t.Fatalf("strict effects %s", got)
	}

	// Same group: it resumes at the corrupt record (never committed).
	skip, err := NewConsumer(Config{Brokers: brokers, GroupID: topic + ".strict", Topics: []string{topic}, SkipRefused: true, FetchTimeout: time.Second}, p, addAmount)
	if err != nil {
		t.Fatal(err)
	}
	defer skip.Close()
	var outcomes []string
	for {
		ev, res, err := skip.Next(ctx)
		if errors.Is(err, ErrNoMessage) {
			break
		}
		switch {
		case err == nil:
			outcomes = append(outcomes, fmt.Sprintf("%d:%s", ev.EventSeq, res.Outcome))
		case errors.As(err, &de):
			outcomes = append(outcomes, "corrupt")
		default:
			var rw *RewindError
			if !errors.As(err, &rw) {
				t.Fatal(err)
			}
			outcomes = append(outcomes, fmt.Sprintf("%d:rewind", rw.Seq))
		}
	}
	if got := fmt.Sprint(outcomes); got != "[corrupt 3:applied 2:rewind 4:applied]" {
		t.Fatalf("outcomes %s", got)
	}
	if got := effects(t, db); got != "[TX-1/1 TX-1/3 TX-1/4]" {
		t.Fatalf("effects %s", got)
	}
	var rejected []string
	if err := db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT kafka_offset, reason_code FROM EventConsumerRejected ORDER BY kafka_offset`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var off int64
			var code string
			if err := rows.Scan(&off, &code); err != nil {
				return err
			}
			rejected = append(rejected, fmt.Sprintf("%d:%s", off, code))
		}
		return rows.Err()
	}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(rejected); got != "[1:INVALID_REQUEST 3:INVARIANT_VIOLATION]" {
		t.Fatalf("rejected %s", got)
	}
}

// signedRecord is record(chain, seq) with a real entry hash, signed.
func signedRecord(t testing.TB, chain string, seq int64, s events.Signer) kafka.Message {
	t.Helper()
	e := finality.Entry{LogID: fmt.Sprintf("%s-%d", chain, seq), TxID: chain, EventType: finality.HReserved, StateTo: "RESERVED",
		PayloadJSON: `{"amount":1200}`, EventSeq: 100 + seq, OccurredAt: "2026-04-01T01:00:00.000000000Z", PrevHash: "GENESIS"}
	e.EntryHash = finality.ComputeHash(e.PrevHash, e)
	m := events.NewMessage(e, seq, "", events.DefaultProducer)
	if err := s.Sign(&m); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(m)
	km := kafka.Message{Key: []byte(chain), Value: b}
	for _, h := range m.Headers() {
		km.Headers = append(km.Headers, kafka.Header{Key: h.Key, Value: []byte(h.Value)})
	}
	return km
}

// With Keys set, a record whose payload was changed after signing and an
// unsigned record are refused (recorded with their codes and committed
// past under SkipRefused); the signed events are applied.
func TestConsumerVerifiesSignatures(t *testing.T) {
	topic := fmt.Sprintf("signed.%d", time.Now().UnixNano())
	createTopic(t, topic, 1)
	pub, priv, _ := ed25519.GenerateKey(nil)
	s := events.Signer{KeyID: "KEY-ZC-T", PrivateKey: priv}
	forged := signedRecord(t, "TX-S", 2, s)
	forged.Value = bytes.Replace(forged.Value, []byte(`"amount":1200`), []byte(`"amount":9200`), 1)
	produce(t, onTopic(topic, signedRecord(t, "TX-S", 1, s), forged, record("TX-S", 3), signedRecord(t, "TX-S", 4, s))...)

	ctx := context.Background()
	db := openConsumerDB(t)
	keys := func(id string, _ time.Time) (ed25519.PublicKey, error) {
		if id != s.KeyID {
			return nil, fmt.Errorf("unknown key %s", id)
		}
		return pub, nil
	}
	c, err := NewConsumer(Config{Brokers: brokers, GroupID: topic, Topics: []string{topic}, SkipRefused: true,
		FetchTimeout: time.Second, Keys: keys}, NewProcessor(db, "ledger", nil, nil), addAmount)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var outcomes []string
	for {
		ev, _, err := c.Next(ctx)
		if errors.Is(err, ErrNoMessage) {
			break
		}
		var de *DecodeError
		switch {
		case err == nil:
			outcomes = append(outcomes, fmt.Sprintf("%d:applied", ev.EventSeq))
		case errors.As(err, &de) && de.Field == "value.signature":
			outcomes = append(outcomes, fmt.Sprintf("%d:bad-signature", de.KafkaOff))
		default:
			t.Fatal(err)
		}
	}
	if got := fmt.Sprint(outcomes); got != "[1:applied 1:bad-signature 2:bad-signature 4:applied]" {
		t.Fatalf("outcomes %s", got)
	}
	if got := effects(t, db); got != "[TX-S/1 TX-S/4]" {
		t.Fatalf("effects %s", got)
	}
	var codes string
	if err := db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT group_concat(reason_code, ',') FROM (SELECT reason_code FROM EventConsumerRejected ORDER BY kafka_offset)`).Scan(&codes)
	}); err != nil {
		t.Fatal(err)
	}
	if codes != "EXTERNAL_SIGNATURE_INVALID,EXTERNAL_SIGNATURE_INVALID" {
		t.Fatalf("rejected codes %q", codes)
	}
}
