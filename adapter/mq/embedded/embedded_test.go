package embedded

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/adapter/mq/mqtest"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

func TestConformance(t *testing.T) {
	mqtest.Run(t, func(t *testing.T) mq.Transport {
		// One file per subtest; every Connect reopens it, as a new process would.
		return New(filepath.Join(t.TempDir(), "queues.db"), Options{PollInterval: 20 * time.Millisecond})
	}, mqtest.Options{ExclusiveConsumer: true, BatchGet: true})
}

// TestConformanceOnPostgres runs the suite with the queues in a schema of
// PostgreSQL, as several nodes on one shared database use it: every
// Connect is a new pool, as another process's would be.
func TestConformanceOnPostgres(t *testing.T) {
	pg, ok := storetest.Postgres(t)
	if !ok {
		t.Skip("no PostgreSQL server")
	}
	mqtest.Run(t, func(t *testing.T) mq.Transport {
		return New(pg.Location(t, "mq"), Options{PollInterval: 20 * time.Millisecond})
	}, mqtest.Options{ExclusiveConsumer: true, BatchGet: true})
}

// TestRaceConformance is the concurrency part of the suite, named so that
// CI's `go test -race -run 'Race|Concurrent|Parallel'` picks it up.
func TestRaceConformance(t *testing.T) {
	mqtest.RunConcurrent(t, func(t *testing.T) mq.Transport {
		return New(filepath.Join(t.TempDir(), "queues.db"), Options{PollInterval: 20 * time.Millisecond})
	}, mqtest.Options{ExclusiveConsumer: true, BatchGet: true})
}

func mustConnect(t *testing.T, tr *Transport) *conn {
	t.Helper()
	c, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c.(*conn)
}

// A process that dies holding an uncommitted get loses its lease; another
// connection restores the message with BackoutCount+1, and the dead
// connection can no longer commit.
func TestDeadConnectionsClaimsRestored(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "q.db")
	tr := New(path, Options{Clock: clk, LeaseTTL: time.Hour})
	a := mustConnect(t, tr)
	if err := a.DeclareQueue(ctx, mq.QueueSpec{Name: "POSTINGS"}); err != nil {
		t.Fatal(err)
	}
	sa, _ := a.Session(ctx)
	sent := &mq.Message{Body: []byte("posting")}
	if err := sa.Put(ctx, "POSTINGS", sent); err != nil {
		t.Fatal(err)
	}
	if err := sa.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Get(ctx, "POSTINGS", mq.Any); err != nil {
		t.Fatal(err)
	}
	a.crash()

	b := mustConnect(t, tr)
	defer b.Close()
	sb, _ := b.Session(ctx)
	expired := context.Background()
	cctx, cancel := context.WithCancel(expired)
	cancel()
	if _, err := sb.Get(cctx, "POSTINGS", mq.Any); !errors.Is(err, mq.ErrNoMessage) {
		t.Fatalf("message visible while the dead connection's lease runs: %v", err)
	}
	clk.Advance(time.Hour + time.Second)
	n, err := b.reap(ctx)
	if err != nil || n != 1 {
		t.Fatalf("reap restored %d, err %v; want 1", n, err)
	}
	got, err := sb.Get(ctx, "POSTINGS", mq.Any)
	if err != nil {
		t.Fatal(err)
	}
	if got.MsgID != sent.MsgID || got.BackoutCount != 1 {
		t.Fatalf("restored %s count %d, want %s 1", got.MsgID, got.BackoutCount, sent.MsgID)
	}
	if err := sb.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// A live but stalled connection whose lease was taken over finds its
