package kafkapub_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"

	"github.com/zcgw/zcgw/outbox/events/kafkapub"
)

// BenchmarkKfakeCeiling: how fast the in-process kfake broker takes
// records from kafka-go at all, with no outbox and no bookkeeping: b.N
// prepared records (100 keys, 6 partitions) written in steps of 5,000 by
// sync WriteMessages, as BenchmarkPublish's raw writer does. Variants:
//
//   - size: "event" records shaped as the publisher's (key, the 13 spec
//     headers, a JSON envelope with random ids and hashes: about the
//     1,169 record bytes of BenchmarkPublish's record-bytes/event) or
//     "small" ones (key and a 100-byte value, no headers);
//   - compression: none, snappy, lz4 (kafka-go compresses each batch);
//   - writers: 1, 2 or 4 Writers, each writing its share of the steps
//     concurrently (per-key order is kept only within one writer).
//
// It says whether anything on the producer side can take the publish
// path past a rate: the publisher cannot beat the broker it writes to.
func BenchmarkKfakeCeiling(b *testing.B) {
	for _, size := range []string{"event", "small"} {
		for _, codec := range []string{"none", "snappy", "lz4"} {
			for _, writers := range []int{1, 2, 4} {
				if size == "small" && codec == "snappy" {
					continue
				}
				if codec != "none" && writers != 1 {
					continue
				}
				b.Run(fmt.Sprintf("%s/%s/writers-%d", size, codec, writers), func(b *testing.B) { benchCeiling(b, size, codec, writers) })
			}
		}
	}
}

func benchCeiling(b *testing.B, size, codec string, writers int) {
	ctx := context.Background()
	topic := name(b, fmt.Sprint(b.N))
	if err := kafkapub.EnsureTopics(ctx, brokers, []string{topic}, 6, 1); err != nil {
		b.Fatal(err)
	}
	// Each record its own bytes, shaped as the publisher's (an envelope
	// whose ids and hashes are random hex, so compression sees what it
	// would see in a real step: repeated keys, unrepeated ids and hashes).
	rnd := rand.New(rand.NewPCG(1, 2))
	hexs := func(n int) string {
		const digits = "0123456789abcdef"
		out := make([]byte, n)
		for i := range out {
			out[i] = digits[rnd.IntN(16)]
		}
		return string(out)
	}
	msgs := make([]kafka.Message, b.N)
	var bytes int
	for i := range msgs {
		chain := fmt.Sprintf("TX-%03d", i%100)
		id, corr := hexs(32), hexs(32)
		m := kafka.Message{Key: []byte(chain)}
		if size == "event" {
			m.Value = []byte(fmt.Sprintf(`{"schema_version":"1.0","message_type":"EVENT","name":"HReserved","message_id":"%s","occurred_at":"2026-04-01T01:00:00.%09dZ",`+
				`"idempotency_key":"TX:%s:HReserved:ZC:%d","event_seq":%d,"correlation_id":"%s","producer":{"org_id":"ZC","system_id":"zcgw-coordinator"},`+
				`"chain_id":"%s","aggregate":"TX:%s","body":{"txid":"%s","state_to":"RESERVED","payload":{"amount":%d,"payee":"0002","payer":"0001"},`+
				`"finality_event_seq":%d,"log_id":"%s","prev_hash":"%s","entry_hash":"%s"},"signature":{"alg":"Ed25519","key_id":"zc-2026","value":"%s"}}`,
				id, i, chain, i, i, corr, chain, chain, chain, i, i, id, hexs(64), hexs(64), hexs(88)))
			for _, h := range [][2]string{{"event_seq", fmt.Sprint(i)}, {"event_type", "HReserved"}, {"schema_version", "1.0"}, {"message_type", "EVENT"},
				{"name", "HReserved"}, {"message_id", id}, {"occurred_at", fmt.Sprintf("2026-04-01T01:00:00.%09dZ", i)},
				{"idempotency_key", fmt.Sprintf("TX:%s:HReserved:ZC:%d", chain, i)}, {"correlation_id", corr}, {"producer_org_id", "ZC"},
				{"producer_system_id", "zcgw-coordinator"}, {"chain_id", chain}, {"aggregate", "TX:" + chain}} {
				m.Headers = append(m.Headers, kafka.Header{Key: h[0], Value: []byte(h[1])})
			}
		} else {
			m.Value = []byte(fmt.Sprintf(`{"chain_id":"%s","event_seq":%d,"id":"%s","hash":"%s"}`, chain, i, id, hexs(16)))
		}
		bytes += len(m.Key) + len(m.Value)
		for _, h := range m.Headers {
			bytes += len(h.Key) + len(h.Value)
		}
		msgs[i] = m
	}
	var comp kafka.Compression
	switch codec {
	case "snappy":
		comp = kafka.Compression(compress.Snappy)
	case "lz4":
		comp = kafka.Compression(compress.Lz4)
	}
	ws := make([]*kafka.Writer, writers)
	for i := range ws {
		ws[i] = &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, Balancer: &kafka.Murmur2Balancer{}, RequiredAcks: kafka.RequireAll,
			BatchSize: 5000, BatchBytes: 1 << 20, BatchTimeout: 2 * time.Millisecond, Compression: comp}
		defer ws[i].Close()
	}
	const step = 5000
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range ws {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for lo := w * step; lo < len(msgs); lo += writers * step {
				if err := ws[w].WriteMessages(ctx, msgs[lo:min(lo+step, len(msgs))]...); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	b.StopTimer()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/event")
	b.ReportMetric(float64(bytes)/float64(b.N), "record-bytes/event")
	b.ReportMetric(0, "ns/op")
}
