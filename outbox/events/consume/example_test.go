package consume_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/segmentio/kafka-go"

	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox/events"
	"github.com/zcgw/zcgw/outbox/events/consume"
)

// rec builds the record the publisher would send for event seq of chain.
func rec(chain string, seq int64) kafka.Message {
	e := finality.Entry{LogID: fmt.Sprintf("%s-%d", chain, seq), TxID: chain, EventType: finality.HReserved, StateTo: "RESERVED", PayloadJSON: "{}", EventSeq: seq}
	m := events.NewMessage(e, seq, "", events.DefaultProducer)
	v, _ := json.Marshal(m)
	km := kafka.Message{Topic: "zc.events", Key: []byte(chain), Value: v}
	for _, h := range m.Headers() {
		km.Headers = append(km.Headers, kafka.Header{Key: h.Key, Value: []byte(h.Value)})
	}
	return km
}

// Process applies each (chain, event_seq) once, counts gaps and refuses
// rewinds.
func ExampleProcessor_Process() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "zcgw-example")
	defer os.RemoveAll(dir)
	db, _ := store.Open(ctx, filepath.Join(dir, "consumer.db"), consume.Schema)
	defer db.Close()
	p := consume.NewProcessor(db, "fraud", nil, nil)
	count := func(ctx context.Context, tx *store.Tx, ev consume.Event) error { return nil }

	for _, seq := range []int64{1, 2, 2, 5, 4} {
		ev, err := consume.Decode(rec("TX-1", seq))
		if err != nil {
			fmt.Println(err)
			continue
		}
		res, err := p.Process(ctx, ev, count)
		var rw *consume.RewindError
		switch {
		case errors.As(err, &rw):
			fmt.Printf("seq %d: refused, last was %d\n", seq, rw.Last)
		case err != nil:
			fmt.Println(err)
		default:
			fmt.Printf("seq %d: %s, missing %d\n", seq, res.Outcome, res.Missing)
		}
	}
	fmt.Printf("%+v\n", p.Stats())
	// Output:
	// seq 1: applied, missing 0
	// seq 2: applied, missing 0
	// seq 2: duplicate, missing 0
	// seq 5: applied, missing 2
	// seq 4: refused, last was 5
	// {Applied:3 Duplicates:1 Gaps:1 Missing:2 Refused:1}
}
