package amqp1

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/adapter/mq/mqtest"
	"github.com/zcgw/zcgw/adapter/mq/rabbit"
)

// requireBroker skips when RabbitMQ's AMQP 1.0 plugin is not reachable,
// except under CI=true (.ci/run enables the plugin), where it fails.
func requireBroker(t testing.TB) {
	t.Helper()
	c, err := net.DialTimeout("tcp", "127.0.0.1:5672", 2*time.Second)
	if err == nil {
		c.Close()
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("RabbitMQ is not reachable at 127.0.0.1:5672 and CI=true: %v", err)
	}
	t.Skipf("RabbitMQ is not reachable at 127.0.0.1:5672 (%v); start it with `rabbitmq-server -detached` and `rabbitmq-plugins enable rabbitmq_amqp1_0`", err)
}

// URL is the local broker's AMQP 1.0 listener (RabbitMQ 3.x serves AMQP
// 1.0 and 0-9-1 on the same port once the plugin is enabled).
const URL = "amqp://guest:guest@127.0.0.1:5672/"

// newTransport is RabbitMQ's AMQP 1.0 plugin with queues declared over
// AMQP 0-9-1 (quorum queues, delivery limit, exclusive consumer locks).
func newTransport() *Transport {
	return New(URL, Options{Admin: rabbit.New(rabbit.DefaultURL, rabbit.Options{})})
}

// declared is this backend's declared features on RabbitMQ's plugin:
// quorum queues are FIFO, a filtered get's release counts as a delivery,
// consumer claims are the 0-9-1 lock queues, and the plugin reports
// only whether a message was delivered before (first-acquirer).
var declared = mqtest.Options{FIFOOnly: true, SkipCountsAsBackout: true, ExclusiveConsumer: true, RedeliveredOnly: true}

func TestConformance(t *testing.T) {
	requireBroker(t)
	tr := newTransport()
	mqtest.Run(t, func(t *testing.T) mq.Transport { return tr }, declared)
}

// TestRaceConformance is the concurrency part of the suite (CI's -race run).
func TestRaceConformance(t *testing.T) {
	requireBroker(t)
	tr := newTransport()
	mqtest.RunConcurrent(t, func(t *testing.T) mq.Transport { return tr }, declared)
}

func BenchmarkPutGet(b *testing.B) {
	requireBroker(b)
	mqtest.BenchmarkPutGet(b, newTransport())
}

func BenchmarkRequestReply(b *testing.B) {
	requireBroker(b)
	mqtest.BenchmarkRequestReply(b, newTransport())
}
