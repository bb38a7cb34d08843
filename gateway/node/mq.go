package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/zcgw/zcgw/adapter/corelink"
	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/adapter/mq/amqp1"
	"github.com/zcgw/zcgw/adapter/mq/embedded"
	"github.com/zcgw/zcgw/adapter/mq/rabbit"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/formats/coremsg"
)

// MQ kinds (node.json mq.kind).
const (
	MQEmbedded = "embedded" // the queue file DATA/mq.db (adapter/mq/embedded), the default
	MQRabbitMQ = "rabbitmq" // RabbitMQ over AMQP 0-9-1 (adapter/mq/rabbit)
	MQAMQP1    = "amqp1"    // any AMQP 1.0 broker (adapter/mq/amqp1): IBM MQ's AMQP channel, Artemis, RabbitMQ's plugin
)

// Bank core placements (node.json banks[].core).
const (
	CoreSimulated = "simulated" // the default: the node runs the bank's simulated core in process
	CoreExternal  = "external"  // another process (the bank's core, or `zcgw coresim --mq URL`) serves the core's queues
)

// MQConfig is node.json's mq block: the queue manager between the banks'
// adapters and their cores (docs/mq.md, "Choosing the queue manager").
type MQConfig struct {
	Kind string `json:"kind"`
	// URL of the broker (rabbitmq, amqp1): amqp://user:password@host:port/vhost.
	URL string `json:"url,omitempty"`
	// Queues names the core queues; every field defaults to today's
	// names, CORE.{bank}.REQUEST, .REPLY and .BACKOUT.
	Queues *MQQueues `json:"queues,omitempty"`
	// AddressPrefix (amqp1) turns a queue name into its AMQP 1.0 address
	// (default "/amq/queue/", RabbitMQ 3.x; "" for IBM MQ and Artemis,
	// which address a queue by its name).
	AddressPrefix *string `json:"address_prefix,omitempty"`
	// Declare (amqp1) is how queues come to exist: "none" (the default:
	// the broker's administrator defines them, IBM MQ with the MQSC script
	// of docs/mq.md; the node checks they exist) or "rabbitmq" (declared
	// over AMQP 0-9-1 on the same host, as the rabbitmq kind does).
	Declare string `json:"declare,omitempty"`
}

// MQQueues is the naming of every bank's core queues: Prefix, in which
// {bank} stands for the bank code, followed by each queue's name.
type MQQueues struct {
	Prefix  string `json:"prefix,omitempty"`
	Request string `json:"request,omitempty"`
	Reply   string `json:"reply,omitempty"`
	Backout string `json:"backout,omitempty"`
}

// kind is the configured kind, embedded when there is no mq block.
func (c *MQConfig) kind() string {
	if c == nil || c.Kind == "" {
		return MQEmbedded
	}
	return c.Kind
}

// Naming is the core queue naming the block configures.
func (c *MQConfig) Naming() coremsg.QueueNaming {
	if c == nil || c.Queues == nil {
		return coremsg.QueueNaming{}
	}
	q := c.Queues
	return coremsg.QueueNaming{Prefix: q.Prefix, Request: q.Request, Reply: q.Reply, Backout: q.Backout}
}

// external reports whether the bank's core runs outside the node.
func (b BankConfig) external() bool { return b.Core == CoreExternal }

