package consume_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox/events"
	"github.com/zcgw/zcgw/outbox/events/consume"
	"github.com/zcgw/zcgw/outbox/events/kafkapub"
)

// The example consumer: a downstream "transfer board" that keeps each
// transfer's latest state, fed by the coordinator's events through Kafka.
// Its table and the library's dedup rows live in one SQLite file and commit
// together, so a redelivered event never moves a transfer twice.
func Example_transferBoard() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "zcgw-example")
	defer os.RemoveAll(dir)
	broker, _ := kfake.NewCluster(kfake.NumBrokers(1))
	defer broker.Close()
	brokers := broker.ListenAddrs()

	// Coordinator side: FinalityLog appends also fill the event outbox.
	zc, _ := store.OpenCoordinator(ctx, filepath.Join(dir, "zc.db"))
	defer zc.Close()
	flog := finality.New(clock.NewManual(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)))
	events.Install(flog, events.Producer{}, nil)
	_ = zc.Write(ctx, func(tx *store.Tx) error {
		for _, ev := range []finality.Event{
			{TxID: "TX-1", Type: finality.PaymentInitiated, StateTo: "RECEIVED"},
			{TxID: "TX-2", Type: finality.PaymentInitiated, StateTo: "RECEIVED"},
			{TxID: "TX-1", Type: finality.Settled, StateFrom: "RECEIVED", StateTo: "SETTLED"},
			{TxID: "TX-2", Type: finality.Cancelled, StateFrom: "RECEIVED", StateTo: "CANCELLED"},
		} {
			if _, err := flog.Append(ctx, tx, ev); err != nil {
				return err
			}
		}
		return nil
	})
	topics := kafkapub.Topics{Default: "zc.events"}
	_ = kafkapub.EnsureTopics(ctx, brokers, topics.All(), 3, 1)
	pub, _ := kafkapub.New(events.New(zc, nil), kafkapub.Config{Brokers: brokers, Topics: topics})
	st, _ := pub.Step(ctx)
	pub.Close()
	fmt.Println("published", st.Sent)

	// Consumer side.
	board, _ := store.Open(ctx, filepath.Join(dir, "board.db"), consume.Schema+
		`CREATE TABLE IF NOT EXISTS Board (txid TEXT PRIMARY KEY, state TEXT NOT NULL, moves INTEGER NOT NULL);`)
	defer board.Close()
	proc := consume.NewProcessor(board, "transfer-board", nil, nil)
	handler := func(ctx context.Context, tx *store.Tx, ev consume.Event) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO Board (txid, state, moves) VALUES (?, ?, 1)
			ON CONFLICT(txid) DO UPDATE SET state = excluded.state, moves = moves + 1`, ev.Body.TxID, ev.Body.StateTo)
		return err
	}
	c, _ := consume.NewConsumer(consume.Config{Brokers: brokers, GroupID: "transfer-board", Topics: topics.All(), FetchTimeout: time.Second}, proc, handler)
	defer c.Close()
	for proc.Stats().Applied < 4 {
		if _, _, err := c.Next(ctx); err != nil && err != consume.ErrNoMessage {
			fmt.Println(err)
			return
		}
	}
	// A redelivery (e.g. after a publisher crash before mark-sent) is dropped.
	ev := consume.Event{Message: mustRow(zc, 3), Topic: "zc.events"}
	res, _ := proc.Process(ctx, ev, handler)
	fmt.Println("redelivered:", res.Outcome)

	_ = board.Read(ctx, func(tx *store.Tx) error {
		rows, _ := tx.QueryContext(ctx, `SELECT txid, state, moves FROM Board ORDER BY txid`)
		defer rows.Close()
		for rows.Next() {
			var id, state string
			var moves int
			_ = rows.Scan(&id, &state, &moves)
			fmt.Println(id, state, moves)
		}
		return nil
	})
	// Output:
	// published 4
	// redelivered: duplicate
	// TX-1 SETTLED 2
	// TX-2 CANCELLED 2
}

// mustRow returns the message of the outbox row with outbox_seq seq.
func mustRow(db *store.DB, seq int64) events.Message {
	rows, _ := events.New(db, nil).Since(context.Background(), seq, 1)
	m, _ := rows[0].Message()
	return m
}
