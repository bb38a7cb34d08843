package rabbit

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/adapter/mq/mqtest"
)

// requireBroker skips when no broker listens on 127.0.0.1:5672, except
// under CI=true, where a missing broker is a failure.
func requireBroker(t testing.TB) {
	t.Helper()
	requireBrokerAt(t, "127.0.0.1:5672")
}

func requireBrokerAt(t testing.TB, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		c.Close()
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("RabbitMQ is not reachable at %s and CI=true: %v (start it with `rabbitmq-server -detached`)", addr, err)
	}
	t.Skipf("RabbitMQ is not reachable at %s (%v); start it with `rabbitmq-server -detached` to run these tests", addr, err)
}

func TestConformance(t *testing.T) {
	requireBroker(t)
	tr := New(DefaultURL, Options{})
	mqtest.Run(t, func(t *testing.T) mq.Transport { return tr },
		mqtest.Options{FIFOOnly: true, SkipCountsAsBackout: true, ExclusiveConsumer: true, BatchGet: true})
}

// TestRaceConformance is the concurrency part of the suite, named so that
// CI's `go test -race -run 'Race|Concurrent|Parallel'` picks it up.
func TestRaceConformance(t *testing.T) {
	requireBroker(t)
	tr := New(DefaultURL, Options{})
	mqtest.RunConcurrent(t, func(t *testing.T) mq.Transport { return tr },
		mqtest.Options{FIFOOnly: true, SkipCountsAsBackout: true, ExclusiveConsumer: true, BatchGet: true})
}

// Past x-delivery-limit the broker itself dead-letters to the backout
// queue, and the message arrives there marked with the reason.
func TestBrokerDeadLettersPastDeliveryLimit(t *testing.T) {
	requireBroker(t)
	ctx := context.Background()
	tr := New(DefaultURL, Options{})
	c, err := tr.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	prefix := "rabbit-test." + mq.NewID().String()[:10] + "."
	boq, q := prefix+"boq", prefix+"in"
	for _, spec := range []mq.QueueSpec{{Name: boq}, {Name: q, BackoutThreshold: 1, BackoutQueue: boq}} {
		if err := c.DeclareQueue(ctx, spec); err != nil {
			t.Fatal(err)
		}
		defer c.DeleteQueue(context.Background(), spec.Name)
	}
	s, _ := c.Session(ctx)
	sent := &mq.Message{Body: []byte("poison")}
	if err := s.Put(ctx, q, sent); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Roll back without ever calling HandlePoison.
	for i := 0; i < 2; i++ {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := s.Get(gctx, q, mq.Any)
		cancel()
		if err != nil || m.BackoutCount != i {
			t.Fatalf("delivery %d: %v count %v", i, err, m)
		}
		if err := s.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	got, err := s.Get(gctx, boq, mq.Any)
	if err != nil {
		t.Fatalf("backout queue: %v", err)
	}
	if got.MsgID != sent.MsgID || got.Properties[mq.PropBackoutSource] != q ||
		got.Properties[mq.PropBackoutReason] != "rabbitmq dead-lettered: delivery_limit" {
		t.Fatalf("dead letter %s props %v", got.MsgID, got.Properties)
	}
	if err := s.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkPutGet(b *testing.B) {
	requireBroker(b)
	mqtest.BenchmarkPutGet(b, New(DefaultURL, Options{}))
}

func BenchmarkRequestReply(b *testing.B) {
	requireBroker(b)
	mqtest.BenchmarkRequestReply(b, New(DefaultURL, Options{}))
}

// TestHelperBrokerCheck is not a test: it is the child process of
// TestMissingBrokerSkipsLocallyFailsInCI.
func TestHelperBrokerCheck(t *testing.T) {
	addr := os.Getenv("ZCGW_MQ_BROKER_CHECK_ADDR")
	if addr == "" {
		t.Skip("child process of TestMissingBrokerSkipsLocallyFailsInCI only")
	}
	requireBrokerAt(t, addr)
}

func TestMissingBrokerSkipsLocallyFailsInCI(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := l.Addr().String()
	l.Close() // nothing listens there now
	for _, ci := range []string{"", "true"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBrokerCheck$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "ZCGW_MQ_BROKER_CHECK_ADDR="+closedAddr, "CI="+ci)
		out, err := cmd.CombinedOutput()
		switch {
		case ci == "true" && (err == nil || !strings.Contains(string(out), "--- FAIL") || !strings.Contains(string(out), "CI=true")):
			t.Errorf("CI=true: want a failure naming CI=true, got err=%v\n%s", err, out)
		case ci == "" && (err != nil || !strings.Contains(string(out), "--- SKIP") || !strings.Contains(string(out), "rabbitmq-server -detached")):
			t.Errorf("locally: want a skip telling how to start RabbitMQ, got err=%v\n%s", err, out)
		}
	}
}
