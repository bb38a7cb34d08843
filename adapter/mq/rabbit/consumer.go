package rabbit

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/zcgw/zcgw/adapter/mq"
)

// A consumer claim on RabbitMQ is an exclusive lock queue: only the
// connection that declared it may declare it again, the broker refuses any
// other with 405 RESOURCE_LOCKED, and deletes it when that connection
// closes or dies (heartbeat timeout). Because AMQP cannot say who owns an
// exclusive queue, the holder also leaves its name in a companion queue
// holding one message (x-max-length 1), which a refused claimant reads and
// puts back.
func lockQueue(queue string) string   { return "zcgw.consumer-lock." + queue }
func holderQueue(queue string) string { return "zcgw.consumer-holder." + queue }

type consumerClaim struct {
	c      *conn
	queue  string
	holder mq.Holder
}

func (k *consumerClaim) Queue() string     { return k.queue }
func (k *consumerClaim) Holder() mq.Holder { return k.holder }

// Release deletes the holder's name, then the lock queue (in that order, so
// the name a next holder leaves is never deleted), ending the claim.
func (k *consumerClaim) Release(ctx context.Context) error {
	k.c.mu.Lock()
	held := k.c.claims[k.queue]
	delete(k.c.claims, k.queue)
	k.c.mu.Unlock()
	if !held {
		return nil
	}
	err := k.c.withChannel("release consumer", k.queue, func(ch *amqp.Channel) error {
		if _, err := ch.QueueDelete(holderQueue(k.queue), false, false, false); err != nil {
			return err
		}
		_, err := ch.QueueDelete(lockQueue(k.queue), false, false, false)
		return err
	})
	if err == nil {
		k.c.log.Info("mq.consumer_released", "queue", k.queue)
	}
	return err
}

// ClaimConsumer declares the queue's exclusive lock queue. See lockQueue.
func (c *conn) ClaimConsumer(ctx context.Context, queue string) (mq.ConsumerClaim, error) {
	const op = "claim consumer"
	if err := c.exists(op, queue); err != nil {
		return nil, err
	}
	me := mq.LocalHolder(c.id, c.t.opts.App, c.t.opts.Clock.Now())
	c.mu.Lock()
	if c.claims[queue] {
		c.mu.Unlock()
		return nil, &mq.Error{Reason: mq.ReasonObjectInUse, Op: op, Queue: queue, Cause: &mq.InUseError{Queue: queue, Holder: me}}
	}
	c.claims[queue] = true
	c.mu.Unlock()
	unclaim := func() {
		c.mu.Lock()
		delete(c.claims, queue)
		c.mu.Unlock()
	}
	if err := c.usable(op, queue); err != nil {
		unclaim()
		return nil, err
	}
	ch, err := c.ac.Channel()
	if err != nil {
		unclaim()
		return nil, c.mapErr(op, queue, err)
	}
	_, err = ch.QueueDeclare(lockQueue(queue), false, false, true, false, amqp.Table{"x-queue-type": "classic"})
	if err != nil {
		unclaim()
		var ae *amqp.Error
		if errors.As(err, &ae) && ae.Code == amqp.ResourceLocked {
			return nil, &mq.Error{Reason: mq.ReasonObjectInUse, Op: op, Queue: queue, Cause: c.readHolder(ctx, queue)}
		}
		return nil, c.mapErr(op, queue, err)
	}
	defer ch.Close()
	// Leave this holder's name for refused claimants (best effort: the
	// claim itself is the lock queue).
	body, _ := json.Marshal(me)
	if _, err := ch.QueueDeclare(holderQueue(queue), false, false, false, false,
		amqp.Table{"x-queue-type": "classic", "x-max-length": int64(1)}); err == nil {
		if err := ch.PublishWithContext(ctx, "", holderQueue(queue), false, false, amqp.Publishing{Body: body}); err != nil {
			c.log.Warn("mq.consumer_holder_unrecorded", "queue", queue, "error", err.Error())
		}
	}
	c.log.Info("mq.consumer_claimed", "queue", queue)
	return &consumerClaim{c: c, queue: queue, holder: me}, nil
}

// readHolder reads the holder's name from the companion queue and puts it
// back. A holder leaves its name just after winning the lock, so a
// claimant refused in between waits for it a little (up to holderWait).
func (c *conn) readHolder(ctx context.Context, queue string) *mq.InUseError {
	out := &mq.InUseError{Queue: queue, Unknown: true}
	deadline := time.Now().Add(holderWait)
	for {
		_ = c.withChannel("claim consumer", queue, func(ch *amqp.Channel) error {
			d, ok, err := ch.Get(holderQueue(queue), false)
			if err != nil || !ok {
				return err
			}
			defer ch.Nack(d.DeliveryTag, false, true)
			var h mq.Holder
			if json.Unmarshal(d.Body, &h) == nil && h.Conn != "" {
				out.Holder, out.Unknown = h, false
			}
			return nil
		})
		if !out.Unknown || time.Now().After(deadline) || ctx.Err() != nil {
			return out
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// holderWait bounds how long a refused claimant waits for the holder's name.
const holderWait = 2 * time.Second