// commit backed out (MQRC 2003), its puts discarded, and itself broken.
func TestCommitAfterLeaseLossIsBackedOut(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC))
	tr := New(filepath.Join(t.TempDir(), "q.db"), Options{Clock: clk, LeaseTTL: time.Hour})
	a := mustConnect(t, tr)
	defer a.Close()
	for _, q := range []string{"IN", "OUT"} {
		if err := a.DeclareQueue(ctx, mq.QueueSpec{Name: q}); err != nil {
			t.Fatal(err)
		}
	}
	sa, _ := a.Session(ctx)
	_ = sa.Put(ctx, "IN", &mq.Message{Body: []byte("m")})
	if err := sa.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Get(ctx, "IN", mq.Any); err != nil {
		t.Fatal(err)
	}
	_ = sa.Put(ctx, "OUT", &mq.Message{Body: []byte("derived")})

	clk.Advance(2 * time.Hour) // a's heartbeat is now stale
	b := mustConnect(t, tr)    // Connect reaps dead connections
	defer b.Close()
	err := sa.Commit(ctx)
	if mq.ReasonOf(err) != mq.ReasonBackedOut {
		t.Fatalf("commit after lease loss: %v, want MQRC 2003", err)
	}
	sb, _ := b.Session(ctx)
	got, err := sb.Get(ctx, "IN", mq.Any)
	if err != nil || got.BackoutCount != 1 {
		t.Fatalf("IN: %v %v, want the message with BackoutCount 1", got, err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if m, err := sb.Get(done, "OUT", mq.Any); !errors.Is(err, mq.ErrNoMessage) {
		t.Fatalf("OUT has %v: the backed-out unit's put leaked", m)
	}
	if err := a.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Get(done, "IN", mq.Any); mq.ReasonOf(err) != mq.ReasonConnectionBroken {
		t.Fatalf("stale connection still usable: %v", err)
	}
}

// Each connection is judged by its own lease: a short-lease process
// sharing the file with a long-lease one does not take over the long one's
// claims after its own (shorter) TTL. (CI caught this: a 1 s child reaped
// its 30 s parent under load.)
func TestLeaseIsTheOwnersNotTheReapers(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "q.db")
	long := mustConnect(t, New(path, Options{Clock: clk, LeaseTTL: time.Hour}))
	defer long.Close()
	if err := long.DeclareQueue(ctx, mq.QueueSpec{Name: "POSTINGS"}); err != nil {
		t.Fatal(err)
	}
	sl, _ := long.Session(ctx)
	if err := sl.Put(ctx, "POSTINGS", &mq.Message{Body: []byte("posting")}); err != nil {
		t.Fatal(err)
	}
	if err := sl.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sl.Get(ctx, "POSTINGS", mq.Any); err != nil {
		t.Fatal(err)
	}
	short := mustConnect(t, New(path, Options{Clock: clk, LeaseTTL: time.Second}))
	defer short.Close()
	clk.Advance(time.Minute) // past the short TTL, well within the long one
	if n, err := short.reap(ctx); err != nil || n != 0 {
		t.Fatalf("the short-lease connection restored %d (err %v) of a live long-lease connection's claims", n, err)
	}
	if err := sl.Commit(ctx); err != nil {
		t.Fatalf("the long-lease connection's commit: %v", err)
	}
	// The short one's own lease did run out (no heartbeat on the manual
	// clock): the long one reaps it by the short one's TTL.
	if err := long.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := long.reap(ctx); err != nil {
		t.Fatal(err)
	}
	if err := short.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if !short.broken.Load() {
		t.Fatal("the short-lease connection outlived its own lease")
	}
}

