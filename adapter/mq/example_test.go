package mq_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/adapter/mq/embedded"
)

// A requester and a responder over the embedded transport: the reply's
// CorrelID is the request's MsgID.
func ExampleRequest() {
	dir, _ := os.MkdirTemp("", "mq-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	conn, _ := embedded.New(filepath.Join(dir, "queues.db"), embedded.Options{}).Connect(ctx)
	defer conn.Close()
	_ = conn.DeclareQueue(ctx, mq.QueueSpec{Name: "CORE.REQUEST"})
	_ = conn.DeclareQueue(ctx, mq.QueueSpec{Name: "CORE.REPLY"})

	go func() { // the core: get the request, put the reply, commit both together
		s, _ := conn.Session(ctx)
		defer s.Close()
		req, err := s.Get(ctx, "CORE.REQUEST", mq.Any)
		if err != nil {
			return
		}
		_ = mq.Reply(ctx, s, req, &mq.Message{Body: append([]byte("OK "), req.Body...)})
		_ = s.Commit(ctx)
	}()

	s, _ := conn.Session(ctx)
	defer s.Close()
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req := &mq.Message{Body: []byte("BALANCE 0001234")}
	reply, err := mq.Request(wait, s, "CORE.REQUEST", "CORE.REPLY", req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(reply.Body), reply.CorrelID == req.MsgID)
	// Output: OK BALANCE 0001234 true
}

// A message that keeps failing is moved to the backout queue once its
// BackoutCount reaches the queue's threshold.
func ExampleHandlePoison() {
	dir, _ := os.MkdirTemp("", "mq-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	conn, _ := embedded.New(filepath.Join(dir, "queues.db"), embedded.Options{}).Connect(ctx)
	defer conn.Close()
	_ = conn.DeclareQueue(ctx, mq.QueueSpec{Name: "IN.BACKOUT"})
	_ = conn.DeclareQueue(ctx, mq.QueueSpec{Name: "IN", BackoutThreshold: 2, BackoutQueue: "IN.BACKOUT"})
	spec, _ := conn.Queue(ctx, "IN")

	s, _ := conn.Session(ctx)
	defer s.Close()
	_ = s.Put(ctx, "IN", &mq.Message{Body: []byte{0xF1, 0xC1}})
	_ = s.Commit(ctx)
	for {
		m, _ := s.Get(ctx, "IN", mq.Any)
		moved, err := mq.HandlePoison(ctx, s, "IN", m, mq.PolicyFor(spec), "unparseable record")
		if err != nil || moved {
			fmt.Println("moved after", m.BackoutCount, "backouts", err)
			break
		}
		_ = s.Rollback(ctx) // processing failed
	}
	bad, _ := s.Get(ctx, "IN.BACKOUT", mq.Any)
	_ = s.Commit(ctx)
	fmt.Printf("%X %s\n", bad.Body, bad.Properties[mq.PropBackoutReason])
	// Output:
	// moved after 2 backouts <nil>
	// F1C1 unparseable record
}