// validateMQ checks the mq block and the banks' core placement.
func (c Config) validateMQ(bad func(path, problem string, args ...any) error) error {
	if m := c.MQ; m != nil {
		switch m.Kind {
		case "":
			return bad("mq.kind", "missing: one of embedded, rabbitmq, amqp1")
		case MQEmbedded:
			if m.URL != "" {
				return bad("mq.url", "the embedded queue is the file DATA/mq.db; url is for kind rabbitmq or amqp1")
			}
		case MQRabbitMQ, MQAMQP1:
			if m.URL == "" {
				return bad("mq.url", "missing: kind %s needs the broker's amqp:// or amqps:// URL", m.Kind)
			}
			if u, err := url.Parse(m.URL); err != nil || (u.Scheme != "amqp" && u.Scheme != "amqps") || u.Host == "" {
				return bad("mq.url", "want amqp://user:password@host:port/ or amqps://…")
			}
		default:
			return bad("mq.kind", "%q: want embedded, rabbitmq or amqp1", m.Kind)
		}
		if m.Kind != MQAMQP1 && m.AddressPrefix != nil {
			return bad("mq.address_prefix", "only for kind amqp1")
		}
		switch {
		case m.Declare != "" && m.Kind != MQAMQP1:
			return bad("mq.declare", "only for kind amqp1")
		case m.Declare != "" && m.Declare != "none" && m.Declare != "rabbitmq":
			return bad("mq.declare", "%q: want none or rabbitmq", m.Declare)
		}
		if q := m.Queues; q != nil && q.Prefix != "" && !strings.Contains(q.Prefix, coremsg.BankPlaceholder) {
			return bad("mq.queues.prefix", "%q must contain %s: every bank needs its own queues", q.Prefix, coremsg.BankPlaceholder)
		}
	}
	for i, b := range c.Banks {
		p := fmt.Sprintf("banks[%d].core", i)
		switch b.Core {
		case "", CoreSimulated:
		case CoreExternal:
			if c.MQ.kind() == MQEmbedded {
				return bad(p, "an external core reaches the node through a broker: set mq.kind to rabbitmq or amqp1")
			}
		default:
			return bad(p, "%q: want simulated or external", b.Core)
		}
		qs := c.MQ.Naming().For(b.BankID)
		for _, q := range []struct{ field, name string }{{"request", qs.Request}, {"reply", qs.Reply}, {"backout", qs.Backout}} {
			if err := checkQueueName(q.name); err != nil {
				return bad("mq.queues."+q.field, "bank %s: %v", b.BankID, err)
			}
		}
		if qs.Request == qs.Reply || qs.Request == qs.Backout || qs.Reply == qs.Backout {
			return bad("mq.queues", "bank %s: request, reply and backout queues must differ, got %+v", b.BankID, qs)
		}
	}
	return nil
}

// checkQueueName keeps queue names to what every supported queue manager
// accepts: IBM MQ's 48 characters of A-Z a-z 0-9 . _ / %.
func checkQueueName(name string) error {
	if len(name) == 0 || len(name) > 48 {
		return fmt.Errorf("queue name %q: length must be 1..48 (IBM MQ's limit)", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '/' || c == '%') {
			return fmt.Errorf("queue name %q: byte %d (%q) is not one of A-Z a-z 0-9 . _ / %%", name, i, c)
		}
	}
	return nil
}

// OpenTransport returns the queue manager the mq block names (nil: the
// embedded queue store stores locates, store.MQDB); app names the
// connections. It is
// the one place a transport is chosen: `zcgw serve`, `zcgw coresim`,
// `zcgw demo` and `zcgw bench` all come here. The
// embedded queue manager's connection leases and heartbeats measure real
// elapsed time (its tickers are real), so it runs on the system clock even
// when the node's business clock is a manual one.
func OpenTransport(m *MQConfig, stores store.Locator, app string, log *slog.Logger) (mq.Transport, error) {
	switch m.kind() {
	case MQRabbitMQ:
		return rabbit.New(m.URL, rabbit.Options{Logger: log, App: app, PollInterval: 5 * time.Millisecond}), nil
	case MQAMQP1:
		o := amqp1.Options{Logger: log, App: app, AddressPrefix: m.AddressPrefix, PollInterval: 5 * time.Millisecond}
		if m.Declare == "rabbitmq" {
			o.Admin = rabbit.New(m.URL, rabbit.Options{Logger: log, App: app})
		}
		return amqp1.New(m.URL, o), nil
	case MQEmbedded:
		// A commit in this process wakes this process's waiting getters at
		// once; the poll only finds what another process committed. On
		// SQLite the queue file is this node's alone (node.lock; a core
		// process is refused on a served folder), so the poll is a safety
		// net and polling every 5 ms was half of an idle node's CPU. On
		// PostgreSQL other nodes put on the same queues: poll briskly.
		poll := embeddedSafetyPoll
		if stores.Postgres() {
			poll = 5 * time.Millisecond
		}
		return embedded.New(stores.Location(store.MQDB), embedded.Options{Clock: clock.System{}, Logger: log,
			PollInterval: poll, App: app}), nil
	}
	return nil, fmt.Errorf("node: mq.kind %q is not supported", m.Kind)
}