// A queue file written before mq_connection.lease_until existed gains the
// column on the first Connect, and its old rows are judged by the
// connecting process's TTL.
func TestOldQueueFileGainsLeaseColumn(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	old, err := store.Open(ctx, path, `CREATE TABLE mq_connection (id TEXT PRIMARY KEY, started_at TEXT NOT NULL, heartbeat_at TEXT NOT NULL);
		INSERT INTO mq_connection VALUES ('gone', '2026-12-01T00:00:00.000000000Z', '2026-12-01T00:00:00.000000000Z');`)
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	clk := clock.NewManual(time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC))
	c := mustConnect(t, New(path, Options{Clock: clk, LeaseTTL: time.Minute}))
	defer c.Close()
	var ids []string
	if err := c.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id FROM mq_connection WHERE lease_until IS NOT NULL`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rows.Err()
	}); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != c.id {
		t.Fatalf("connections with a lease %v, want only the new one (%s); the stale old row must be reaped", ids, c.id)
	}
}

func TestStoredRowsAreSortableStamps(t *testing.T) {
	a := stamp(time.Date(2026, 1, 2, 3, 4, 5, 100, time.UTC))
	b := stamp(time.Date(2026, 1, 2, 3, 4, 5, 20, time.UTC))
	if !(b < a) || len(a) != len(b) {
		t.Fatalf("stamps %q %q do not sort as instants", a, b)
	}
	if got, err := parseStamp(a); err != nil || !got.Equal(time.Date(2026, 1, 2, 3, 4, 5, 100, time.UTC)) {
		t.Fatalf("parse %q: %v %v", a, got, err)
	}
}

func BenchmarkPutGet(b *testing.B) {
	mqtest.BenchmarkPutGet(b, New(filepath.Join(b.TempDir(), "bench.db"), Options{}))
}

func BenchmarkRequestReply(b *testing.B) {
	mqtest.BenchmarkRequestReply(b, New(filepath.Join(b.TempDir(), "bench.db"), Options{}))
}

// A Get by a connection that is not the queue's claimed consumer is refused
// with MQRC 2042 naming the holder, even while messages wait.
func TestGetOfAClaimedQueueByAnotherConnectionIsRefused(t *testing.T) {
	ctx := context.Background()
	tr := New(filepath.Join(t.TempDir(), "q.db"), Options{App: "zcgw test holder"})
	a, err := tr.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.DeclareQueue(ctx, mq.QueueSpec{Name: "REQ"}); err != nil {
		t.Fatal(err)
	}
	claim, err := a.ClaimConsumer(ctx, "REQ")
	if err != nil {
		t.Fatal(err)
	}
	sa, _ := a.Session(ctx)
	if err := sa.Put(ctx, "REQ", &mq.Message{Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if err := sa.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := tr.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sb, _ := b.Session(ctx)
	_, err = sb.Get(ctx, "REQ", mq.Any)
	var iu *mq.InUseError
	if mq.ReasonOf(err) != mq.ReasonObjectInUse || !errors.As(err, &iu) || iu.Holder.Conn != claim.Holder().Conn ||
		!strings.Contains(err.Error(), `"zcgw test holder"`) {
		t.Fatalf("get by another connection: %v, want MQRC 2042 naming %v", err, claim.Holder())
	}
	if m, err := sa.Get(ctx, "REQ", mq.Any); err != nil || string(m.Body) != "x" {
		t.Fatalf("holder get: %v %v", m, err)
	}
}

// TestTransportCommitsCountsEveryConnection: Stats().Commits sums the commits of
// every connection on the queue file and keeps a closed connection's.
func TestTransportCommitsCountsEveryConnection(t *testing.T) {
	ctx := context.Background()
	tr := New(filepath.Join(t.TempDir(), "q.db"), Options{LeaseTTL: time.Hour})
	if got := tr.Stats().Commits; got != 0 {
		t.Fatalf("before any connection: %d commits", got)
	}
	a, b := mustConnect(t, tr), mustConnect(t, tr)
	defer b.Close()
	afterConnect := tr.Stats().Commits
	if afterConnect < 2 {
		t.Fatalf("two connects committed %d times, want >= 2 (each registers itself)", afterConnect)
	}
	if err := a.DeclareQueue(ctx, mq.QueueSpec{Name: "POSTINGS"}); err != nil {
		t.Fatal(err)
	}
	sa, _ := a.Session(ctx)
	before := tr.Stats().Commits
	for i := 0; i < 3; i++ {
		if err := sa.Put(ctx, "POSTINGS", &mq.Message{Body: []byte("posting")}); err != nil {
			t.Fatal(err)
		}
		if err := sa.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := tr.Stats().Commits - before; got < 3 {
		t.Fatalf("three committed puts: %d commits", got)
	}
	open := tr.Stats().Commits
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if got := tr.Stats().Commits; got < open {
		t.Fatalf("closing a connection lost its commits: %d, had %d", got, open)
	}
}

// TestConnectionsShareOneHandle: the connections of a Transport share one
// handle on the queue file, which stays open until the last one closes and
// reopens on the next Connect; a message put through one connection after
// another closed is got by a third, and the counters survive the close.
func TestConnectionsShareOneHandle(t *testing.T) {
	ctx := context.Background()
	tr := New(filepath.Join(t.TempDir(), "q.db"), Options{LeaseTTL: time.Hour})
	a, b := mustConnect(t, tr), mustConnect(t, tr)
	if a.db != b.db {
		t.Fatal("two connections of one transport opened two handles on the file")
	}
	if err := a.DeclareQueue(ctx, mq.QueueSpec{Name: "Q"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	sb, err := b.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Put(ctx, "Q", &mq.Message{Body: []byte("kept")}); err != nil {
		t.Fatal(err)
	}
	if err := sb.Commit(ctx); err != nil {
		t.Fatalf("commit on the shared handle after another connection closed: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	closed := tr.Stats()
	if closed.Commits < 4 || closed.Statements < closed.Commits {
		t.Fatalf("after the last close: %+v", closed)
	}
	c := mustConnect(t, tr)
	defer c.Close()
	sc, _ := c.Session(ctx)
	m, err := sc.Get(ctx, "Q", mq.Any)
	if err != nil || string(m.Body) != "kept" {
		t.Fatalf("get after reopening: %v %v", m, err)
	}
	if err := sc.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := tr.Stats(); got.Commits <= closed.Commits {
		t.Fatalf("counters after reopening: %+v, had %+v", got, closed)
	}
}

// TestTakeAndCommitAndGetAreOneCommitEach: the embedded backend does
// TakeBatch (no unit open) and CommitAndGet each in one transaction, one
// commit where GetBatch+Commit and Commit+GetBatch are two: the reply
// queue's take and the core's commit-and-claim of the posting round.
func TestTakeAndCommitAndGetAreOneCommitEach(t *testing.T) {
	ctx := context.Background()
	tr := New(filepath.Join(t.TempDir(), "q.db"), Options{LeaseTTL: time.Hour})
	c := mustConnect(t, tr)
	defer c.Close()
	for _, q := range []string{"REQ", "REPLY"} {
		if err := c.DeclareQueue(ctx, mq.QueueSpec{Name: q}); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := c.Session(ctx)
	for _, b := range []string{"r0", "r1", "r2"} {
		if err := s.Put(ctx, "REQ", &mq.Message{Body: []byte(b)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if m, err := s.Get(ctx, "REQ", mq.Any); err != nil || string(m.Body) != "r0" {
		t.Fatalf("get: %v %v", m, err)
	}
	if err := s.Put(ctx, "REPLY", &mq.Message{Body: []byte("a0")}); err != nil {
		t.Fatal(err)
	}
	before := tr.Stats().Commits
	next, err := mq.CommitAndGet(ctx, s, "REQ", 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(bodiesOf(next), ","); got != "r1,r2" {
		t.Fatalf("commit and get returned %s, want r1,r2", got)
	}
	if got := tr.Stats().Commits - before; got != 1 {
		t.Fatalf("commit and get: %d commits, want 1", got)
	}
	if err := s.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	before = tr.Stats().Commits
	taken, err := mq.TakeBatch(ctx, s, "REPLY", 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(bodiesOf(taken), ","); got != "a0" {
		t.Fatalf("take returned %s, want a0", got)
	}
	if got := tr.Stats().Commits - before; got != 1 {
		t.Fatalf("take: %d commits, want 1", got)
	}
	if d, err := c.Depth(ctx, "REPLY"); err != nil || d != 0 {
		t.Fatalf("REPLY depth after the take: %d %v, want 0", d, err)
	}
	if d, err := c.Depth(ctx, "REQ"); err != nil || d != 0 {
		t.Fatalf("REQ depth after the commit: %d %v, want 0", d, err)
	}
}

func bodiesOf(ms []*mq.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, string(m.Body))
	}
	return out
}

// TestTakeOfAMalformedMessageRemovesNothing: a take removes its rows in
// the transaction that reads them, so a stored message that does not
// decode (a damaged file) must roll the whole removal back: the get is
// refused with MQRC_MD_ERROR and every message of the batch, the good ones
// too, is still on its queue.
func TestTakeOfAMalformedMessageRemovesNothing(t *testing.T) {
	ctx := context.Background()
	tr := New(filepath.Join(t.TempDir(), "q.db"), Options{LeaseTTL: time.Hour})
	c := mustConnect(t, tr)
	defer c.Close()
	if err := c.DeclareQueue(ctx, mq.QueueSpec{Name: "REPLY"}); err != nil {
		t.Fatal(err)
	}
	s, _ := c.Session(ctx)
	for _, b := range []string{"a0", "a1", "a2"} {
		if err := s.Put(ctx, "REPLY", &mq.Message{Body: []byte(b)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE mq_message SET properties = x'ff' WHERE body = CAST('a1' AS BLOB)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	_, err := mq.TakeBatch(ctx, s, "REPLY", 10)
	var me *mq.Error
	if !errors.As(err, &me) || me.Reason != mq.ReasonMDError {
		t.Fatalf("take of a malformed message: %v, want %s", err, mq.ReasonMDError)
	}
	if d, err := c.Depth(ctx, "REPLY"); err != nil || d != 3 {
		t.Fatalf("REPLY depth after the refused take: %d %v, want 3 (nothing removed)", d, err)
	}
}
