package kafkapub_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox/events/kafkapub"
)

func TestNoBrokersKeepsEventsInTheOutbox(t *testing.T) {
	c := newCoordinator(t, clock.NewManual(t0))
	c.appendRound(t, 1, 3)
	if _, err := kafkapub.New(c.ob, kafkapub.Config{}); !errors.Is(err, kafkapub.ErrNoBrokers) {
		t.Fatalf("New without brokers: %v", err)
	}
	if n := c.unsent(t); n != 3 {
		t.Fatalf("%d unsent rows, want 3", n)
	}
}

func TestTopicsFor(t *testing.T) {
	topics := kafkapub.Topics{Default: "zc.events", Families: map[string]string{
		"Dns": "zc.dns", "Htlc": "zc.htlc", "HtlcClaimRejected": "zc.htlc.rejects", "Gtid": "zc.gtid"}}
	for _, tc := range []struct{ typ, want string }{
		{"DnsIntradayCutoff", "zc.dns"},
		{"HtlcLocked", "zc.htlc"},
		{"HtlcClaimRejected", "zc.htlc.rejects"},
		{"GtidSettled", "zc.gtid"},
		{"Settled", "zc.events"},
		{"", "zc.events"},
	} {
		if got := topics.For(tc.typ); got != tc.want {
			t.Errorf("For(%q) = %q, want %q", tc.typ, got, tc.want)
		}
	}
	if got := (kafkapub.Topics{}).For("Settled"); got != kafkapub.DefaultTopic {
		t.Errorf("empty Topics route to %q", got)
	}
	if got := fmt.Sprint(topics.All()); got != "[zc.dns zc.events zc.gtid zc.htlc zc.htlc.rejects]" {
		t.Errorf("All = %s", got)
	}
}