// embeddedSafetyPoll is how often a waiting get on a SQLite queue file
// looks without being woken (see OpenTransport).
const embeddedSafetyPoll = 250 * time.Millisecond

// standbyRetry is how often a standby core tries to claim its request
// queue (PostgreSQL store): with a dead holder on this host the claim
// succeeds at the first try after its death.
const standbyRetry = 500 * time.Millisecond

// startCore runs a bank's simulated core in process, serving its request
// queue, unless node.json says the core is external.
func (n *Node) startCore(ctx context.Context, b *Bank, bc BankConfig, opts Options, cores *loops, c *closers) error {
	if bc.external() {
		n.log.Info("node.core_external", "bank_id", bc.BankID, "queue", n.Config.MQ.Naming().For(bc.BankID).Request)
		return nil
	}
	var err error
	if b.Core, err = coresim.Open(ctx, coresim.Config{Bank: bc.BankID, DBPath: n.Stores.Location(store.CoreDB(bc.BankID)), Clock: opts.Clock, Logger: opts.Logger}); err != nil {
		return err
	}
	c.add(b.Core.Close)
	conn, err := n.Transport.Connect(ctx)
	if err != nil {
		return err
	}
	// The core's one consumer: a second one (another process on this queue
	// file) refuses the start, naming the holder. A holder that is an
	// earlier start of this node, killed, is taken over at once once its
	// process is gone; the short retry covers a process still exiting.
	qs := n.Config.MQ.Naming().For(bc.BankID)
	serve := coresim.ServeConfig{RequestQueue: qs.Request, BackoutQueue: qs.Backout} // woken by the link's commits
	if n.Stores.Postgres() {
		// Several nodes on one shared database run this core in process:
		// one consumes its request queue, the others wait as standbys and
		// take over when it stops or dies (docs/storage.md "Several nodes").
		cores.run(func(ctx context.Context) {
			if err := b.Core.ServeAsStandby(ctx, conn, serve, standbyRetry); err != nil && ctx.Err() == nil {
				n.log.Error("node.core_stopped", "bank_id", bc.BankID, "error", err)
			}
			conn.Close()
		})
		return nil
	}
	for wait := time.Now().Add(2 * time.Second); ; {
		if serve.Claim, err = b.Core.Claim(ctx, conn, serve); err == nil {
			break
		}
		if !errors.Is(err, mq.ErrInUse) || time.Now().After(wait) {
			conn.Close()
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	cores.run(func(ctx context.Context) {
		if err := b.Core.Serve(ctx, conn, serve); err != nil && ctx.Err() == nil {
			n.log.Error("node.core_stopped", "bank_id", bc.BankID, "error", err)
		}
		conn.Close()
	})
	return nil
}

// linkConfig is the corelink configuration of a bank: its queues under the
// configured naming, and the online window of its simulated core (an
// external core keeps its own: a request it does not take in time expires
// and the posting goes in doubt, settled by inquiry).
func (n *Node) linkConfig(b *Bank, opts Options) corelink.Config {
	qs := n.Config.MQ.Naming().For(b.ID)
	cfg := corelink.Config{Bank: b.ID, Transport: n.Transport, Timeout: linkTimeout,
		RequestQueue: qs.Request, ReplyQueue: qs.Reply, BackoutQueue: qs.Backout,
		Clock: opts.Clock, Logger: opts.Logger}
	if b.Core != nil {
		cfg.Online = b.Core.Online
	}
	return cfg
}

// DeleteCoreQueues deletes the core queues of the given banks on the mq
// block's broker (a run's own queues: `zcgw demo`, `zcgw bench`).
func DeleteCoreQueues(ctx context.Context, m *MQConfig, bankIDs []string, log *slog.Logger) error {
	tr, err := OpenTransport(m, store.Locator{}, "zcgw cleanup", log)
	if err != nil {
		return err
	}
	conn, err := tr.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var errs []error
	for _, id := range bankIDs {
		q := m.Naming().For(id)
		for _, name := range []string{q.Request, q.Reply, q.Backout} {
			if err := conn.DeleteQueue(ctx, name); err != nil && !errors.Is(err, mq.ErrUnknownQueue) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
