package coremsg

import "strings"

// BankPlaceholder in a queue prefix stands for the bank code.
const BankPlaceholder = "{bank}"

// Default queue naming: CORE.<bank>.REQUEST, CORE.<bank>.REPLY and
// CORE.<bank>.BACKOUT.
const (
	DefaultQueuePrefix  = "CORE." + BankPlaceholder + "."
	DefaultRequestQueue = "REQUEST"
	DefaultReplyQueue   = "REPLY"
	DefaultBackoutQueue = "BACKOUT"
)

// QueueNaming names the queues of every bank's core: Prefix (with
// BankPlaceholder replaced by the bank code) followed by each queue's
// name. An empty field takes its default. It is the one declaration of the
// core queue names: the node's link (adapter/corelink), the simulated core
// (adapter/coresim) and the MQSC script in docs/mq.md all follow it.
type QueueNaming struct {
	Prefix, Request, Reply, Backout string
}

// Queues are one bank's core queues: requests to the core, its replies,
// and the backout queue (BOQNAME) of the request queue.
type Queues struct {
	Request, Reply, Backout string
}

// For returns the queues of bank under this naming.
func (n QueueNaming) For(bank string) Queues {
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	p := strings.ReplaceAll(or(n.Prefix, DefaultQueuePrefix), BankPlaceholder, bank)
	return Queues{
		Request: p + or(n.Request, DefaultRequestQueue),
		Reply:   p + or(n.Reply, DefaultReplyQueue),
		Backout: p + or(n.Backout, DefaultBackoutQueue),
	}
}

// QueuesFor returns bank's queues under the default naming.
func QueuesFor(bank string) Queues { return QueueNaming{}.For(bank) }
