package mqtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/mq"
)

// Options declares where a backend documents a difference from IBM MQ.
type Options struct {
	// FIFOOnly: the backend ignores Priority and delivers in arrival
	// order (RabbitMQ quorum queues). The suite then checks arrival order.
	FIFOOnly bool
	// SkipCountsAsBackout: a Get selecting by CorrelID or MsgID increments
	// the BackoutCount of the messages it passes over (RabbitMQ
	// consume-and-filter). The suite then does not check their counts.
	SkipCountsAsBackout bool
	// ExclusiveConsumer: the backend implements ClaimConsumer (one
	// consumer per queue, a second refused naming the holder). Without it
	// the ExclusiveConsumer case is skipped.
	ExclusiveConsumer bool
	// BatchGet: the backend's sessions implement mq.BatchGetter (many
	// messages in one get call). Without it the BatchGet cases check the
	// mq.GetBatch fallback (one Get per message) instead.
	BatchGet bool
	// RedeliveredOnly: the broker reports only whether a message was
	// delivered before, not how often (RabbitMQ 3.x's AMQP 1.0 plugin), so
	// BackoutCount reads 0 or 1; the queue's own delivery limit
	// (x-delivery-limit) moves a poison message to the backout queue
	// instead of HandlePoison.
	RedeliveredOnly bool
}

// backouts is the BackoutCount the backend reports after n backouts.
func (h *harness) backouts(n int) int {
	if h.opts.RedeliveredOnly {
		return min(n, 1)
	}
	return n
}

type suiteCase struct {
	name string
	fn   func(t *testing.T, h *harness)
}

var cases = []suiteCase{
	{"CommitVisibility", testCommitVisibility},
	{"RollbackRestoresWithBackoutCount", testRollback},
	{"CloseBacksOut", testCloseBacksOut},
	{"GotMessageHiddenFromOthers", testHidden},
	{"CorrelationMatching", testCorrelation},
	{"RequestReply", testRequestReply},
	{"RequestReplyTimeout", testRequestTimeout},
	{"ConcurrentRequesters", testConcurrentRequesters},
	{"Expiry", testExpiry},
	{"ExpiryCountsFromPut", testExpiryFromPut},
	{"Priority", testPriority},
	{"PoisonToBackoutQueue", testPoison},
	{"PersistenceAcrossReconnect", testPersistence},
	{"UncommittedGetRestoredOnDisconnect", testDisconnectRestores},
	{"ConcurrentConsumersEachOnce", testConcurrentConsumers},
	{"ContextBoundedWait", testContextWait},
	{"WaitingGetWokenByCommit", testWakeOnCommit},
	{"UnknownQueue", testUnknownQueue},
	{"InvalidDescriptor", testInvalidDescriptor},
	{"ExclusiveConsumer", testExclusiveConsumer},
	{"ExclusiveConsumerRace", testExclusiveConsumerRace},
	{"BatchGetInOrderHiddenRestored", testBatchGet},
	{"BatchGetByCorrelIDs", testBatchGetCorrel},
	{"BatchGetWaitsAndWakes", testBatchGetWait},
	{"BatchRequestsOneUnit", testBatchRequests},
	{"TakeBatchCommitsItsGets", testTakeBatch},
	{"CommitAndGetStartsTheNextUnit", testCommitAndGet},
}

// concurrent names the cases that race goroutines against one another.
var concurrent = map[string]bool{
	"ConcurrentRequesters": true, "ConcurrentConsumersEachOnce": true,
	"RequestReply": true, "WaitingGetWokenByCommit": true, "ExclusiveConsumerRace": true,
	"BatchGetWaitsAndWakes": true, "BatchRequestsOneUnit": true,
}

// Run runs the whole suite. newTransport is called once per subtest; every
// call must reach the same store (file or broker), because the persistence
// test connects twice through it.
func Run(t *testing.T, newTransport func(t *testing.T) mq.Transport, opts Options) {
	run(t, newTransport, opts, func(string) bool { return true })
}

// RunConcurrent runs only the cases that race goroutines (concurrent
// consumers, concurrent requesters, a waiting get woken by a commit), for
// a backend's TestRace... function run under -race.
func RunConcurrent(t *testing.T, newTransport func(t *testing.T) mq.Transport, opts Options) {
	run(t, newTransport, opts, func(name string) bool { return concurrent[name] })
}

func run(t *testing.T, newTransport func(t *testing.T) mq.Transport, opts Options, include func(string) bool) {
	for _, tc := range cases {
		if !include(tc.name) {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			h := &harness{t: t, tr: newTransport(t), opts: opts, prefix: "mqtest." + mq.NewID().String()[:10] + "."}
			h.conn = h.connect()
			tc.fn(t, h)
		})
	}
}