// 30 chains x 12 events over 6 partitions, appended interleaved: each
// chain's events arrive in event_seq order on one partition, the chains
// spread over several partitions, and DNS events go to their family topic.
func TestOrderingPerKeyAcrossPartitions(t *testing.T) {
	ctx := context.Background()
	main, dns := name(t, "events"), name(t, "dns")
	topics := kafkapub.Topics{Default: main, Families: map[string]string{"Dns": dns}}
	if err := kafkapub.EnsureTopics(ctx, brokers, topics.All(), 6, 1); err != nil {
		t.Fatal(err)
	}
	c := newCoordinator(t, clock.NewManual(t0))
	const chains, rounds = 30, 12
	for r := 1; r <= rounds; r++ {
		c.appendRound(t, r, chains)
	}
	p, err := kafkapub.New(c.ob, kafkapub.Config{Brokers: brokers, Topics: topics, BatchRows: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	drain(t, p, c)
	if st := p.Stats(); st.Published != chains*rounds+1 || st.Failures != 0 {
		t.Fatalf("stats %+v", st)
	}

	d := newDownstream(t)
	d.consume(t, brokers, name(t, "group"), topics.All(), chains*rounds+1)
	seqs, parts, n := d.seen(t)
	if n != chains*rounds+1 {
		t.Fatalf("handler applied %d events, want %d", n, chains*rounds+1)
	}
	used := map[int]bool{}
	for k := 0; k < chains; k++ {
		key := fmt.Sprintf("%s|TX-%03d", main, k)
		if got := fmt.Sprint(seqs[key]); got != "[1 2 3 4 5 6 7 8 9 10 11 12]" {
			t.Errorf("%s arrived as %s", key, got)
		}
		if len(parts[key]) != 1 {
			t.Errorf("%s spread over partitions %v", key, parts[key])
		}
		for p := range parts[key] {
			used[p] = true
		}
	}
	if len(used) < 3 {
		t.Errorf("30 chains used only partitions %v", used)
	}
	if got := fmt.Sprint(seqs[dns+"|GLOBAL"]); got != "[1]" {
		t.Errorf("DNS family topic got %s", got)
	}
	if st := d.proc.Stats(); st.Gaps != 0 || st.Duplicates != 0 || st.Refused != 0 {
		t.Errorf("consumer stats %+v", st)
	}
	// The headers and value carried the §12.2 fields (Decode checked they agree).
	ev := d.got[0]
	if ev.SchemaVersion != "1.0" || ev.MessageType != "EVENT" || ev.Producer.OrgID != "ZC" || ev.CorrelationID == "" || ev.IdempotencyKey == "" {
		t.Errorf("event header %+v", ev.Message)
	}
}

// The broker stops (longer than the writer's own retries) and comes back:
// the publisher keeps its rows, backs off on its clock, and catches up.
func TestBrokerOutageLongerThanWriterRetries(t *testing.T) {
	ctx := context.Background()
	port, dir := freePort(t), t.TempDir()
	broker := startBroker(t, port, dir)
	addr := []string{fmt.Sprintf("127.0.0.1:%d", port)}
	topic := name(t, "events")
	topics := kafkapub.Topics{Default: topic}
	if err := kafkapub.EnsureTopics(ctx, addr, []string{topic}, 3, 1); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(t0)
	c := newCoordinator(t, clk)
	p, err := kafkapub.New(c.ob, kafkapub.Config{Brokers: addr, Topics: topics, Clock: clk,
		MaxAttempts: 2, WriteBackoffMin: 5 * time.Millisecond, WriteBackoffMax: 10 * time.Millisecond, WriteTimeout: time.Second,
		BackoffMin: time.Second, BackoffMax: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c.appendRound(t, 1, 5)
	drain(t, p, c)
	if err := p.Health(); err != nil {
		t.Fatalf("healthy publisher reports %v", err)
	}

	broker.Close()
	for r := 2; r <= 4; r++ {
		c.appendRound(t, r, 5)
	}
	wantBackoff := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}
	for i, want := range wantBackoff {
		st, err := p.Step(ctx)
		var pe *kafkapub.PublishError
		if !errors.As(err, &pe) || pe.Backoff != want || pe.Sent != 0 || st.Sent != 0 {
			t.Fatalf("failure %d: step %+v, err %v (want backoff %s)", i+1, st, err, want)
		}
		if n := c.unsent(t); n != 15 {
			t.Fatalf("failure %d: %d unsent rows, want 15", i+1, n)
		}
		// Before the backoff ends nothing is attempted.
		st, err = p.Step(ctx)
		if err != nil || st.Wait != want || st.Read != 0 {
			t.Fatalf("during backoff: %+v %v", st, err)
		}
		clk.Advance(want)
	}
	if f := p.Stats().Failures; f != 4 {
		t.Fatalf("%d failed steps, want 4", f)
	}
	// The readiness check sees the outage, not only the warning lines.
	var pe *kafkapub.PublishError
	if err := p.Health(); !errors.As(err, &pe) || pe.Backoff != 3*time.Second {
		t.Fatalf("Health during the outage: %v", err)
	}

	broker = startBroker(t, port, dir)
	defer broker.Close()
	c.appendRound(t, 5, 5)
	drain(t, p, c)
	if err := p.Health(); err != nil {
		t.Fatalf("Health after recovery: %v", err)
	}
	d := newDownstream(t)
	d.consume(t, addr, name(t, "group"), []string{topic}, 25)
	seqs, _, n := d.seen(t)
	if n != 25 {
		t.Fatalf("applied %d, want 25", n)
	}
	for k := 0; k < 5; k++ {
		if got := fmt.Sprint(seqs[fmt.Sprintf("%s|TX-%03d", topic, k)]); got != "[1 2 3 4 5]" {
			t.Errorf("TX-%03d arrived as %s", k, got)
		}
	}
}

// The broker restarts with its data directory: records and committed
// offsets survive; events published during the outage arrive; events
// published twice (acknowledged, but the cursor move was lost when the
// publisher crashed) are dropped by the consumer library, so the handler's
// effect happens once per event. The crashed publisher never released its
// lease: a new one takes over once it expired.
func TestBrokerRestartNothingLostDuplicatesDropped(t *testing.T) {
	ctx := context.Background()
	port, dir := freePort(t), t.TempDir()
	broker := startBroker(t, port, dir)
	addr := []string{fmt.Sprintf("127.0.0.1:%d", port)}
	topic, group := name(t, "events"), name(t, "group")
	topics := kafkapub.Topics{Default: topic}
	if err := kafkapub.EnsureTopics(ctx, addr, []string{topic}, 4, 1); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(t0)
	c := newCoordinator(t, clk)
	p, err := kafkapub.New(c.ob, kafkapub.Config{Brokers: addr, Topics: topics, Clock: clk, MaxAttempts: 1, WriteTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const chains = 10
	for r := 1; r <= 5; r++ {
		c.appendRound(t, r, chains)
	}
	drain(t, p, c)
	d := newDownstream(t)
	d.consume(t, addr, group, []string{topic}, 5*chains)

	broker.Close()
	for r := 6; r <= 8; r++ {
		c.appendRound(t, r, chains)
	}
	if _, err := p.Step(ctx); err == nil {
		t.Fatal("publishing to a stopped broker succeeded")
	}
	broker = startBroker(t, port, dir)
	defer broker.Close()
	// The publisher crashed after the broker acknowledged rounds 4-5 but
	// before its cursor moved past them: they are published again, by a
	// new publisher once the crashed one's lease expired.
	if err := c.db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE EventPublisher SET acked_seq = ?`, 3*chains)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	p2, err := kafkapub.New(c.ob, kafkapub.Config{Brokers: addr, Topics: topics, Clock: clk, MaxAttempts: 1, WriteTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if st, err := p2.Step(ctx); err != nil || st.Holder == "" || st.Wait <= 0 {
		t.Fatalf("the crashed publisher's unexpired lease was not respected: %+v %v", st, err)
	}
	clk.Advance(time.Minute)
	drain(t, p2, c)

	d.consume(t, addr, group, []string{topic}, 8*chains)
	seqs, _, n := d.seen(t)
	if n != 8*chains {
		t.Fatalf("handler applied %d events, want %d", n, 8*chains)
	}
	for k := 0; k < chains; k++ {
		if got := fmt.Sprint(seqs[fmt.Sprintf("%s|TX-%03d", topic, k)]); got != "[1 2 3 4 5 6 7 8]" {
			t.Errorf("TX-%03d applied as %s", k, got)
		}
	}
	st := d.proc.Stats()
	if st.Duplicates < 2*chains || st.Refused != 0 || st.Gaps != 0 {
		t.Errorf("consumer stats %+v: want >= %d duplicates, no refusal, no gap", st, 2*chains)
	}
	var processed int
	if err := d.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM EventConsumerProcessed`).Scan(&processed)
	}); err != nil || processed != 8*chains {
		t.Errorf("%d processed rows (%v), want %d", processed, err, 8*chains)
	}
}

// The background cursor move past an acknowledged batch fails (a trigger
// refuses it): the next step reports the failure, the cursor stays before
// the batch, so it and the next one are published again later, and the
// consumer drops them as duplicates — nothing lost, no rewind.
func TestBackgroundMarkFailureRepublishes(t *testing.T) {
	ctx := context.Background()
	topic := name(t, "events")
	if err := kafkapub.EnsureTopics(ctx, brokers, []string{topic}, 2, 1); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(t0)
	c := newCoordinator(t, clk)
	for r := 1; r <= 3; r++ {
		c.appendRound(t, r, 10) // rows 1-10, 11-20, 21-30 (no DNS event before round 10)
	}
	exec := func(q string) {
		if err := c.db.Write(ctx, func(tx *store.Tx) error { _, err := tx.ExecContext(ctx, q); return err }); err != nil {
			t.Fatal(err)
		}
	}
	exec(`CREATE TRIGGER refuse_mark BEFORE UPDATE OF acked_seq ON EventPublisher WHEN NEW.acked_seq <= 10 BEGIN SELECT RAISE(ABORT, 'disk says no'); END`)
	p, err := kafkapub.New(c.ob, kafkapub.Config{Brokers: brokers, Topics: kafkapub.Topics{Default: topic}, Clock: clk, BatchRows: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if st, err := p.Step(ctx); err != nil || st.Sent != 10 {
		t.Fatalf("step 1: %+v %v", st, err)
	}
	st, err := p.Step(ctx)
	var pe *kafkapub.PublishError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "disk says no") || st.Read != 10 || st.Sent != 0 {
		t.Fatalf("step 2: %+v %v", st, err)
	}
	if n := c.unsent(t); n != 30 {
		t.Fatalf("%d unsent after step 2, want 30 (the cursor stays before batch 1)", n)
	}
	exec(`DROP TRIGGER refuse_mark`)
	clk.Advance(time.Minute)
	drain(t, p, c)

	d := newDownstream(t)
	d.consume(t, brokers, name(t, "group"), []string{topic}, 30)
	seqs, _, n := d.seen(t)
	if n != 30 {
		t.Fatalf("applied %d, want 30", n)
	}
	for k := 0; k < 10; k++ {
		if got := fmt.Sprint(seqs[fmt.Sprintf("%s|TX-%03d", topic, k)]); got != "[1 2 3]" {
			t.Errorf("TX-%03d applied as %s", k, got)
		}
	}
	if st := d.proc.Stats(); st.Duplicates != 20 || st.Refused != 0 || st.Gaps != 0 {
		t.Errorf("consumer stats %+v, want 20 duplicates (batches 1 and 2 twice)", st)
	}
}

// TestCompressionNames: every Config.Compression name is accepted and an
// unknown one is refused by New, naming the choices.
func TestCompressionNames(t *testing.T) {
	c := newCoordinator(t, clock.NewManual(t0))
	for _, name := range []string{"", "lz4", "snappy", "zstd", "gzip", "none"} {
		p, err := kafkapub.New(c.ob, kafkapub.Config{Brokers: brokers, Compression: name})
		if err != nil {
			t.Fatalf("compression %q: %v", name, err)
		}
		p.Close()
	}
	if _, err := kafkapub.New(c.ob, kafkapub.Config{Brokers: brokers, Compression: "brotli"}); err == nil || !strings.Contains(err.Error(), "lz4, snappy, zstd, gzip or none") {
		t.Fatalf("brotli: %v", err)
	}
}
