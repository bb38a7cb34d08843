package node

import (
	"context"
	"errors"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/gateway"
)

// readyChecks are the node's /readyz checks besides zc.db and the mode
// (the gateway adds those): each bank's adapter database and its MQ link
// (an inquire on the core's request queue), the ingress nonce database,
// the job ledger, and the Kafka publisher when node.json configures one.
// Every database check takes and releases the write lock, writing nothing.
func (n *Node) readyChecks(nonces, ledger *store.DB) []gateway.ReadyCheck {
	var out []gateway.ReadyCheck
	for _, bc := range n.Config.Banks {
		b := n.Banks[bc.BankID]
		out = append(out, gateway.DBWritable("adapter-"+bc.BankID+".db", b.Adapter.DB()),
			gateway.ReadyCheck{Name: "mq:" + bc.BankID, Check: b.Link.Ping})
	}
	out = append(out, gateway.DBWritable("ingress-nonces.db", nonces), gateway.DBWritable("jobs ledger", ledger))
	if k := n.Config.Kafka; k != nil && len(k.Brokers) > 0 {
		out = append(out, gateway.ReadyCheck{Name: "kafka", Check: func(context.Context) error {
			p := n.kafka.Load()
			if p == nil {
				return errors.New("the Kafka publisher has not started")
			}
			return p.Health()
		}})
	}
	return out
}
