package corelink_test

import (
	"context"
	"fmt"
	"github.com/zcgw/zcgw/formats/coremsg"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/outbox"
)

// queueBatch takes the core offline, sends ps with ApplyBatch (after
// whatever before puts), waits until every request is on the queue, then
// brings the core back, so the core finds them all at once. It returns
// ApplyBatch's answers.
func queueBatch(t *testing.T, w *world, before func(), ps []outbox.Posting) []outbox.BatchResult {
	t.Helper()
	w.core.SetOffline(true)
	if before != nil {
		before()
	}
	got := make(chan []outbox.BatchResult, 1)
	go func() { got <- w.link.ApplyBatch(context.Background(), ps) }()
	conn, err := w.tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rq := coremsg.QueuesFor(bank).Request
	want := int64(len(ps))
	if before != nil {
		want++
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		d, err := conn.(mq.DepthInquirer).Depth(context.Background(), rq)
		if err != nil {
			t.Fatal(err)
		}
		if d >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue depth %d, want %d", d, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.core.SetOffline(false)
	return <-got
}

// A batch of posting requests is applied in one core commit and answered
// together: every posting APPLIED with its journal number, journalled once.
func TestCoreAppliesABatchInOneCommit(t *testing.T) {
	w := newWorld(t, 10*time.Second)
	var ps []outbox.Posting
	for a := range 10 {
		acct := fmt.Sprintf("001-1-%07d", a+1)
		w.open(t, acct, "ﾃｽﾄ", 0)
		ps = append(ps, posting(fmt.Sprintf("CB-%02d", a), acct, outbox.Credit, 7))
	}
	before := w.core.DB().Stats().Commits
	res := queueBatch(t, w, nil, ps)
	if c := w.core.DB().Stats().Commits - before; c != 1 {
		t.Fatalf("%d core commits for a batch of %d requests, want 1", c, len(ps))
	}
	for i, r := range res {
		if r.Err != nil || r.CoreRef == "" {
			t.Fatalf("%s: %+v", ps[i].Ref, r)
		}
		if n := w.timesApplied(t, ps[i].Ref); n != 1 {
			t.Fatalf("%s journalled %d times", ps[i].Ref, n)
		}
	}
}

// A request the core cannot process inside a batch backs the batch out;
// the core then serves one request at a time, so the bad one reaches its
// backout threshold alone and moves to the backout queue, and every
// posting of the batch is applied exactly once.
func TestBadRequestInABatchIsIsolated(t *testing.T) {
	w := newWorld(t, 10*time.Second)
	ctx := context.Background()
	var ps []outbox.Posting
	for a := range 5 {
		acct := fmt.Sprintf("001-1-%07d", a+1)
		w.open(t, acct, "ﾃｽﾄ", 0)
		ps = append(ps, posting(fmt.Sprintf("BI-%02d", a), acct, outbox.Credit, 3))
	}
	conn, err := w.tr.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s, _ := conn.Session(ctx)
	defer s.Close()
	qs := coremsg.QueuesFor(bank)
	rq, pq, bq := qs.Request, qs.Reply, qs.Backout
	res := queueBatch(t, w, func() {
		if _, err := mq.SendRequest(ctx, s, rq, pq, &mq.Message{Body: []byte("NOT A CORE MESSAGE")}); err != nil {
			t.Fatal(err)
		}
	}, ps)
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("%s: %v", ps[i].Ref, r.Err)
		}
		if n := w.timesApplied(t, ps[i].Ref); n != 1 {
			t.Fatalf("%s journalled %d times", ps[i].Ref, n)
		}
	}
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := s.Get(gctx, bq, mq.Any)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Commit(ctx)
	if string(m.Body) != "NOT A CORE MESSAGE" || m.Properties[mq.PropBackoutCount] != "3" {
		t.Fatalf("backout message: %q %v", m.Body, m.Properties)
	}
}
