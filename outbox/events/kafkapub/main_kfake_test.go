package kafkapub_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox/events"
	"github.com/zcgw/zcgw/outbox/events/consume"
	"github.com/zcgw/zcgw/outbox/events/kafkapub"
)

// brokers is the shared in-process broker (kfake, one broker on 127.0.0.1)
// started by TestMain. Tests that stop a broker start their own.
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

var t0 = time.Date(2026, 4, 1, 1, 0, 0, 0, time.UTC)

var runs atomic.Int64

// name makes topic and group names unique per test run (-count > 1 reuses
// the broker).
func name(t testing.TB, suffix string) string {
	return fmt.Sprintf("%s.%d.%s", strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()), runs.Add(1), suffix)
}

// coordinator is a coordinator database with the event outbox installed.
type coordinator struct {
	db  *store.DB
	log *finality.Log
	ob  *events.Outbox
}

func newCoordinator(t testing.TB, clk clock.Clock) *coordinator {
	t.Helper()
	db, err := store.OpenCoordinator(context.Background(), filepath.Join(t.TempDir(), "zc.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	l := finality.New(clk)
	events.Install(l, events.Producer{}, nil)
	return &coordinator{db: db, log: l, ob: events.New(db, clk)}
}

// appendRound appends one event to each of chains TX-0..TX-(chains-1) in
// one transaction; every tenth round also appends a GLOBAL DNS event.
func (c *coordinator) appendRound(t testing.TB, round, chains int) {
	t.Helper()
	if err := c.db.Write(context.Background(), func(tx *store.Tx) error {
		for k := 0; k < chains; k++ {
			if _, err := c.log.Append(context.Background(), tx, finality.Event{TxID: fmt.Sprintf("TX-%03d", k), Type: finality.HReserved,
				StateTo: "RESERVED", Payload: map[string]int{"round": round}}); err != nil {
				return err
			}
		}
		if round%10 == 0 {
			_, err := c.log.Append(context.Background(), tx, finality.Event{Type: finality.DnsIntradayCutoff, StateTo: "CUTOFF"})
			return err
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func (c *coordinator) unsent(t testing.TB) int64 {
	t.Helper()
	n, err := c.ob.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n.Unsent
}

// drain steps the publisher until the outbox is empty.
func drain(t testing.TB, p *kafkapub.Publisher, c *coordinator) {
	t.Helper()
	for i := 0; c.unsent(t) > 0; i++ {
		if _, err := p.Step(context.Background()); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if i > 10000 {
			t.Fatal("outbox does not drain")
		}
	}
}

// downstream is a consumer's database: the library's tables plus Seen, the
// handler's own effect (one row per applied event, in arrival order).
type downstream struct {
	db   *store.DB
	proc *consume.Processor
	mu   sync.Mutex
	got  []consume.Event
}

const seenSchema = `CREATE TABLE IF NOT EXISTS Seen (ord INTEGER PRIMARY KEY AUTOINCREMENT, chain_id TEXT NOT NULL, event_seq INTEGER NOT NULL, topic TEXT NOT NULL, kafka_partition INTEGER NOT NULL);`

func newDownstream(t testing.TB) *downstream {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "consumer.db"), consume.Schema+seenSchema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &downstream{db: db, proc: consume.NewProcessor(db, "test", nil, nil)}
}

func (d *downstream) handle(ctx context.Context, tx *store.Tx, ev consume.Event) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO Seen (chain_id, event_seq, topic, kafka_partition) VALUES (?, ?, ?, ?)`, ev.ChainID, ev.EventSeq, ev.Topic, ev.Partition); err != nil {
		return err
	}
	d.mu.Lock()
	d.got = append(d.got, ev)
	d.mu.Unlock()
	return nil
}

// seen returns the applied (chain -> event_seqs in arrival order) and the
// partitions each chain arrived on, from the handler's table.
func (d *downstream) seen(t testing.TB) (map[string][]int64, map[string]map[int]bool, int) {
	t.Helper()
	seqs := map[string][]int64{}
	parts := map[string]map[int]bool{}
	n := 0
	if err := d.db.Read(context.Background(), func(tx *store.Tx) error {
		rows, err := tx.QueryContext(context.Background(), `SELECT chain_id, event_seq, topic, kafka_partition FROM Seen ORDER BY ord`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var chain, topic string
			var seq int64
			var part int
			if err := rows.Scan(&chain, &seq, &topic, &part); err != nil {
				return err
			}
			key := topic + "|" + chain
			seqs[key] = append(seqs[key], seq)
			if parts[key] == nil {
				parts[key] = map[int]bool{}
			}
			parts[key][part] = true
			n++
		}
		return rows.Err()
	}); err != nil {
		t.Fatal(err)
	}
	return seqs, parts, n
}

// consume reads with one group member until the processor has applied
// want events in total, then closes the reader.
func (d *downstream) consume(t testing.TB, brokers []string, group string, topics []string, want int64) {
	t.Helper()
	c, err := consume.NewConsumer(consume.Config{Brokers: brokers, GroupID: group, Topics: topics, FetchTimeout: time.Second}, d.proc, d.handle)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for d.proc.Stats().Applied < want {
		if time.Now().After(deadline) {
			t.Fatalf("applied %d of %d events before the deadline (%+v)", d.proc.Stats().Applied, want, d.proc.Stats())
		}
		if _, _, err := c.Next(context.Background()); err != nil && err != consume.ErrNoMessage {
			t.Fatal(err)
		}
	}
	// Read on briefly: nothing beyond want may be applied.
	for {
		_, _, err := c.Next(context.Background())
		if err == consume.ErrNoMessage {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// freePort returns a loopback port nobody listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startBroker starts a one-broker kfake on port that persists to dir, so a
// restart on the same port keeps topics, records and committed offsets.
func startBroker(t testing.TB, port int, dir string) *kfake.Cluster {
	t.Helper()
	var c *kfake.Cluster
	var err error
	for i := 0; i < 50; i++ { // the old listener's port may take a moment to free
		c, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.DataDir(dir))
		if err == nil {
			return c
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("kfake on port %d: %v", port, err)
	return nil
}