type harness struct {
	t      *testing.T
	tr     mq.Transport
	conn   mq.Connection
	opts   Options
	prefix string
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func (h *harness) connect() mq.Connection {
	h.t.Helper()
	c, err := h.tr.Connect(ctxFor(h.t, 10*time.Second))
	if err != nil {
		h.t.Fatalf("connect: %v", err)
	}
	h.t.Cleanup(func() { _ = c.Close() })
	return c
}

// queue declares a uniquely named queue and deletes it after the test.
func (h *harness) queue(name string, threshold int, backoutQueue string) string {
	h.t.Helper()
	q := h.prefix + name
	spec := mq.QueueSpec{Name: q, BackoutThreshold: threshold, BackoutQueue: backoutQueue}
	if err := h.conn.DeclareQueue(ctxFor(h.t, 10*time.Second), spec); err != nil {
		h.t.Fatalf("declare %s: %v", q, err)
	}
	h.t.Cleanup(func() {
		c, err := h.tr.Connect(context.Background())
		if err != nil {
			return
		}
		_ = c.DeleteQueue(context.Background(), q)
		_ = c.Close()
	})
	return q
}

func (h *harness) session(c mq.Connection) mq.Session {
	h.t.Helper()
	s, err := c.Session(ctxFor(h.t, 10*time.Second))
	if err != nil {
		h.t.Fatalf("session: %v", err)
	}
	h.t.Cleanup(func() { _ = s.Close() })
	return s
}

func (h *harness) put(s mq.Session, q string, m *mq.Message) {
	h.t.Helper()
	if err := s.Put(ctxFor(h.t, 10*time.Second), q, m); err != nil {
		h.t.Fatalf("put %s: %v", q, err)
	}
}

func (h *harness) commit(s mq.Session) {
	h.t.Helper()
	if err := s.Commit(ctxFor(h.t, 10*time.Second)); err != nil {
		h.t.Fatalf("commit: %v", err)
	}
}

func (h *harness) rollback(s mq.Session) {
	h.t.Helper()
	if err := s.Rollback(ctxFor(h.t, 10*time.Second)); err != nil {
		h.t.Fatalf("rollback: %v", err)
	}
}

// putCommitted puts each body as its own message in one unit and commits.
func (h *harness) putCommitted(q string, bodies ...string) []*mq.Message {
	h.t.Helper()
	s := h.session(h.conn)
	var out []*mq.Message
	for _, b := range bodies {
		m := &mq.Message{Body: []byte(b)}
		h.put(s, q, m)
		out = append(out, m)
	}
	h.commit(s)
	return out
}

// get waits up to 5 s for a message.
func (h *harness) get(s mq.Session, q string, match mq.Match) *mq.Message {
	h.t.Helper()
	m, err := s.Get(ctxFor(h.t, 5*time.Second), q, match)
	if err != nil {
		h.t.Fatalf("get %s: %v", q, err)
	}
	return m
}

// expectEmpty asserts that a short get finds nothing (MQRC 2033).
func (h *harness) expectEmpty(s mq.Session, q string, match mq.Match) {
	h.t.Helper()
	m, err := s.Get(ctxFor(h.t, 150*time.Millisecond), q, match)
	if err == nil {
		h.t.Fatalf("get %s: got message %q, want MQRC 2033", q, m.Body)
	}
	if !errors.Is(err, mq.ErrNoMessage) || mq.ReasonOf(err) != mq.ReasonNoMsgAvailable {
		h.t.Fatalf("get %s: err = %v, want MQRC 2033 NO_MSG_AVAILABLE", q, err)
	}
}

func testCommitVisibility(t *testing.T, h *harness) {
	q := h.queue("commit", 0, "")
	reply := h.queue("commit.reply", 0, "")
	body := make([]byte, 256)
	for i := range body {
		body[i] = byte(i) // every byte value, including 0x0E/0x0F and invalid UTF-8
	}
	correl := mq.NewID()
	sent := &mq.Message{CorrelID: correl, ReplyTo: reply, Priority: 4, Body: body,
		Properties: map[string]string{"bank": "0001", "kind": "posting", "empty": ""}}
	putter, getter := h.session(h.conn), h.session(h.conn)
	before := time.Now()
	h.put(putter, q, sent)
	if sent.MsgID.IsZero() {
		t.Fatal("Put did not assign a MsgID")
	}
	h.expectEmpty(getter, q, mq.Any)
	h.commit(putter)
	got := h.get(getter, q, mq.Any)
	h.commit(getter)
	if !bytes.Equal(got.Body, body) {
		t.Fatalf("body changed in transit:\n got %x\nwant %x", got.Body, body)
	}
	if got.MsgID != sent.MsgID || got.CorrelID != correl || got.ReplyTo != reply {
		t.Fatalf("descriptor = %s/%s/%q, want %s/%s/%q", got.MsgID, got.CorrelID, got.ReplyTo, sent.MsgID, correl, reply)
	}
	if got.NonPersistent || got.BackoutCount != 0 {
		t.Fatalf("NonPersistent=%v BackoutCount=%d, want false 0", got.NonPersistent, got.BackoutCount)
	}
	if len(got.Properties) != 3 || got.Properties["bank"] != "0001" || got.Properties["kind"] != "posting" {
		t.Fatalf("properties = %v", got.Properties)
	}
	if v, ok := got.Properties["empty"]; !ok || v != "" {
		t.Fatalf("empty property lost: %v", got.Properties)
	}
	if got.PutTime.Before(before.Add(-2*time.Second)) || got.PutTime.After(time.Now().Add(2*time.Second)) {
		t.Fatalf("PutTime %v not around %v", got.PutTime, before)
	}
	h.expectEmpty(getter, q, mq.Any)
	// A message with an explicit MsgID keeps it.
	own := mq.NewID()
	h.put(putter, q, &mq.Message{MsgID: own, Body: []byte("x")})
	h.commit(putter)
	if got := h.get(getter, q, mq.Any); got.MsgID != own {
		t.Fatalf("MsgID = %s, want the caller's %s", got.MsgID, own)
	}
	h.commit(getter)
	// An empty unit commits and rolls back without effect.
	h.commit(getter)
	h.rollback(getter)
}

func testRollback(t *testing.T, h *harness) {
	q := h.queue("rollback", 0, "")
	sent := h.putCommitted(q, "m1")[0]
	s := h.session(h.conn)
	for n := 0; n < 3; n++ {
		want := h.backouts(n)
		got := h.get(s, q, mq.Any)
		if got.MsgID != sent.MsgID || got.BackoutCount != want {
			t.Fatalf("attempt %d: MsgID %s BackoutCount %d, want %s %d", want, got.MsgID, got.BackoutCount, sent.MsgID, want)
		}
		h.rollback(s)
	}
	got := h.get(s, q, mq.Any)
	if got.BackoutCount != h.backouts(3) || string(got.Body) != "m1" {
		t.Fatalf("after 3 rollbacks: BackoutCount %d body %q", got.BackoutCount, got.Body)
	}
	h.commit(s)
	h.expectEmpty(s, q, mq.Any)
	// Puts are discarded by rollback.
	h.put(s, q, &mq.Message{Body: []byte("discarded")})
	h.rollback(s)
	h.expectEmpty(s, q, mq.Any)
	// Get and put in one unit: rollback restores the get and drops the put.
	out := h.queue("rollback.out", 0, "")
	h.putCommitted(q, "m2")
	in := h.get(s, q, mq.Any)
	h.put(s, out, &mq.Message{Body: []byte("derived")})
	h.rollback(s)
	h.expectEmpty(s, out, mq.Any)
	again := h.get(s, q, mq.Any)
	if again.MsgID != in.MsgID || again.BackoutCount != 1 {
		t.Fatalf("restored message %s count %d, want %s 1", again.MsgID, again.BackoutCount, in.MsgID)
	}
	h.put(s, out, &mq.Message{Body: []byte("derived")})
	h.commit(s)
	if got := h.get(s, out, mq.Any); string(got.Body) != "derived" {
		t.Fatalf("derived body %q", got.Body)
	}
	h.commit(s)
	h.expectEmpty(s, q, mq.Any)
}

func testCloseBacksOut(t *testing.T, h *harness) {
	q := h.queue("close", 0, "")
	sent := h.putCommitted(q, "m")[0]
	s, err := h.conn.Session(ctxFor(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	h.get(s, q, mq.Any)
	h.put(s, q, &mq.Message{Body: []byte("never")})
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := s.Get(ctxFor(t, time.Second), q, mq.Any); mq.ReasonOf(err) != mq.ReasonHConnError {
		t.Fatalf("get on closed session: %v, want MQRC 2018", err)
	}
	s2 := h.session(h.conn)
	got := h.get(s2, q, mq.Any)
	if got.MsgID != sent.MsgID || got.BackoutCount != 1 {
		t.Fatalf("after close: %s count %d, want %s 1", got.MsgID, got.BackoutCount, sent.MsgID)
	}
	h.commit(s2)
	h.expectEmpty(s2, q, mq.Any)
}

func testHidden(t *testing.T, h *harness) {
	q := h.queue("hidden", 0, "")
	h.putCommitted(q, "only")
	s1, s2 := h.session(h.conn), h.session(h.conn)
	h.get(s1, q, mq.Any)
	h.expectEmpty(s2, q, mq.Any)
	h.rollback(s1)
	if got := h.get(s2, q, mq.Any); string(got.Body) != "only" || got.BackoutCount != 1 {
		t.Fatalf("got %q count %d", got.Body, got.BackoutCount)
	}
	h.commit(s2)
}

func testCorrelation(t *testing.T, h *harness) {
	q := h.queue("correl", 0, "")
	s := h.session(h.conn)
	ids := []mq.ID{mq.NewID(), mq.NewID(), mq.NewID()}
	var sent []*mq.Message
	for i, id := range ids {
		m := &mq.Message{CorrelID: id, Body: []byte(fmt.Sprintf("m%d", i))}
		h.put(s, q, m)
		sent = append(sent, m)
	}
	h.commit(s)
	if got := h.get(s, q, mq.ByCorrelID(ids[1])); string(got.Body) != "m1" || got.CorrelID != ids[1] {
		t.Fatalf("by correl id: got %q", got.Body)
	}
	if got := h.get(s, q, mq.ByMsgID(sent[2].MsgID)); string(got.Body) != "m2" {
		t.Fatalf("by msg id: got %q", got.Body)
	}
	h.expectEmpty(s, q, mq.ByCorrelID(mq.NewID()))
	h.expectEmpty(s, q, mq.Match{MsgID: sent[0].MsgID, CorrelID: ids[1]})
	h.commit(s)
	got := h.get(s, q, mq.Any)
	if string(got.Body) != "m0" {
		t.Fatalf("remaining: got %q, want m0", got.Body)
	}
	if !h.opts.SkipCountsAsBackout && got.BackoutCount != 0 {
		t.Fatalf("skipped message has BackoutCount %d, want 0", got.BackoutCount)
	}
	h.commit(s)
	h.expectEmpty(s, q, mq.Any)
}

// respond serves requests on q until ctx ends: reply body "re:"+request.
func (h *harness) respond(ctx context.Context, q string, wg *sync.WaitGroup) {
	s := h.session(h.conn)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			req, err := s.Get(ctx, q, mq.Any)
			if err != nil {
				continue
			}
			if err := mq.Reply(ctx, s, req, &mq.Message{Body: append([]byte("re:"), req.Body...)}); err != nil {
				h.t.Errorf("reply: %v", err)
				_ = s.Rollback(context.Background())
				continue
			}
			if err := s.Commit(ctx); err != nil {
				h.t.Errorf("responder commit: %v", err)
			}
		}
	}()
}

func testRequestReply(t *testing.T, h *harness) {
	reqQ, replyQ := h.queue("req", 0, ""), h.queue("reply", 0, "")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	h.respond(ctx, reqQ, &wg)
	defer func() { cancel(); wg.Wait() }()
	s := h.session(h.conn)
	for i := 0; i < 5; i++ {
		req := &mq.Message{Body: []byte(fmt.Sprintf("q%d", i))}
		reply, err := mq.Request(ctxFor(t, 5*time.Second), s, reqQ, replyQ, req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if reply.CorrelID != req.MsgID || req.MsgID.IsZero() {
			t.Fatalf("reply CorrelID %s, want request MsgID %s", reply.CorrelID, req.MsgID)
		}
		if string(reply.Body) != fmt.Sprintf("re:q%d", i) {
			t.Fatalf("reply body %q", reply.Body)
		}
	}
	h.expectEmpty(s, replyQ, mq.Any)
}

func testRequestTimeout(t *testing.T, h *harness) {
	reqQ, replyQ := h.queue("req", 0, ""), h.queue("reply", 0, "")
	s := h.session(h.conn)
	req := &mq.Message{Body: []byte("lonely")}
	_, err := mq.Request(ctxFor(t, 300*time.Millisecond), s, reqQ, replyQ, req)
	var te *mq.ReplyTimeoutError
	if !errors.As(err, &te) || !errors.Is(err, mq.ErrNoMessage) || te.RequestID != req.MsgID {
		t.Fatalf("err = %v, want *ReplyTimeoutError for %s wrapping MQRC 2033", err, req.MsgID)
	}
	// The request was committed before the wait: the responder still gets it.
	got := h.get(s, reqQ, mq.Any)
	if got.MsgID != req.MsgID || got.ReplyTo != replyQ || got.NonPersistent {
		t.Fatalf("request on queue: %s replyTo %q nonpersistent %v", got.MsgID, got.ReplyTo, got.NonPersistent)
	}
	// A late reply can still be collected by AwaitReply.
	if err := mq.Reply(ctxFor(t, 5*time.Second), s, got, &mq.Message{Body: []byte("late")}); err != nil {
		t.Fatal(err)
	}
	h.commit(s)
	reply, err := mq.AwaitReply(ctxFor(t, 5*time.Second), s, replyQ, req.MsgID)
	if err != nil || string(reply.Body) != "late" {
		t.Fatalf("late reply: %v %v", reply, err)
	}
}

func testConcurrentRequesters(t *testing.T, h *harness) {
	reqQ, replyQ := h.queue("req", 0, ""), h.queue("reply", 0, "")
	ctx, cancel := context.WithCancel(context.Background())
	var rwg sync.WaitGroup
	h.respond(ctx, reqQ, &rwg)
	h.respond(ctx, reqQ, &rwg)
	defer func() { cancel(); rwg.Wait() }()
	const requesters, each = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, requesters*each)
	for r := 0; r < requesters; r++ {
		s := h.session(h.conn)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				body := fmt.Sprintf("r%d-%d", r, i)
				rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
				reply, err := mq.Request(rctx, s, reqQ, replyQ, &mq.Message{Body: []byte(body)})
				rcancel()
				if err != nil {
					errs <- fmt.Errorf("%s: %w", body, err)
					continue
				}
				if string(reply.Body) != "re:"+body {
					errs <- fmt.Errorf("%s: got reply %q", body, reply.Body)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func testExpiry(t *testing.T, h *harness) {
	q := h.queue("expiry", 0, "")
	s := h.session(h.conn)
	h.put(s, q, &mq.Message{Body: []byte("short"), Expiry: 200 * time.Millisecond})
	h.put(s, q, &mq.Message{Body: []byte("long"), Expiry: time.Hour})
	h.put(s, q, &mq.Message{Body: []byte("forever")})
	h.commit(s)
	time.Sleep(400 * time.Millisecond) // let "short" expire
	got := h.get(s, q, mq.Any)
	if string(got.Body) != "long" {
		t.Fatalf("first get %q, want long (short expired)", got.Body)
	}
	if got.Expiry <= 0 || got.Expiry > time.Hour {
		t.Fatalf("remaining expiry %v, want in (0, 1h]", got.Expiry)
	}
	if got2 := h.get(s, q, mq.Any); string(got2.Body) != "forever" || got2.Expiry != 0 {
		t.Fatalf("second get %q expiry %v, want forever 0", got2.Body, got2.Expiry)
	}
	h.commit(s)
	h.expectEmpty(s, q, mq.Any)
}

func testExpiryFromPut(t *testing.T, h *harness) {
	q := h.queue("expiry.put", 0, "")
	s := h.session(h.conn)
	h.put(s, q, &mq.Message{Body: []byte("stale"), Expiry: 200 * time.Millisecond})
	time.Sleep(400 * time.Millisecond) // expires before the commit
	h.put(s, q, &mq.Message{Body: []byte("fresh"), Expiry: time.Hour})
	h.commit(s)
	if got := h.get(s, q, mq.Any); string(got.Body) != "fresh" {
		t.Fatalf("got %q, want fresh: expiry counts from Put, not Commit", got.Body)
	}
	h.commit(s)
	h.expectEmpty(s, q, mq.Any)
}

func testPriority(t *testing.T, h *harness) {
	q := h.queue("priority", 0, "")
	s := h.session(h.conn)
	for _, p := range []int{0, 9, 5, 9, 0} {
		h.put(s, q, &mq.Message{Priority: p, Body: []byte(fmt.Sprintf("p%d", p))})
	}
	h.commit(s)
	want := []string{"p9", "p9", "p5", "p0", "p0"}
	if h.opts.FIFOOnly {
		want = []string{"p0", "p9", "p5", "p9", "p0"}
	}
	for i, w := range want {
		got := h.get(s, q, mq.Any)
		if string(got.Body) != w {
			t.Fatalf("get %d: %q, want %q (FIFOOnly=%v)", i, got.Body, w, h.opts.FIFOOnly)
		}
		if fmt.Sprintf("p%d", got.Priority) != w && !h.opts.FIFOOnly {
			t.Fatalf("get %d: Priority %d, body %q", i, got.Priority, got.Body)
		}
	}
	h.commit(s)
}

func testPoison(t *testing.T, h *harness) {
	boq := h.queue("poison.boq", 0, "")
	q := h.queue("poison", 2, boq)
	spec, err := h.conn.Queue(ctxFor(t, 5*time.Second), q)
	if err != nil || spec.BackoutThreshold != 2 || spec.BackoutQueue != boq {
		t.Fatalf("inquire: %+v %v", spec, err)
	}
	policy := mq.PolicyFor(spec)
	s := h.session(h.conn)
	sent := &mq.Message{CorrelID: mq.NewID(), Body: []byte{0xF0, 0xF1, 0x0E, 0x45, 0x0F}, Properties: map[string]string{"bank": "0005"}}
	h.put(s, q, sent)
	h.commit(s)
	if h.opts.RedeliveredOnly {
		// The broker moves it once it was delivered more than the limit.
		for attempt := 0; attempt <= 2; attempt++ {
			h.get(s, q, mq.Any)
			h.rollback(s)
		}
		h.expectEmpty(s, q, mq.Any)
		got := h.get(s, boq, mq.Any)
		h.commit(s)
		if got.MsgID != sent.MsgID || got.CorrelID != sent.CorrelID || !bytes.Equal(got.Body, sent.Body) || got.Properties["bank"] != "0005" {
			t.Fatalf("dead-lettered copy %s/%s %x %v differs from %s/%s %x", got.MsgID, got.CorrelID, got.Body, got.Properties, sent.MsgID, sent.CorrelID, sent.Body)
		}
		return
	}
	for attempt := 0; ; attempt++ {
		m := h.get(s, q, mq.Any)
		moved, err := mq.HandlePoison(ctxFor(t, 5*time.Second), s, q, m, policy, "core rejected record: bad packed decimal at byte 3")
		if err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		if moved != (attempt >= 2) || m.BackoutCount != attempt {
			t.Fatalf("attempt %d: moved=%v BackoutCount=%d", attempt, moved, m.BackoutCount)
		}
		if moved {
			break
		}
		h.rollback(s) // processing failed
	}
	h.expectEmpty(s, q, mq.Any)
	got := h.get(s, boq, mq.Any)
	h.commit(s)
	if got.MsgID != sent.MsgID || got.CorrelID != sent.CorrelID || !bytes.Equal(got.Body, sent.Body) {
		t.Fatalf("backout copy %s/%s %x differs from %s/%s %x", got.MsgID, got.CorrelID, got.Body, sent.MsgID, sent.CorrelID, sent.Body)
	}
	wantProps := map[string]string{"bank": "0005", mq.PropBackoutReason: "core rejected record: bad packed decimal at byte 3",
		mq.PropBackoutSource: q, mq.PropBackoutCount: "2"}
	for k, v := range wantProps {
		if got.Properties[k] != v {
			t.Fatalf("property %s = %q, want %q (all: %v)", k, got.Properties[k], v, got.Properties)
		}
	}
}

func testPersistence(t *testing.T, h *harness) {
	q := h.queue("persist", 0, "")
	c1 := h.connect()
	s1 := h.session(c1)
	sent := &mq.Message{CorrelID: mq.NewID(), Priority: 3, Body: []byte("survives"), Properties: map[string]string{"k": "v"}}
	h.put(s1, q, sent)
	h.commit(s1)
	if err := c1.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := h.conn.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	c2 := h.connect()
	s2 := h.session(c2)
	got := h.get(s2, q, mq.Any)
	h.commit(s2)
	if got.MsgID != sent.MsgID || got.CorrelID != sent.CorrelID || string(got.Body) != "survives" || got.Properties["k"] != "v" {
		t.Fatalf("after reconnect: %+v", got)
	}
}

func testDisconnectRestores(t *testing.T, h *harness) {
	q := h.queue("disconnect", 0, "")
	sent := h.putCommitted(q, "m")[0]
	c1 := h.connect()
	s1 := h.session(c1)
	h.get(s1, q, mq.Any)
	if err := c1.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	c2 := h.connect()
	s2 := h.session(c2)
	got := h.get(s2, q, mq.Any)
	if got.MsgID != sent.MsgID || got.BackoutCount != 1 {
		t.Fatalf("after disconnect: %s count %d, want %s 1", got.MsgID, got.BackoutCount, sent.MsgID)
	}
	h.commit(s2)
}

func testConcurrentConsumers(t *testing.T, h *harness) {
	q := h.queue("race", 0, "")
	const total, consumers = 120, 6
	s := h.session(h.conn)
	for i := 0; i < total; i++ {
		h.put(s, q, &mq.Message{Body: []byte(fmt.Sprintf("%04d", i))})
		if i%20 == 19 {
			h.commit(s)
		}
	}
	h.commit(s)
	var mu sync.Mutex
	delivered := map[string]int{}
	var wg sync.WaitGroup
	for c := 0; c < consumers; c++ {
		cs := h.session(h.conn)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				m, err := cs.Get(ctxFor(t, 500*time.Millisecond), q, mq.Any)
				if errors.Is(err, mq.ErrNoMessage) {
					return
				}
				if err != nil {
					t.Errorf("consumer %d: %v", c, err)
					return
				}
				if n%4 == 3 { // some processing fails and is backed out
					if err := cs.Rollback(context.Background()); err != nil {
						t.Errorf("rollback: %v", err)
						return
					}
					continue
				}
				if err := cs.Commit(context.Background()); err != nil {
					t.Errorf("commit: %v", err)
					return
				}
				mu.Lock()
				delivered[string(m.Body)]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(delivered) != total {
		t.Fatalf("%d distinct messages committed, want %d", len(delivered), total)
	}
	for body, n := range delivered {
		if n != 1 {
			t.Fatalf("message %s committed %d times", body, n)
		}
	}
}

func testContextWait(t *testing.T, h *harness) {
	q := h.queue("wait", 0, "")
	s := h.session(h.conn)
	start := time.Now()
	_, err := s.Get(ctxFor(t, 300*time.Millisecond), q, mq.Any)
	if !errors.Is(err, mq.ErrNoMessage) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want MQRC 2033 wrapping context.DeadlineExceeded", err)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Fatalf("Get gave up after %v, before its 300ms deadline", waited)
	}
	// An already-done context is a no-wait get: it still returns a waiting message.
	h.putCommitted(q, "ready")
	done, cancel := context.WithCancel(context.Background())
	cancel()
	m, err := s.Get(done, q, mq.Any)
	if err != nil || string(m.Body) != "ready" {
		t.Fatalf("no-wait get: %v %v", m, err)
	}
	h.commit(s)
	if _, err := s.Get(done, q, mq.Any); !errors.Is(err, mq.ErrNoMessage) || !errors.Is(err, context.Canceled) {
		t.Fatalf("no-wait get on empty queue: %v", err)
	}
}

func testWakeOnCommit(t *testing.T, h *harness) {
	q := h.queue("wake", 0, "")
	s := h.session(h.conn)
	got := make(chan *mq.Message, 1)
	go func() {
		m, err := s.Get(ctxFor(t, 10*time.Second), q, mq.Any)
		if err != nil {
			t.Errorf("waiting get: %v", err)
		}
		got <- m
	}()
	time.Sleep(100 * time.Millisecond) // let the getter start waiting
	h.putCommitted(q, "wake up")
	m := <-got
	if m == nil || string(m.Body) != "wake up" {
		t.Fatalf("waiting get returned %v", m)
	}
	h.commit(s)
}

func testUnknownQueue(t *testing.T, h *harness) {
	s := h.session(h.conn)
	missing := h.prefix + "never.declared"
	err := s.Put(ctxFor(t, 5*time.Second), missing, &mq.Message{Body: []byte("x")})
	if mq.ReasonOf(err) != mq.ReasonUnknownObjectName || !errors.Is(err, mq.ErrUnknownQueue) {
		t.Fatalf("put: %v, want MQRC 2085", err)
	}
	_, err = s.Get(ctxFor(t, time.Second), missing, mq.Any)
	if mq.ReasonOf(err) != mq.ReasonUnknownObjectName {
		t.Fatalf("get: %v, want MQRC 2085", err)
	}
	if _, err := h.conn.Queue(ctxFor(t, 5*time.Second), missing); mq.ReasonOf(err) != mq.ReasonUnknownObjectName {
		t.Fatalf("inquire: %v, want MQRC 2085", err)
	}
}

func testInvalidDescriptor(t *testing.T, h *harness) {
	q := h.queue("invalid", 0, "")
	s := h.session(h.conn)
	cases := []struct {
		msg  *mq.Message
		want mq.Reason
	}{
		{&mq.Message{Priority: 10}, mq.ReasonPriorityError},
		{&mq.Message{Priority: -1}, mq.ReasonPriorityError},
		{&mq.Message{Expiry: -time.Second}, mq.ReasonExpiryError},
		{&mq.Message{Properties: map[string]string{"x-death": "1"}}, mq.ReasonPropertyNameError},
		{&mq.Message{Properties: map[string]string{"has space": "1"}}, mq.ReasonPropertyNameError},
	}
	for i, c := range cases {
		if err := s.Put(ctxFor(t, 5*time.Second), q, c.msg); mq.ReasonOf(err) != c.want {
			t.Errorf("case %d: err %v, want %s", i, err, c.want)
		}
	}
	h.commit(s)
	h.expectEmpty(s, q, mq.Any)
}

// expectInUse asserts a refused consumer claim: MQRC 2042 whose cause names
// the holder.
func expectInUse(t *testing.T, err error, holder mq.Holder) {
	t.Helper()
	if err == nil {
		t.Fatal("second consumer claim succeeded, want MQRC 2042 OBJECT_IN_USE")
	}
	var iu *mq.InUseError
	if !errors.Is(err, mq.ErrInUse) || mq.ReasonOf(err) != mq.ReasonObjectInUse || !errors.As(err, &iu) {
		t.Fatalf("err = %v, want MQRC 2042 with an *mq.InUseError", err)
	}
	if iu.Holder.Conn != holder.Conn || iu.Holder.PID != holder.PID || iu.Holder.Host != holder.Host {
		t.Fatalf("refusal names %+v, want the holder %+v", iu.Holder, holder)
	}
	for _, want := range []string{holder.Conn, fmt.Sprintf("pid %d", holder.PID)} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not name the holder (%s)", err, want)
		}
	}
}

func testExclusiveConsumer(t *testing.T, h *harness) {
	if !h.opts.ExclusiveConsumer {
		t.Skip("backend does not declare exclusive consumers")
	}
	q := h.queue("exclusive", 0, "")
	ctx := ctxFor(t, 20*time.Second)
	first, err := h.conn.ClaimConsumer(ctx, q)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if first.Queue() != q || first.Holder().PID != os.Getpid() || first.Holder().Conn == "" {
		t.Fatalf("claim reports %s %+v", first.Queue(), first.Holder())
	}
	other := h.connect()
	_, err = other.ClaimConsumer(ctx, q)
	expectInUse(t, err, first.Holder())
	// The holding connection cannot open a second consumer either.
	_, err = h.conn.ClaimConsumer(ctx, q)
	expectInUse(t, err, first.Holder())
	// The holder consumes as usual.
	h.putCommitted(q, "one")
	s := h.session(h.conn)
	if m := h.get(s, q, mq.Any); string(m.Body) != "one" {
		t.Fatalf("holder got %q", m.Body)
	}
	h.commit(s)
	// Released: another connection may claim.
	if err := first.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	second, err := other.ClaimConsumer(ctx, q)
	if err != nil {
		t.Fatalf("claim after release: %v", err)
	}
	_, err = h.conn.ClaimConsumer(ctx, q)
	expectInUse(t, err, second.Holder())
	// Closing the holder's connection ends its claim.
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	for {
		third, err := h.conn.ClaimConsumer(ctx, q)
		if err == nil {
			if err := third.Release(ctx); err != nil {
				t.Fatal(err)
			}
			return
		}
		if !errors.Is(err, mq.ErrInUse) || ctx.Err() != nil {
			t.Fatalf("claim after the holder closed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Connections racing to claim one queue: exactly one wins, every other is
// refused naming the winner.
func testExclusiveConsumerRace(t *testing.T, h *harness) {
	if !h.opts.ExclusiveConsumer {
		t.Skip("backend does not declare exclusive consumers")
	}
	q := h.queue("exclusive.race", 0, "")
	const n = 6
	conns := make([]mq.Connection, n)
	for i := range conns {
		conns[i] = h.connect()
	}
	ctx := ctxFor(t, 20*time.Second)
	claims := make([]mq.ConsumerClaim, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			claims[i], errs[i] = conns[i].ClaimConsumer(ctx, q)
		}()
	}
	wg.Wait()
	var winner mq.ConsumerClaim
	for i := range conns {
		if errs[i] == nil {
			if winner != nil {
				t.Fatalf("two connections hold the consumer claim: %v and %v", winner.Holder(), claims[i].Holder())
			}
			winner = claims[i]
		}
	}
	if winner == nil {
		t.Fatalf("no connection won the claim: %v", errs)
	}
	for i := range conns {
		if errs[i] != nil {
			expectInUse(t, errs[i], winner.Holder())
		}
	}
	if err := winner.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) requireBatch(s mq.Session) {
	h.t.Helper()
	_, ok := s.(mq.BatchGetter)
	if h.opts.BatchGet != ok {
		h.t.Fatalf("Options.BatchGet is %v but the session implements mq.BatchGetter: %v", h.opts.BatchGet, ok)
	}
}

func bodies(ms []*mq.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, string(m.Body))
	}
	return out
}

// batch is mq.GetBatch. On a backend without a native batch get (the
// fallback: one Get per message, each later one looking only briefly, as
// a broker delivering on credit needs), one call may take a subset of the
// messages that are there, and a later call in the same unit takes the
// rest; so there it repeats the call until want messages are taken (or
// ctx ends, which fails the case).
func (h *harness) batch(ctx context.Context, s mq.Session, q string, max, want int, matches ...mq.Match) ([]*mq.Message, error) {
	ms, err := mq.GetBatch(ctx, s, q, max, matches...)
	if h.opts.BatchGet || err != nil {
		return ms, err
	}
	for len(ms) < want && len(ms) < max {
		more, err := mq.GetBatch(ctx, s, q, max-len(ms), matches...)
		if err != nil {
			return ms, err
		}
		ms = append(ms, more...)
	}
	return ms, nil
}

// testBatchGet: a batch get takes up to max messages in queue order, hides
// them from other getters until the unit ends, a rollback restores every
// one with BackoutCount+1, and a commit removes every one.
func testBatchGet(t *testing.T, h *harness) {
	q := h.queue("batch", 0, "")
	h.putCommitted(q, "b0", "b1", "b2", "b3", "b4")
	s1, s2 := h.session(h.conn), h.session(h.conn)
	h.requireBatch(s1)
	ctx := ctxFor(t, 10*time.Second)
	ms, err := h.batch(ctx, s1, q, 3, 3)
	if err != nil {
		t.Fatalf("batch get: %v", err)
	}
	if got := strings.Join(bodies(ms), ","); got != "b0,b1,b2" {
		t.Fatalf("batch got %s, want b0,b1,b2", got)
	}
	rest, err := h.batch(ctx, s2, q, 10, 2)
	if err != nil {
		t.Fatalf("second getter: %v", err)
	}
	if got := strings.Join(bodies(rest), ","); got != "b3,b4" {
		t.Fatalf("second getter got %s, want b3,b4 (b0..b2 are hidden)", got)
	}
	h.commit(s2)
	h.rollback(s1)
	again, err := h.batch(ctx, s1, q, 10, 3)
	if err != nil {
		t.Fatalf("after rollback: %v", err)
	}
	if got := strings.Join(bodies(again), ","); got != "b0,b1,b2" {
		t.Fatalf("after rollback got %s, want b0,b1,b2", got)
	}
	for _, m := range again {
		if m.BackoutCount != 1 {
			t.Fatalf("%s: BackoutCount %d after one rollback, want 1", m.Body, m.BackoutCount)
		}
	}
	h.commit(s1)
	h.expectEmpty(s1, q, mq.Any)
}

// testBatchGetCorrel: a batch get selecting by several CorrelIDs takes
// exactly the matching messages and leaves the others.
func testBatchGetCorrel(t *testing.T, h *harness) {
	q := h.queue("batchcorrel", 0, "")
	s := h.session(h.conn)
	h.requireBatch(s)
	ids := []mq.ID{mq.NewID(), mq.NewID(), mq.NewID(), mq.NewID()}
	for i, id := range ids {
		h.put(s, q, &mq.Message{CorrelID: id, Body: []byte(fmt.Sprintf("c%d", i))})
	}
	h.commit(s)
	ctx := ctxFor(t, 10*time.Second)
	ms, err := h.batch(ctx, s, q, 10, 2, mq.ByCorrelID(ids[3]), mq.ByCorrelID(ids[1]), mq.ByCorrelID(mq.NewID()))
	if err != nil {
		t.Fatalf("batch get by correl ids: %v", err)
	}
	got := bodies(ms)
	if !h.opts.BatchGet { // the one-Get-per-match fallback takes them in match order
		slices.Sort(got)
	}
	if strings.Join(got, ",") != "c1,c3" {
		t.Fatalf("got %s, want c1,c3 (queue order)", strings.Join(got, ","))
	}
	h.commit(s)
	left, err := h.batch(ctx, s, q, 10, 2)
	if err != nil {
		t.Fatalf("remaining: %v", err)
	}
	rest := bodies(left)
	if !h.opts.BatchGet { // a backend selecting by taking and returning (AMQP 1.0) may reorder the others
		slices.Sort(rest)
	}
	if got := strings.Join(rest, ","); got != "c0,c2" {
		t.Fatalf("remaining %s, want c0,c2", got)
	}
	h.commit(s)
}

// testBatchGetWait: a batch get with nothing there waits until a commit
// puts messages (then takes them), and ends with MQRC 2033 when its
// context does.
func testBatchGetWait(t *testing.T, h *harness) {
	q := h.queue("batchwait", 0, "")
	s := h.session(h.conn)
	h.requireBatch(s)
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := mq.GetBatch(short, s, q, 5); !errors.Is(err, mq.ErrNoMessage) {
		t.Fatalf("empty queue: %v, want MQRC 2033", err)
	}
	got := make(chan []*mq.Message, 1)
	go func() {
		ms, err := mq.GetBatch(ctxFor(t, 10*time.Second), s, q, 5)
		if err != nil {
			t.Errorf("waiting batch get: %v", err)
		}
		got <- ms
	}()
	time.Sleep(100 * time.Millisecond)
	p := h.session(h.conn)
	h.put(p, q, &mq.Message{Body: []byte("w0")})
	h.put(p, q, &mq.Message{Body: []byte("w1")})
	h.commit(p)
	ms := <-got
	if len(ms) == 0 || string(ms[0].Body) != "w0" {
		t.Fatalf("waiting batch get returned %v", bodies(ms))
	}
	h.commit(s)
}

// testBatchRequests: mq.SendRequests puts many requests in one unit of
// work; a responder answers them; mq.AwaitReplies collects every reply by
// its request's id, whatever order they come in.
func testBatchRequests(t *testing.T, h *harness) {
	req, rep := h.queue("batchreq", 0, ""), h.queue("batchrep", 0, "")
	ctx, cancel := context.WithCancel(ctxFor(t, 20*time.Second))
	defer cancel()
	var wg sync.WaitGroup
	h.respond(ctx, req, &wg)
	defer func() { cancel(); wg.Wait() }()
	s := h.session(h.conn)
	var reqs []*mq.Message
	for i := 0; i < 6; i++ {
		reqs = append(reqs, &mq.Message{Body: []byte(fmt.Sprintf("q%d", i))})
	}
	ids, err := mq.SendRequests(ctx, s, req, rep, reqs)
	if err != nil {
		t.Fatalf("send requests: %v", err)
	}
	replies, err := mq.AwaitReplies(ctxFor(t, 10*time.Second), s, rep, ids)
	if err != nil {
		t.Fatalf("await replies: %v", err)
	}
	for i, id := range ids {
		if r := replies[id]; r == nil || string(r.Body) != fmt.Sprintf("re:q%d", i) {
			t.Fatalf("reply to q%d: %v", i, r)
		}
	}
	// A request nobody answers: AwaitReplies times out naming it.
	lone := h.queue("batchlone", 0, "")
	ids, err = mq.SendRequests(ctx, s, lone, rep, []*mq.Message{{Body: []byte("x")}})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	short, scancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer scancel()
	got, err := mq.AwaitReplies(short, s, rep, ids)
	var te *mq.ReplyTimeoutError
	if !errors.As(err, &te) || te.RequestID != ids[0] || len(got) != 0 {
		t.Fatalf("unanswered: %v (%d replies), want *mq.ReplyTimeoutError for %s", err, len(got), ids[0])
	}
}

// take is mq.TakeBatch repeated until want messages are taken (a backend
// without a native batch get may take a subset per call; see batch).
func (h *harness) take(ctx context.Context, s mq.Session, q string, want int) []*mq.Message {
	h.t.Helper()
	var ms []*mq.Message
	for len(ms) < want {
		more, err := mq.TakeBatch(ctx, s, q, want-len(ms))
		if err != nil {
			h.t.Fatalf("take from %s: %v", q, err)
		}
		ms = append(ms, more...)
	}
	return ms
}

// testTakeBatch: mq.TakeBatch takes messages in queue order and commits
// them with the unit's other work: they are gone for every getter, and a
// later rollback restores none of them.
func testTakeBatch(t *testing.T, h *harness) {
	q, q2 := h.queue("take", 0, ""), h.queue("take2", 0, "")
	h.putCommitted(q, "t0", "t1", "t2", "t3", "t4")
	s1, s2 := h.session(h.conn), h.session(h.conn)
	ctx := ctxFor(t, 10*time.Second)
	h.put(s1, q2, &mq.Message{Body: []byte("x")}) // open work, committed by the take
	if got := strings.Join(bodies(h.take(ctx, s1, q, 2)), ","); got != "t0,t1" {
		t.Fatalf("take with a unit open got %s, want t0,t1", got)
	}
	if m := h.get(s2, q2, mq.Any); string(m.Body) != "x" {
		t.Fatalf("the put made before the take: got %q, want x", m.Body)
	}
	h.commit(s2)
	if got := strings.Join(bodies(h.take(ctx, s1, q, 1)), ","); got != "t2" {
		t.Fatalf("take with no unit open got %s, want t2", got)
	}
	h.rollback(s1) // nothing to back out: the takes are committed
	rest, err := h.batch(ctx, s2, q, 10, 2)
	if err != nil {
		t.Fatalf("second getter: %v", err)
	}
	if got := strings.Join(bodies(rest), ","); got != "t3,t4" {
		t.Fatalf("second getter got %s, want t3,t4 (t0..t2 taken)", got)
	}
	for _, m := range rest {
		if m.BackoutCount != 0 {
			t.Fatalf("%s: BackoutCount %d, want 0", m.Body, m.BackoutCount)
		}
	}
	h.commit(s2)
	h.expectEmpty(s1, q, mq.Any)
	h.expectEmpty(s1, q2, mq.Any)
}

// testCommitAndGet: mq.CommitAndGet commits the unit (its gets removed,
// its puts visible) and the messages it returns start the next unit, as
// GetBatch's would: hidden from others, restored with BackoutCount+1 by a
// rollback. Messages it does not return (a backend without it returns
// none) are got by the next GetBatch as usual.
func testCommitAndGet(t *testing.T, h *harness) {
	q, replies := h.queue("cag", 0, ""), h.queue("cagreply", 0, "")
	h.putCommitted(q, "r0", "r1", "r2")
	s1, s2 := h.session(h.conn), h.session(h.conn)
	ctx := ctxFor(t, 10*time.Second)
	if m := h.get(s1, q, mq.Any); string(m.Body) != "r0" {
		t.Fatalf("got %q, want r0", m.Body)
	}
	h.put(s1, replies, &mq.Message{Body: []byte("reply0")})
	next, err := mq.CommitAndGet(ctx, s1, q, 10)
	if err != nil {
		t.Fatalf("commit and get: %v", err)
	}
	if len(next) < 2 {
		more, err := h.batch(ctx, s1, q, 10, 2-len(next))
		if err != nil {
			t.Fatalf("get after commit and get: %v", err)
		}
		next = append(next, more...)
	}
	if got := strings.Join(bodies(next), ","); got != "r1,r2" {
		t.Fatalf("next unit got %s, want r1,r2", got)
	}
	if m := h.get(s2, replies, mq.Any); string(m.Body) != "reply0" {
		t.Fatalf("the committed put: got %q, want reply0", m.Body)
	}
	h.commit(s2)
	h.expectEmpty(s2, q, mq.Any) // r0 removed, r1 and r2 held by s1's new unit
	h.rollback(s1)
	again, err := h.batch(ctx, s2, q, 10, 2)
	if err != nil {
		t.Fatalf("after rollback: %v", err)
	}
	if got := strings.Join(bodies(again), ","); got != "r1,r2" {
		t.Fatalf("after rollback got %s, want r1,r2", got)
	}
	for _, m := range again {
		if m.BackoutCount != 1 {
			t.Fatalf("%s: BackoutCount %d after one rollback, want 1", m.Body, m.BackoutCount)
		}
	}
	h.commit(s2)
	h.expectEmpty(s1, q, mq.Any)
}
