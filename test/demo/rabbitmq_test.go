package demo_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/adapter/mq/rabbit"
	"github.com/zcgw/zcgw/formats/coremsg"
	"github.com/zcgw/zcgw/gateway/demo"
	"github.com/zcgw/zcgw/gateway/node"
)

// `zcgw demo --mq rabbitmq`: the same business day with every core
// request and reply over RabbitMQ, the same outcomes, and the run's queues
// gone from the broker afterwards. Skipped locally without a broker,
// never under CI=true.
func TestDemoDayOverRabbitMQ(t *testing.T) {
	if c, err := net.DialTimeout("tcp", "127.0.0.1:5672", 2*time.Second); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("RabbitMQ is not reachable at 127.0.0.1:5672 and CI=true: %v", err)
		}
		t.Skipf("RabbitMQ is not reachable at 127.0.0.1:5672 (%v); start it with `rabbitmq-server -detached`", err)
	} else {
		c.Close()
	}
	var out bytes.Buffer
	sum, err := demo.Run(context.Background(), demo.Options{DataDir: t.TempDir(), Out: &out,
		MQ: &node.MQConfig{Kind: node.MQRabbitMQ, URL: rabbit.DefaultURL}})
	if err != nil {
		t.Fatalf("demo over RabbitMQ failed: %v\n%s", err, out.String())
	}
	// 18 transfers of the day (2 HTLCs among them) and the FX conduit's two
	// currency legs.
	if sum.Settled != 16 || sum.Cancelled != 4 || len(sum.Transfers) != 20 || sum.FX["FX-DEMO-1"] != "SETTLED" {
		t.Errorf("%d transfers: settled %d cancelled %d, FX %v; want 20: 16 and 4, FX-DEMO-1 SETTLED", len(sum.Transfers), sum.Settled, sum.Cancelled, sum.FX)
	}
	m := regexp.MustCompile(`over rabbitmq \(core queues (DEMO[0-9a-f]{8}\.\{bank\}\.)`).FindSubmatch(out.Bytes())
	if m == nil {
		t.Fatalf("the day does not say it ran over RabbitMQ:\n%s", out.String())
	}
	conn, err := rabbit.New(rabbit.DefaultURL, rabbit.Options{}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	q := coremsg.QueueNaming{Prefix: string(m[1])}.For("001")
	for _, name := range []string{q.Request, q.Reply, q.Backout} {
		if _, err := conn.Queue(context.Background(), name); !errors.Is(err, mq.ErrUnknownQueue) {
			t.Errorf("queue %s after the run: %v, want it deleted (MQRC 2085)", name, err)
		}
	}
}
