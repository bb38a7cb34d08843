package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/gateway/demo"
	"github.com/zcgw/zcgw/gateway/node"
)

// zcgw demo: one simulated business day on the embedded defaults (logic in
// gateway/demo).
func init() {
	register("demo", command{
		Summary: "play one simulated business day on the embedded defaults and check its invariants",
		Run: func(ctx context.Context, e *env, args []string) int {
			fs := e.flagSet("demo")
			mqFlag := mqFlags(fs)
			if err := fs.Parse(args); err != nil {
				return 2
			}
			m, err := mqFlag()
			if err != nil {
				fmt.Fprintln(e.Stderr, "zcgw demo:", err)
				return 2
			}
			if _, err := demo.Run(ctx, demo.Options{DataDir: e.DataDir, Out: e.Stdout, MQ: m}); err != nil {
				fmt.Fprintln(e.Stderr, "zcgw "+err.Error()) // "zcgw demo: invariant NAME failed: …"
				return 1
			}
			return 0
		},
	})
}

// mqFlags adds --mq and --mq-url to fs (zcgw demo, zcgw bench): the queue
// manager the node runs on. The returned function reads them after Parse.
func mqFlags(fs *flag.FlagSet) func() (*node.MQConfig, error) {
	kind := fs.String("mq", node.MQEmbedded, "queue manager: embedded, rabbitmq or amqp1 (RabbitMQ's AMQP 1.0 plugin; queues declared over AMQP 0-9-1)")
	url := fs.String("mq-url", "amqp://guest:guest@127.0.0.1:5672/", "broker URL for --mq rabbitmq or amqp1")
	return func() (*node.MQConfig, error) {
		m := &node.MQConfig{Kind: *kind}
		switch *kind {
		case node.MQEmbedded:
			return nil, nil
		case node.MQRabbitMQ:
			m.URL = *url
		case node.MQAMQP1:
			m.URL, m.Declare = *url, "rabbitmq"
		}
		if err := (node.Config{MQ: m, Banks: []node.BankConfig{{BankID: "001"}}}).Validate(); err != nil {
			return nil, fmt.Errorf("--mq: %s", strings.TrimPrefix(err.Error(), node.ConfigFile+": "))
		}
		return m, nil
	}
}
